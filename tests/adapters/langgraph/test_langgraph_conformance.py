"""The shared adapter conformance suite, run against the LangGraph adapter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("langgraph")

from hbeval_core.live.monitor import Monitor
from tests.adapters.langgraph.test_langgraph_fixtures import (
    custom_node_agent,
    inputs,
    pausing_agent,
    scripted_agent,
    subgraph_agent,
)
from tests.conformance import AdapterConformance, CaptureBoom


class TestLangGraphConformance(AdapterConformance):
    def make_adapter(
        self, *, strict: bool = False, monitor_factory: Callable[[], Monitor] | None = None
    ) -> Any:
        from hbeval_langgraph import LangGraphAdapter

        return LangGraphAdapter(strict=strict, monitor_factory=monitor_factory)

    RAW_TYPE = "dict"

    def legacy_final_text(self, final_state: Any) -> str:
        return final_state["messages"][-1].content

    def make_target(self) -> Any:
        return scripted_agent()

    def make_custom_target(self) -> Any:
        return custom_node_agent()

    def make_shape_targets(self) -> dict[str, tuple[Any, tuple[Any, ...]]]:
        return {
            "subgraph": (subgraph_agent(), ()),
            "interrupt": (pausing_agent(), ("approve", "approve")),
        }

    def real_tool_calls(self, target: Any) -> list[str]:
        return list(target.hbeval_calls)

    def invoke_native(self, target: Any, question: str) -> Any:
        return target.invoke(inputs(question))

    @contextmanager
    def broken_capture(self) -> Iterator[None]:
        from hbeval_langgraph import _convert

        def boom(*args: Any, **kwargs: Any) -> Any:
            raise CaptureBoom("capture failed")

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_convert, "chat_messages", boom)
            mp.setattr(_convert, "tool_args", boom)
            yield

    def patched_attributes(self, target: Any) -> dict[str, Callable[[], Any]]:
        from langchain_core.tracers import context as lc_context

        from hbeval_langgraph import find_tool_nodes
        from hbeval_langgraph._hook import HANDLER_VAR

        getters: dict[str, Callable[[], Any]] = {
            "langchain configure hooks list": lambda: lc_context._configure_hooks,
            "handler context variable": HANDLER_VAR.get,
        }
        for i, node in enumerate(find_tool_nodes(target)):
            getters[f"ToolNode[{i}]._wrap_tool_call"] = lambda n=node: n._wrap_tool_call
            getters[f"ToolNode[{i}]._awrap_tool_call"] = lambda n=node: n._awrap_tool_call
        for name, node in target.nodes.items():
            getters[f"nodes[{name}].bound"] = lambda n=node: n.bound
            getters[f"nodes[{name}].bound.invoke override"] = lambda n=node: vars(n.bound).get(
                "invoke"
            )
        return getters
