"""The shared adapter conformance suite, run against the CrewAI adapter on both tool paths."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import pytest

from hbeval_core.live.monitor import Monitor
from tests.adapters.crewai.test_crewai_fixtures import (
    _DECORATED_RUNS,
    decorated_ran_tools,
    decorated_tools_crew,
    hierarchical_crew,
    ran_tools,
    scripted_crew,
    shape_ran_tools,
    standard_flow,
)
from tests.conformance import AdapterConformance, CaptureBoom


class _CrewAIConformance(AdapterConformance):
    NATIVE: ClassVar[bool] = False
    # CrewAI turns any exception a tool raises into text the model reads: a crash never ends a run.
    CRASH_ABORTS_RUN: ClassVar[bool] = False

    def make_adapter(
        self, *, strict: bool = False, monitor_factory: Callable[[], Monitor] | None = None
    ) -> Any:
        from hbeval_crewai import CrewAIAdapter

        return CrewAIAdapter(strict=strict, monitor_factory=monitor_factory)

    RAW_TYPE = "CrewOutput"

    def legacy_final_text(self, final_state: Any) -> str:
        return final_state.raw

    def make_target(self) -> Any:
        return scripted_crew(native=self.NATIVE)

    def make_custom_target(self) -> Any:
        return decorated_tools_crew(native=self.NATIVE)

    def make_shape_targets(self) -> dict[str, tuple[Any, tuple[Any, ...]]]:
        return {
            "flow": (standard_flow(native=self.NATIVE), ()),
            "hierarchical": (hierarchical_crew(native=self.NATIVE), ()),
        }

    def real_tool_calls(self, target: Any) -> list[str]:
        shape = shape_ran_tools(target)
        if shape is not None:
            return shape
        if id(target) in _DECORATED_RUNS:
            return decorated_ran_tools(target)
        return ran_tools(target)

    def invoke_native(self, target: Any, question: str) -> Any:
        return target.kickoff(inputs={"question": question})

    @contextmanager
    def broken_capture(self) -> Iterator[None]:
        from hbeval_crewai import _convert

        def boom(*args: Any, **kwargs: Any) -> Any:
            raise CaptureBoom("capture failed")

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_convert, "chat_messages", boom)
            mp.setattr(_convert, "tool_args", boom)
            yield

    def patched_attributes(self, target: Any) -> dict[str, Callable[[], Any]]:
        from crewai.hooks.dispatch import InterceptionPoint, _scoped_hooks_var, get_global_hook_list

        getters: dict[str, Callable[[], Any]] = {"scoped hooks registry": _scoped_hooks_var.get}
        for point in InterceptionPoint:
            getters[f"global hooks[{point.value}]"] = lambda p=point: get_global_hook_list(p)
        for i, agent in enumerate(target.agents):
            getters[f"agents[{i}].llm"] = lambda a=agent: a.llm
            for j in range(len(agent.tools)):
                getters[f"agents[{i}].tools[{j}]"] = lambda a=agent, k=j: a.tools[k]
        return getters


class TestCrewAIConformanceReAct(_CrewAIConformance):
    NATIVE = False


class TestCrewAIConformanceNative(_CrewAIConformance):
    NATIVE = True
