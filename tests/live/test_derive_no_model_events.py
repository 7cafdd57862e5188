"""hb-derive/3: TI is undefined (``no_model_events``), never 0, when no model event was recorded.

Every expected value is worked out by hand from the rule (derive.py's module docstring):
a tool step derived before any model event or explicit step cannot show whether a model decided
it; while every step so far is such a step and no model event has been seen, TI is undefined and
cannot breach; otherwise TI = round(5 x traceable / steps, 2) over every step. hb-derive/2
scored the same traces TI 0.0 and stays computable with ``Monitor(derive_version=...)``.
"""

from __future__ import annotations

from typing import Any

import pytest

from hbeval_core.events import (
    FaultInjected,
    ModelEnd,
    ModelStart,
    Step,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
)
from hbeval_core.live.derive import DERIVE_V2, DERIVE_VERSION, derive_steps
from hbeval_core.live.monitor import Monitor, score_events

R = "r1"


def call(cid: str, tool: str = "lookup", *, fault: bool = False, **args: Any) -> list[Any]:
    """The events a faultable tool emits for one call, with no model event around it."""
    events: list[Any] = [ToolStart(run_id=R, call_id=cid, tool=tool, args=args)]
    if fault:
        events.append(
            FaultInjected(run_id=R, call_id=cid, tool=tool, mode="error_5xx", effect="error")
        )
        events.append(ToolError(run_id=R, call_id=cid, tool=tool, error="HTTP 503"))
    else:
        events.append(ToolEnd(run_id=R, call_id=cid, tool=tool, result="ok"))
    return events


def reply(mid: str, *calls: tuple[str, str, dict[str, Any]], text: str = "") -> list[Any]:
    return [
        ModelStart(run_id=R, call_id=mid),
        ModelEnd(
            run_id=R,
            call_id=mid,
            text=text,
            tool_calls=[ToolCall(id=i, name=n, args=a) for i, n, a in calls],
        ),
    ]


# Three calls of a plain agent without think(): the second one faulted (and so failed).
PLAIN = [*call("c1", order=1), *call("c2", order=2, fault=True), *call("c3", order=3)]


def ti_breaches(m: Monitor) -> list[tuple[int, int]]:
    return [(b.first_step, b.last_step) for b in m.breaches if b.metric == "ti"]


def test_plain_trace_without_model_events_has_ti_undefined() -> None:
    m = score_events(PLAIN)
    # By hand: 3 steps; one fault episode (step 2) and no transition -> PEI 1 - 1/3;
    # FRR 0 of 1 faulted steps; IRS: no faulted step judged; TI: no model event at all.
    assert m.step_count == 3
    assert m.metrics == {"pei": 1 - 1 / 3, "frr": 0.0, "irs": None, "ti": None, "csi": None}
    assert m.undefined["ti"] == "no_model_events"
    assert ti_breaches(m) == []  # undefined is never a breach
    assert m.summary()["derive_version"] == DERIVE_VERSION == "hb-derive/3"


def test_hb_derive_2_still_scores_it_zero() -> None:
    m = score_events(PLAIN, derive_version=DERIVE_V2)
    # hb-derive/2: none of the 3 calls is linked -> round(5 * 0 / 3, 2) = 0.0, below 3.00 on
    # every step: one TI breach interval over steps 0-2.
    assert m.metrics["ti"] == 0.0
    assert "ti" not in m.undefined
    assert ti_breaches(m) == [(0, 2)]
    assert m.summary()["derive_version"] == "hb-derive/2"


def test_the_steps_are_those_of_hb_derive_2() -> None:
    new, old = list(derive_steps(PLAIN)), list(derive_steps(PLAIN, version=DERIVE_V2))
    assert [(s.action, s.success, s.had_fault, s.traceable, s.link) for s in new] == [
        ('lookup({"order":1})', True, False, False, "none"),
        ('lookup({"order":2})', False, True, False, "none"),
        ('lookup({"order":3})', True, False, False, "none"),
    ]
    assert [s.observed for s in new] == [False, False, False]
    assert [s.observed for s in old] == [True, True, True]
    assert [s.fields() for s in new] == [s.fields() for s in old]


def test_per_step_ti_is_undefined_until_a_model_event_then_counts_every_step() -> None:
    events = [
        *PLAIN[:2],  # c1, unobserved
        *PLAIN[2:5],  # c2 (faulted), unobserved
        *reply("m1", ("c4", "lookup", {"order": 4}), text="Checking order 4."),
        *call("c4", order=4),  # linked by id: traceable
        *call("c5", order=5),  # no reply issued it: not traceable
    ]
    m = Monitor(on_breach=lambda *_: None)  # every step folded at once, read after each
    seen: list[float | None] = []
    for ev in events:
        if m.observe(ev) is not None:
            seen.append(m.metrics["ti"])
    # By hand: steps 1-2 unobserved -> undefined; step 3 = 1 traceable of 3 -> round(5/3, 2)
    # = 1.67; step 4 = 1 of 4 -> 1.25. TI breaches (floor 3.00) on steps 3 and 4 only.
    assert seen == [None, None, 1.67, 1.25]
    assert ti_breaches(m) == [(2, 3)]
    assert "ti" not in m.undefined
    # The same figures when steps are queued and folded in one batch.
    batched = score_events(events)
    assert batched.metrics == m.metrics
    assert ti_breaches(batched) == [(2, 3)]


def test_a_model_event_after_every_call_makes_ti_defined_but_raises_no_breach() -> None:
    events = [*PLAIN, *reply("m1", text="Done.")]
    m = score_events(events)
    # The trial has model events, so TI is measured: none of the 3 calls was issued by a
    # reply -> 0.0. No step was folded while TI was observable, so no breach was recorded.
    assert m.metrics["ti"] == 0.0
    assert "ti" not in m.undefined
    assert ti_breaches(m) == []


def test_explicit_steps_keep_their_own_traceable_flags() -> None:
    # The reference's path: explicit steps traceable F, T, F -> round(5 * 1/3, 2) = 1.67
    # (spec §2.1), no model event needed.
    events = [Step(run_id=R, action=f"a{i}", traceable=t) for i, t in enumerate((0, 1, 0))]
    m = score_events(events)
    assert m.metrics["ti"] == 1.67
    m = Monitor()
    for t in (False, True, False):
        m.record_step(action="a", traceable=t)
    assert m.metrics["ti"] == 1.67


def test_record_step_beside_unobserved_tool_steps_keeps_ti_defined() -> None:
    m = Monitor()
    m.record_step(action="manual", traceable=True)
    for ev in PLAIN:
        m.observe(ev)
    # One explicit traceable step and 3 unlinked tool steps: round(5 * 1/4, 2) = 1.25.
    assert m.metrics["ti"] == 1.25
    assert "ti" not in m.undefined


@pytest.mark.parametrize("version", ["hb-derive/9", "hb-derive/0"])
def test_unknown_derive_versions_are_refused(version: str) -> None:
    with pytest.raises(ValueError, match="hb-derive/3, hb-derive/2, hb-derive/1"):
        Monitor(derive_version=version)


def test_score_cli_shows_undefined_ti_with_its_reason(tmp_path: Any) -> None:
    from hbeval_core.events import write_events
    from hbeval_core.live._document import score_trace

    path = tmp_path / "plain.jsonl"
    write_events(path, PLAIN)
    doc = score_trace(path, label="plain", steps=True)
    assert doc["metrics"]["ti"] is None and doc["undefined"]["ti"] == "no_model_events"
    assert [row["metrics"]["ti"] for row in doc["steps"]] == [None, None, None]
    assert [row["undefined"].get("ti") for row in doc["steps"]] == ["no_model_events"] * 3
    assert all(b["metric"] != "ti" for b in doc["breaches"])


class _Counting(Monitor):
    """A user's monitor that overrides record_step (and so sees every step as keywords)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def record_step(self, **fields: Any) -> None:
        self.seen.append(fields["traceable"])
        super().record_step(**fields)


def test_a_monitor_overriding_record_step_leaves_ti_undefined_too(tmp_path: Any) -> None:
    from hbeval_core.events import write_events
    from hbeval_core.live._trace import fold_trace

    observed = _Counting()
    for ev in PLAIN:
        observed.observe(ev)
    path = tmp_path / "plain.jsonl"
    write_events(path, PLAIN)
    folded = fold_trace(path, _Counting())
    for m in (observed, folded):
        assert len(m.seen) == 3 and not any(m.seen)  # each step reached the override, falsy
        assert m.metrics["ti"] is None and m.undefined["ti"] == "no_model_events"
    # Once a model event is seen, the same subclass scores TI over every step (1 of 4 traced).
    events = [*PLAIN, *reply("m1", ("c4", "lookup", {"order": 4})), *call("c4", order=4)]
    m = _Counting()
    for ev in events:
        m.observe(ev)
    assert m.metrics["ti"] == 1.25 and "ti" not in m.undefined
