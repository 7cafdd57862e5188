"""An AutoGen tool run from an agent's own loop that hangs still shows as started.

The agent is written by hand (a ``BaseChatAgent`` whose loop calls ``tool.run_json``, no
workbench), so its tool calls meet the battery's injector through the ``BaseTool.run_json``
hook. Its ``lookup`` hangs past the runner's 0.5 s timeout: the cut trace holds the call's
``tool_start`` and no end. A call that returns keeps its events, its start stamped before the
tool's body ran.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_core.tools import FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient

from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore
from hbeval_autogen import FUNCTION_CALLING_MODEL_INFO
from hbeval_core.contract import Task
from hbeval_core.faults.userbattery import parse_battery
from tests.adapters.autogen.test_autogen_fixtures import calls

SEED = 42
TASK = Task(id="order", question="where is order A1", required=("done",))
SCRIPT = [calls(("lookup", {"query": "order A1"}, "call_lookup_1")), "done"]


class Desk:
    """The lookup tool's body: hangs until released when told to, and notes when it ran."""

    def __init__(self, hang: bool) -> None:
        self.hang = hang
        self.release = threading.Event()
        self.ran: list[tuple[float, float]] = []

    def lookup(self, query: str) -> str:
        """Look something up."""
        entered = time.time()
        if self.hang:
            self.release.wait(20)
        time.sleep(0.02)
        self.ran.append((entered, time.time()))
        return json.dumps({"query": query, "status": "shipped"})


def factory_for(desk: Desk) -> Any:
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        UserMessage,
    )

    class DeskAgent(BaseChatAgent):
        def __init__(self) -> None:
            super().__init__("desk", "Runs its lookup from its own loop.")
            self._model = ReplayChatCompletionClient(
                list(SCRIPT), model_info=FUNCTION_CALLING_MODEL_INFO
            )
            self._tool = FunctionTool(desk.lookup, description="Look something up.")

        @property
        def produced_message_types(self) -> Sequence[type[Any]]:
            return (TextMessage,)

        async def on_messages(self, messages: Sequence[Any], cancellation_token: Any) -> Response:
            history: list[Any] = [
                UserMessage(content=str(getattr(m, "content", "")), source="user") for m in messages
            ]
            for _ in range(4):
                result = await self._model.create(history, tools=[self._tool])
                if isinstance(result.content, str):
                    break
                history.append(AssistantMessage(content=result.content, source="desk"))
                outs = []
                for call in result.content:
                    value = await self._tool.run_json(
                        json.loads(call.arguments), cancellation_token, call_id=call.id
                    )
                    text = self._tool.return_value_as_string(value)
                    outs.append(FunctionExecutionResult(content=text, call_id=call.id, name=call.name))  # fmt: skip
                history.append(FunctionExecutionResultMessage(content=outs))
            text = result.content if isinstance(result.content, str) else ""
            return Response(chat_message=TextMessage(content=text, source="desk"))

        async def on_reset(self, cancellation_token: Any) -> None:
            return None

    return DeskAgent


@pytest.fixture
def desks() -> Iterator[list[Desk]]:
    made: list[Desk] = []
    yield made
    for desk in made:
        desk.release.set()


def run(desk: Desk, scenario: dict[str, Any]) -> tuple[str, list[Any]]:
    store = InMemoryStore()
    agent_class = factory_for(desk)
    battery = parse_battery(
        {"format": "hbeval-battery-file/1", "name": "desk", "scenarios": [scenario]}, seed=SEED
    )
    report = run_battery(
        "autogen", agent_class, [TASK], battery, trials=1, seed=SEED, store=store,
        run_id="desk", timeout=0.5, max_infra_retries=0, target_kind="factory",
    ).to_dict()  # fmt: skip
    attempt = store.list_attempts("desk")[0]
    return report["trials"][0]["outcome"], list(store.iter_events("desk", attempt.trial_key, attempt=0))  # fmt: skip


# Faults a tool the agent never calls: the lookup meets the injector and passes untouched.
ELSEWHERE = {"name": "elsewhere", "mode": "error_5xx", "tools": ["audit"]}


def test_a_lookup_hanging_past_the_timeout_shows_as_started(desks: list[Desk]) -> None:
    desk = Desk(hang=True)
    desks.append(desk)
    outcome, events = run(desk, ELSEWHERE)
    assert outcome == "timeout"
    starts = [e for e in events if e.kind == "tool_start"]
    assert [(e.tool, e.call_id, e.args) for e in starts] == [  # type: ignore[attr-defined]
        ("lookup", "call_lookup_1", {"query": "order A1"})
    ]
    assert not any(e.kind in ("tool_end", "tool_error", "fault_injected") for e in events)
    assert events[-1].kind == "run_end" and events[-1].status == "timeout"  # type: ignore[attr-defined]  # fmt: skip
    assert desk.ran == []


def test_a_lookup_that_returns_keeps_its_events(desks: list[Desk]) -> None:
    desk = Desk(hang=False)
    desks.append(desk)
    garbled = {"name": "garbled", "mode": "malformed", "tools": ["lookup"]}
    outcome, events = run(desk, garbled)
    assert outcome != "timeout"
    tool_events = [e for e in events if e.kind in ("tool_start", "fault_injected", "tool_end")]
    assert [(e.kind, e.call_id, e.tool) for e in tool_events] == [  # type: ignore[attr-defined]
        ("tool_start", "call_lookup_1", "lookup"),
        ("fault_injected", "call_lookup_1", "lookup"),
        ("tool_end", "call_lookup_1", "lookup"),
    ]
    start, fault, end = tool_events
    assert start.args == {"query": "order A1"}  # type: ignore[attr-defined]
    assert fault.mode == "malformed"  # type: ignore[attr-defined]
    assert end.status == "ok"  # type: ignore[attr-defined]
    assert end.result == '{"unexpected_field": true, "reason": "schema_mismatch"}'  # type: ignore[attr-defined]  # fmt: skip
    assert [e.seq for e in events] == list(range(len(events)))
    [(entered, left)] = desk.ran
    assert start.ts <= entered and end.ts >= left
