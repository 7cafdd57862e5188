"""The shared adapter conformance suite, run against plain Python agents.

The standard agent declares its tools with ``@tool``; the hand-built one wraps ordinary
functions with ``faultable`` by hand, as a user does for tools no framework sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from hbeval_core.faults import ToolCallError, faultable
from hbeval_core.live.monitor import Monitor
from hbeval_plain import PlainAdapter, think, tool
from tests.conformance import AdapterConformance, CaptureBoom


def _agent(lookup: Callable[..., Any], add: Callable[..., Any]) -> Callable[[str], str]:
    def agent(question: str) -> str:
        think("I'll look up order A1 first.", [("lookup", {"query": "order A1"})])
        try:
            lookup(query="order A1")
        except ToolCallError:
            pass  # the next turn reads the error
        think("Now I'll add 2 and 3.", [("add", {"a": 2, "b": 3})])
        try:
            add(a=2, b=3)
        except ToolCallError:
            pass
        think("done")
        return "done"

    return agent


def standard_agent() -> Any:
    calls: list[str] = []

    @tool
    def lookup(query: str) -> str:
        calls.append("lookup")
        return f"found: {query} is shipped"

    @tool
    def add(a: int, b: int) -> int:
        calls.append("add")
        return a + b

    agent = _agent(lookup, add)
    agent.hbeval_calls = calls  # type: ignore[attr-defined]
    return agent


def hand_wrapped_agent() -> Any:
    calls: list[str] = []

    def raw_lookup(query: str) -> str:
        calls.append("lookup")
        return f"found: {query} is shipped"

    def raw_add(a: int, b: int) -> int:
        calls.append("add")
        return a + b

    agent = _agent(faultable(raw_lookup, name="lookup"), faultable(raw_add, name="add"))
    agent.hbeval_calls = calls  # type: ignore[attr-defined]
    return agent


class TestPlainConformance(AdapterConformance):
    def make_adapter(
        self, *, strict: bool = False, monitor_factory: Callable[[], Monitor] | None = None
    ) -> Any:
        if strict or monitor_factory is not None:
            raise NotImplementedError("the plain adapter has no strict mode or live monitor")
        return PlainAdapter()

    RAW_TYPE = "str"

    def legacy_final_text(self, final_state: Any) -> str:
        return final_state

    def make_target(self) -> Any:
        return standard_agent()

    def make_custom_target(self) -> Any:
        return hand_wrapped_agent()

    def real_tool_calls(self, target: Any) -> list[str]:
        return list(target.hbeval_calls)

    def invoke_native(self, target: Any, question: str) -> Any:
        return target(question)

    @contextmanager
    def broken_capture(self) -> Iterator[None]:
        from hbeval_plain import _scope as plain

        def boom(*args: Any, **kwargs: Any) -> Any:
            raise CaptureBoom("capture failed")

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(plain, "ToolStart", boom)
            mp.setattr(plain, "ModelEnd", boom)
            yield

    def patched_attributes(self, target: Any) -> dict[str, Callable[[], Any]]:
        return {}
