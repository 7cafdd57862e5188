"""Capture: AutoGen runs become hb-events/1 events, with no change to the user's agent."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.tools import StaticStreamWorkbench

from hbeval_autogen import (
    AutoGenAdapter,
    HBEvalModelClient,
    HBEvalStreamWorkbench,
    capture,
    instrument,
    is_instrumented,
    uninstrument,
)
from hbeval_core.contract import Task
from hbeval_core.events import (
    ModelEnd,
    ModelStart,
    SpanEnd,
    SpanStart,
    ToolEnd,
    ToolStart,
    dump_event,
    parse_event,
)
from hbeval_core.live.derive import derive_steps
from tests.adapters.autogen.test_autogen_fixtures import (
    calls,
    hang_guard,
    replay_agent,
    run_async,
    scripted_agent,
)

__all__ = ["hang_guard"]

pytestmark = pytest.mark.usefixtures("hang_guard")


def kinds(events: list[Any]) -> list[str]:
    return [e.kind for e in events]


def test_capture_records_model_and_tool_calls_of_a_plain_agent_run() -> None:
    agent = replay_agent()
    with capture("r1") as rec:
        run_async(agent.run(task="Look up order A1, then add 2 and 3."))
    assert kinds(rec.events) == [
        "run_start",
        "span_start",
        "model_start",
        "model_end",
        "tool_start",
        "tool_end",
        "model_start",
        "model_end",
        "tool_start",
        "tool_end",
        "model_start",
        "model_end",
        "span_end",
        "run_end",
    ]
    assert {e.run_id for e in rec.events} == {"r1"}
    for event in rec.events:
        assert parse_event(dump_event(event)).kind == event.kind
    assert rec.errors == []


def test_model_end_carries_thought_as_reasoning_and_the_issued_calls() -> None:
    agent = replay_agent()
    with capture("r1") as rec:
        run_async(agent.run(task="go"))
    first, _, last = [e for e in rec.events if isinstance(e, ModelEnd)]
    assert first.reasoning == "I'll look up order A1 first."
    assert first.text == first.reasoning  # AutoGen keeps words beside tool calls in thought
    assert [(c.id, c.name, c.args) for c in first.tool_calls] == [
        ("call_lookup_1", "lookup", {"query": "order A1"})
    ]
    assert last.text == "done" and last.tool_calls == [] and last.reasoning is None
    assert first.attrs["finish_reason"] == "function_calls"


def test_model_input_contains_the_function_execution_result_the_model_reads() -> None:
    agent = replay_agent()
    with capture("r1") as rec:
        run_async(agent.run(task="go"))
    second = [e for e in rec.events if isinstance(e, ModelStart)][1]
    tool_msgs = [m for m in second.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_msgs] == ["call_lookup_1"]
    result = next(e for e in rec.events if isinstance(e, ToolEnd))
    assert tool_msgs[0].content == result.result
    assert json.loads(tool_msgs[0].content)["order_id"] == "A1"
    assert [m.role for m in second.messages][:2] == ["system", "user"]


def test_events_nest_under_the_agent_span() -> None:
    agent = replay_agent(name="support")
    with capture("r1") as rec:
        run_async(agent.run(task="go"))
    span = next(e for e in rec.events if isinstance(e, SpanStart))
    assert span.scope == "agent" and span.name == "support"
    inner = [e for e in rec.events if isinstance(e, (ModelStart, ModelEnd, ToolStart, ToolEnd))]
    assert inner and all(e.parent_id == span.span_id for e in inner)
    assert all(e.attrs["agent"] == "support" for e in inner)


def test_steps_are_traceable_when_the_model_explains_in_thought() -> None:
    agent = replay_agent()
    with capture("r1") as rec:
        run_async(agent.run(task="go"))
    steps = list(derive_steps(rec.events))
    assert [s.tool for s in steps] == ["lookup", "add"]
    assert all(s.traceable and s.success for s in steps)


def test_silent_model_gives_traceable_but_unexplained_steps() -> None:
    script = [calls(("lookup", {"query": "q"}, "c1")), "ok"]
    agent = replay_agent(script)
    with capture("r1") as rec:
        run_async(agent.run(task="go"))
    (step,) = derive_steps(rec.events)
    # hb-derive/2: linked by id to the reply that issued it, though that reply said nothing.
    assert step.traceable and step.link == "id" and step.explained is False


def test_run_stream_is_captured_and_streams_unchanged() -> None:
    agent = replay_agent()

    async def consume() -> list[str]:
        return [type(m).__name__ async for m in agent.run_stream(task="go")]

    native = run_async(consume())
    agent2 = replay_agent()

    async def consume2() -> list[str]:
        return [type(m).__name__ async for m in agent2.run_stream(task="go")]

    with capture("r1") as rec:
        captured = run_async(consume2())
    assert captured == native
    assert len([e for e in rec.events if isinstance(e, ToolEnd)]) == 2


def test_streaming_model_client_is_captured() -> None:
    agent = scripted_agent(model_client_stream=True)
    with capture("r1") as rec:
        result = run_async(agent.run(task="go"))
    assert "done" in result.messages[-1].to_text()
    ends = [e for e in rec.events if isinstance(e, ModelEnd)]
    assert len(ends) == 2 and ends[-1].text and ends[-1].text.startswith("done")


def test_team_run_has_a_team_span_and_agent_spans() -> None:
    def team() -> RoundRobinGroupChat:
        return RoundRobinGroupChat(
            [scripted_agent(name="first"), scripted_agent(name="second")],
            termination_condition=MaxMessageTermination(3),
        )

    task = Task(id="team", question="Look up order A1.")
    result = AutoGenAdapter().run_trial(team, task, None, None)
    assert result.status == "ok", result.error
    spans = [e for e in result.events if isinstance(e, SpanStart)]
    assert [(s.scope, s.name) for s in spans] == [
        ("team", "RoundRobinGroupChat"),
        ("agent", "first"),
        ("agent", "second"),
    ]
    assert spans[1].parent_id == spans[0].span_id and spans[2].parent_id == spans[0].span_id
    assert len([e for e in result.events if isinstance(e, ToolStart)]) == 2
    assert [e.scope for e in result.events if isinstance(e, SpanEnd)] == ["agent", "agent", "team"]
    assert result.response_text and result.response_text.startswith("done")


def test_a_shared_team_runs_on_its_home_loop_trial_after_trial() -> None:
    shared = RoundRobinGroupChat(
        [scripted_agent(name="only")], termination_condition=MaxMessageTermination(2)
    )
    adapter = AutoGenAdapter()
    task = Task(id="t", question="Look up order A1.")
    try:
        for _ in range(2):
            result = adapter.run_trial(shared, task, None, None)
            assert result.status == "ok", result.error
            assert result.metadata["event_loop"] == "home"
            # Reset between trials: each trial sees only its own task.
            first = next(e for e in result.events if isinstance(e, ModelStart))
            assert [m.role for m in first.messages].count("user") == 1
    finally:
        adapter.close()


def test_a_shared_agent_is_reset_between_trials() -> None:
    shared = scripted_agent()
    adapter = AutoGenAdapter()
    task = Task(id="t", question="Look up order A1.")
    try:
        for _ in range(2):
            result = adapter.run_trial(shared, task, None, None)
            assert result.status == "ok", result.error
            first = next(e for e in result.events if isinstance(e, ModelStart))
            assert [m.role for m in first.messages] == ["system", "user"]
    finally:
        adapter.close()


def test_without_a_scope_the_hook_only_delegates() -> None:
    agent = replay_agent()
    instrument()
    try:
        bench, client = agent._workbench, agent._model_client
        seen: list[Any] = []

        async def consume() -> None:
            async for _ in agent.run_stream(task="go"):
                seen.append((agent._workbench is bench, agent._model_client is client))

        run_async(consume())
        assert seen and all(a and b for a, b in seen)
    finally:
        uninstrument()


def test_wrappers_are_swapped_in_only_during_the_turn() -> None:
    agent = replay_agent()
    bench, client = agent._workbench, agent._model_client
    during: list[Any] = []

    async def consume() -> None:
        async for _ in agent.run_stream(task="go"):
            during.append((type(agent._workbench[0]), type(agent._model_client)))

    with capture("r1"):
        run_async(consume())
    assert (HBEvalStreamWorkbench, HBEvalModelClient) in during
    assert agent._workbench is bench and agent._model_client is client
    # The stream wrapper keeps AutoGen on its streaming tool path.
    assert issubclass(HBEvalStreamWorkbench, StaticStreamWorkbench)


def test_instrument_and_uninstrument_are_idempotent_and_exact() -> None:
    original = AssistantAgent.__dict__["on_messages_stream"]
    instrument()
    instrument()
    assert is_instrumented()
    assert AssistantAgent.__dict__["on_messages_stream"] is not original
    uninstrument()
    uninstrument()
    assert not is_instrumented()
    assert AssistantAgent.__dict__["on_messages_stream"] is original


def test_a_trial_does_not_leave_the_class_hooked() -> None:
    original = AssistantAgent.__dict__["on_messages_stream"]
    AutoGenAdapter().run_trial(replay_agent(), Task(id="t", question="go"), None, None)
    assert AssistantAgent.__dict__["on_messages_stream"] is original


def test_capture_errors_are_swallowed_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from hbeval_autogen import _convert

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("convert broke")

    monkeypatch.setattr(_convert, "chat_messages", boom)
    agent = replay_agent()
    with capture("r1") as rec:
        result = run_async(agent.run(task="go"))
    assert result.messages[-1].to_text() == "done"
    assert any("convert broke" in e for e in rec.errors)
    assert len([e for e in rec.events if isinstance(e, ToolEnd)]) == 2


def test_handoff_calls_outside_the_workbench_come_from_the_stream() -> None:
    script = [calls(("transfer_to_billing", {}, "h1"), thought="Billing handles this.")]
    agent = replay_agent(script, handoffs=["billing"])
    with capture("r1") as rec:
        run_async(agent.run(task="refund"))
    starts = [e for e in rec.events if isinstance(e, ToolStart)]
    ends = [e for e in rec.events if isinstance(e, ToolEnd)]
    assert [(s.call_id, s.tool, s.attrs.get("source")) for s in starts] == [
        ("h1", "transfer_to_billing", "run_stream")
    ]
    assert [e.call_id for e in ends] == ["h1"] and ends[0].status == "ok"


def test_usage_is_summed_into_the_trial_result() -> None:
    task = Task(id="t", question="Look up order A1.")
    result = AutoGenAdapter().run_trial(scripted_agent, task, None, None)
    usage = result.metadata["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert result.metadata["event_loop"] == "fresh"


def test_the_adapter_implements_the_core_protocol() -> None:
    from hbeval.runner.registry import detect_adapter, get_adapter
    from hbeval_core.contract import Adapter

    adapter = AutoGenAdapter()
    assert isinstance(adapter, Adapter) and adapter.name == "autogen"
    assert detect_adapter(replay_agent()) == "autogen"
    assert isinstance(get_adapter("autogen"), AutoGenAdapter)
