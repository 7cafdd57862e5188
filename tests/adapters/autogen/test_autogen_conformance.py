"""The shared adapter conformance suite, run against the AutoGen adapter."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_agentchat.agents import AssistantAgent, BaseChatAgent
from autogen_core.tools import BaseTool

from hbeval_core.live.monitor import Monitor
from tests.adapters.autogen.test_autogen_fixtures import (
    hand_loop_agent,
    hang_guard,
    replay_agent,
    run_async,
    standard_team,
)
from tests.conformance import AdapterConformance, CaptureBoom

__all__ = ["TestAutoGenConformance", "hang_guard"]


class TestAutoGenConformance(AdapterConformance):
    @pytest.fixture(autouse=True)
    def _bounded(self, hang_guard: None) -> None:
        """Every test here fails fast instead of hanging."""

    def make_adapter(
        self, *, strict: bool = False, monitor_factory: Callable[[], Monitor] | None = None
    ) -> Any:
        from hbeval_autogen import AutoGenAdapter

        return AutoGenAdapter(strict=strict, monitor_factory=monitor_factory, cancel_grace=2.0)

    RAW_TYPE = "TaskResult"

    def legacy_final_text(self, final_state: Any) -> str:
        return final_state["response"]

    def make_target(self) -> Any:
        return replay_agent()

    def make_custom_target(self) -> Any:
        return hand_loop_agent()

    def make_shape_targets(self) -> dict[str, tuple[Any, tuple[Any, ...]]]:
        return {"team": (standard_team(), ())}

    def real_tool_calls(self, target: Any) -> list[str]:
        return list(target.hbeval_calls)

    def invoke_native(self, target: Any, question: str) -> Any:
        return run_async(target.run(task=question))

    @contextmanager
    def broken_capture(self) -> Iterator[None]:
        from hbeval_autogen._recorder import RunRecorder

        def boom(self: Any, event: Any) -> None:
            raise CaptureBoom("capture failed")

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(RunRecorder, "_store_locked", boom)
            yield

    def patched_attributes(self, target: Any) -> dict[str, Callable[[], Any]]:
        return {
            "AssistantAgent.on_messages_stream": lambda: AssistantAgent.__dict__[
                "on_messages_stream"
            ],
            "agent._workbench": lambda: target._workbench,
            "agent._workbench[0]": lambda: target._workbench[0],
            "agent._model_client": lambda: target._model_client,
            "agent._memory": lambda: target._memory,
            "BaseChatAgent.on_messages_stream": lambda: BaseChatAgent.__dict__[
                "on_messages_stream"
            ],
            "BaseTool.run_json": lambda: BaseTool.__dict__["run_json"],
        }
