"""hb-derive/2: events fold into steps exactly as DESIGN.md defines; metrics computed by hand.

The hb-derive/1 traceability rule stays computable (``version=DERIVE_V1``) and is checked here too.
"""

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
from hbeval_core.live.derive import DERIVE_V1

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
        ("lookup_order", False, True, True, False),  # linked by id, though it states no reason
    ]
    assert [(s.link, s.explained) for s in steps] == [
        ("id", True),
        ("id", True),
        ("id", False),
    ]
    # hb-derive/1: the third step's reply stated no reason, so it was not traceable.
    old = list(derive_steps(careful_trace(), version=DERIVE_V1))
    assert [s.traceable for s in old] == [True, True, False]
    assert steps[0].action == 'lookup_order({"id":1})'
    assert steps[0].fault_modes == ("error_5xx",)
    assert [s.index for s in steps] == [0, 1, 2]
    assert all(s.recovered_intentionally is None and s.handled_deliberately is None for s in steps)


def test_careful_trace_metrics_by_hand() -> None:
    m = Monitor()
    for ev in careful_trace():
        m.observe(ev)
    # 3 steps; one fault episode (step 1), one transition (step 2 replanned): PEI 1 - 0/3.
    # FRR 0/1. IRS: nothing judged. TI 5 * 3/3 = 5.0: every call is linked to its reply
    # (hb-derive/1 gave round(5 * 2/3, 2) = 3.33, the third reply stating no reason).
    assert m.metrics == {"pei": 1.0, "frr": 0.0, "irs": None, "ti": 5.0, "csi": None}
    assert m.undefined["irs"] == "no_judged_step"


def test_calls_without_a_reason_stay_traceable_but_unexplained() -> None:
    trace = [RunStart(run_id=R)]
    for i in range(4):
        trace += reply(f"m{i}", None if i % 2 else "", [(f"c{i}", "lookup_order", {"id": i})])
        trace += ok(f"c{i}", "lookup_order", {"id": i})
    m = Monitor()
    for ev in trace:
        m.observe(ev)
    assert m.metrics["ti"] == 5.0  # every call links to the reply that issued it
    assert m.breach_count == 0
    assert [s.explained for s in derive_steps(trace)] == [False] * 4
    # hb-derive/1 made all four untraceable: TI 0.0.
    assert [s.traceable for s in derive_steps(trace, version=DERIVE_V1)] == [False] * 4
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
    from tests.live.test_monitor import DEMO

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


# ---------------------------------------------------------------------------------------------
# Golden vectors of hb-derive/2 links: by id, by match, none (each expected value worked out by
# hand from the rules in hbeval_core/derive.py, not read off the code).
# ---------------------------------------------------------------------------------------------
def linked_trace() -> list[Any]:
    return [
        RunStart(run_id=R),
        *reply(
            "m1",
            "Checking both orders and the stock.",
            [
                ("c1", "lookup", {"id": 1}),
                ("c2", "lookup", {"id": 2}),
                ("c3", "stock", {"sku": "X"}),
            ],
        ),
        *ok("c2", "lookup", {"id": 2}),  # 1: the model's id -> id
        *ok("run-a", "lookup", {"id": 1}),  # 2: no model id; same name and args as c1 -> match
        *ok("run-b", "stock", {"sku": "Y"}),  # 3: args differ; the only open "stock" -> match
        *reply("m2", "", [("c4", "lookup", {"id": 3}), ("c5", "lookup", {"id": 4})]),
        *ok("run-c", "lookup", {"id": 9}),  # 4: two open "lookup", neither args match -> none
        *ok("run-d", "lookup", {"id": 4}),  # 5: args match c5 -> match (m2 stated no reason)
        *ok("run-e", "refund", {}),  # 6: nothing issued a "refund" -> none
        RunEnd(run_id=R),
    ]


def test_golden_links_by_id_match_and_none() -> None:
    steps = list(derive_steps(linked_trace()))
    assert [s.link for s in steps] == ["id", "match", "match", "none", "match", "none"]
    assert [s.traceable for s in steps] == [True, True, True, False, True, False]
    assert [s.explained for s in steps] == [True, True, True, False, False, False]
    m = Monitor()
    for ev in linked_trace():
        m.observe(ev)
    assert m.metrics["ti"] == 3.33  # round(5 * 4/6, 2)
    # hb-derive/1: only step 1 (linked by id, reason stated) was traceable: round(5 * 1/6, 2).
    old = [s.traceable for s in derive_steps(linked_trace(), version=DERIVE_V1)]
    assert old == [True, False, False, False, False, False]
    assert round(5 * sum(old) / len(old), 2) == 0.83


def test_golden_links_in_scoring_evidence() -> None:
    from hbeval.scoring import analyse_trace, assess_evidence
    from hbeval.scoring._verdict import link_counts

    facts = analyse_trace(linked_trace())
    assert [(c.call_id, c.link) for c in facts.calls] == [
        ("c2", "id"),
        ("run-a", "match"),
        ("run-b", "match"),
        ("run-c", "none"),
        ("run-d", "match"),
        ("run-e", "none"),
    ]
    # Linked calls point at their issuing reply: m1's model_end is event 2, m2's is event 10.
    assert [c.issued_at for c in facts.calls] == [2, 2, 2, None, 10, None]
    assert link_counts(facts) == {"calls": 6, "id": 1, "match": 3, "none": 2, "explained": 3}
    evidence = assess_evidence(facts)
    assert evidence.missing == ("model_link:run-c", "model_link:run-e")


def test_unknown_derive_version_is_refused() -> None:
    with pytest.raises(ValueError, match="hb-derive/9"):
        list(derive_steps([], version="hb-derive/9"))
