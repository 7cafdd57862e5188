"""hb-derive/1: events fold into steps exactly as DESIGN.md defines; metrics computed by hand."""

from __future__ import annotations

from typing import Any

import pytest

from hbeval_core import Monitor, derive_steps
from hbeval_core.events import (
    ChatMessage,
    FaultInjected,
    ModelEnd,
    ModelStart,
    Replan,
    RunEnd,
    RunStart,
    Step,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
)

R = "run-1"


def reply(cid: str, text: str | None, calls: list[tuple[str, str, dict[str, Any]]]) -> list[Any]:
    return [
        ModelStart(run_id=R, call_id=cid, messages=[ChatMessage(role="user", content="q")]),
        ModelEnd(
            run_id=R,
            call_id=cid,
            text=text,
            tool_calls=[ToolCall(id=i, name=n, args=a) for i, n, a in calls],
        ),
    ]


def ok(call_id: str, tool: str, args: dict[str, Any], result: Any = "ok") -> list[Any]:
    return [
        ToolStart(run_id=R, call_id=call_id, tool=tool, args=args),
        ToolEnd(run_id=R, call_id=call_id, tool=tool, result=result),
    ]


def careful_trace() -> list[Any]:
    return [
        RunStart(run_id=R),
        *reply("m1", "I will look up the order first.", [("c1", "lookup_order", {"id": 1})]),
        ToolStart(run_id=R, call_id="c1", tool="lookup_order", args={"id": 1}),
        FaultInjected(
            run_id=R,
            call_id="c1",
            tool="lookup_order",
            mode="error_5xx",
            effect="error",
            payload="HTTP 503",
        ),
        ToolError(
            run_id=R, call_id="c1", tool="lookup_order", error="HTTP 503: service unavailable"
        ),
        *reply(
            "m2",
            "The lookup failed; I will search the policy instead.",
            [("c2", "search_policy", {"q": "refund"})],
        ),
        *ok("c2", "search_policy", {"q": "refund"}),
        *reply("m3", "", [("c3", "lookup_order", {"id": 1})]),  # no reason stated
        *ok("c3", "lookup_order", {"id": 1}),
        RunEnd(run_id=R),
    ]


def test_careful_trace_steps_by_hand() -> None:
    steps = list(derive_steps(careful_trace()))
    got = [(s.tool, s.had_fault, s.success, s.traceable, s.replanned) for s in steps]
    assert got == [
        ("lookup_order", True, False, True, False),
        ("search_policy", False, True, True, True),  # failed step, model call, different tool
        ("lookup_order", False, True, False, False),  # the reply stated no reason
    ]
    assert steps[0].action == 'lookup_order({"id":1})'
    assert steps[0].fault_modes == ("error_5xx",)
    assert [s.index for s in steps] == [0, 1, 2]
    assert all(s.recovered_intentionally is None and s.handled_deliberately is None for s in steps)


def test_careful_trace_metrics_by_hand() -> None:
    m = Monitor()
    for ev in careful_trace():
        m.observe(ev)
    # 3 steps; one fault episode (step 1), one transition (step 2 replanned): PEI 1 - 0/3.
    # FRR 0/1. IRS: nothing judged. TI round(5 * 2/3, 2) = 3.33.
    assert m.metrics == {"pei": 1.0, "frr": 0.0, "irs": None, "ti": 3.33, "csi": None}
    assert m.undefined["irs"] == "no_judged_step"


def test_ti_falls_when_calls_carry_no_reason() -> None:
    trace = [RunStart(run_id=R)]
    for i in range(4):
        trace += reply(f"m{i}", None if i % 2 else "", [(f"c{i}", "lookup_order", {"id": i})])
        trace += ok(f"c{i}", "lookup_order", {"id": i})
    m = Monitor()
    for ev in trace:
        m.observe(ev)
    assert m.metrics["ti"] == 0.0
    assert m.breach_count == 4  # TI below 3.00 on every step
    # A reasoning-only reply counts as a stated reason.
    m2 = Monitor()
    m2.observe(
        ModelEnd(
            run_id=R,
            call_id="m",
            reasoning="need the order",
            tool_calls=[ToolCall(id="c", name="t")],
        )
    )
    for ev in ok("c", "t", {}):
        m2.observe(ev)
    assert m2.metrics["ti"] == 5.0


def test_call_without_issuing_reply_is_not_traceable() -> None:
    steps = list(derive_steps(ok("orphan", "t", {})))
    assert steps[0].traceable is False


def test_identical_retry_is_not_a_replan() -> None:
    trace = [
        *reply("m1", "look up", [("c1", "lookup_order", {"id": 1})]),
        ToolStart(run_id=R, call_id="c1", tool="lookup_order", args={"id": 1}),
        ToolError(run_id=R, call_id="c1", tool="lookup_order", error="timeout"),
        *reply("m2", "retry", [("c2", "lookup_order", {"id": 1})]),
        *ok("c2", "lookup_order", {"id": 1}),
    ]
    steps = list(derive_steps(trace))
    assert [s.replanned for s in steps] == [False, False]
    assert steps[0].action == steps[1].action


def test_changed_args_without_model_call_is_not_a_replan() -> None:
    trace = [
        ToolStart(run_id=R, call_id="c1", tool="t", args={"x": 1}),
        ToolError(run_id=R, call_id="c1", tool="t", error="boom"),
        *ok("c2", "t", {"x": 2}),
    ]
    assert [s.replanned for s in derive_steps(trace)] == [False, False]


def test_replan_event_marks_next_step() -> None:
    trace = [
        *ok("c1", "a", {}),
        Replan(run_id=R, reason="new plan"),
        *ok("c2", "b", {}),
        *ok("c3", "c", {}),
    ]
    assert [s.replanned for s in derive_steps(trace)] == [False, True, False]


@pytest.mark.parametrize(
    ("mode", "effect", "success"),
    [
        ("malformed", "result_altered", False),
        ("empty_response", "result_altered", False),
        ("truncated", "result_altered", False),
        ("prompt_injection", "result_augmented", True),
        ("latency", "delayed", True),
    ],
)
def test_faults_on_returned_calls(mode: str, effect: str, success: bool) -> None:
    trace = [
        ToolStart(run_id=R, call_id="c", tool="t"),
        FaultInjected(run_id=R, call_id="c", tool="t", mode=mode, effect=effect),  # type: ignore[arg-type]
        ToolEnd(run_id=R, call_id="c", tool="t", result="x"),
    ]
    (step,) = derive_steps(trace)
    assert step.had_fault is True
    assert step.success is success


def test_error_status_result_is_a_failed_faulted_step() -> None:
    trace = [
        ToolStart(run_id=R, call_id="c", tool="t"),
        ToolEnd(run_id=R, call_id="c", tool="t", result="Error: x", status="error"),
    ]
    (step,) = derive_steps(trace)
    assert (step.had_fault, step.success) == (True, False)


def test_explicit_step_events_verbatim_reproduce_demo() -> None:
    from tests.test_monitor import DEMO

    events = [
        Step(
            run_id=R,
            action=a,
            success=s,
            had_fault=f,
            recovered_intentionally=r,
            traceable=t,
            replanned=rp,
        )
        for a, s, f, r, t, rp in DEMO
    ]
    m = Monitor()
    for ev in events:
        m.observe(ev)
    assert m.metrics == {"pei": 1.0, "frr": 0.25, "irs": 0.25, "ti": 3.5, "csi": None}
    assert m.breach_count == 16


def test_interleaved_runs_keep_separate_state() -> None:
    a = [
        ToolStart(run_id="A", call_id="c", tool="t"),
        ToolStart(run_id="B", call_id="c", tool="u"),
        ModelEnd(run_id="A", call_id="m", text="why", tool_calls=[ToolCall(id="c", name="t")]),
        ToolEnd(run_id="B", call_id="c", tool="u"),
        ToolEnd(run_id="A", call_id="c", tool="t"),
    ]
    steps = list(derive_steps(a))
    assert [(s.run_id, s.traceable) for s in steps] == [("B", False), ("A", True)]
