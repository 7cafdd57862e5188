"""``score_events`` without a ``steps`` list folds the deriver's step tuples directly (no step
records are built); the figures must equal those of feeding the same events one by one through
``Monitor.observe`` and of the path that keeps every step record.

The traces cover: unobserved steps (no model event yet), a fault and its error, a failed call
retried with other arguments after a reply (a replan), a call no reply issued, an explicit
``step`` event (which the deriver hands over as a record even in tuple mode), two runs
interleaved, and the earlier derivation rules.
"""

from __future__ import annotations

from typing import Any

import pytest

from hbeval_core.events import (
    FaultInjected,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    Step,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
)
from hbeval_core.live.derive import DERIVE_V1, DERIVE_V2, DERIVE_VERSION
from hbeval_core.live.monitor import Monitor, score_events


def _call(run: str, cid: str, fault: bool = False, **args: Any) -> list[Any]:
    events: list[Any] = [ToolStart(run_id=run, call_id=cid, tool="lookup", args=args)]
    if fault:
        events.append(
            FaultInjected(run_id=run, call_id=cid, tool="lookup", mode="error_5xx", effect="error")
        )
        events.append(ToolError(run_id=run, call_id=cid, tool="lookup", error="HTTP 503"))
    else:
        events.append(ToolEnd(run_id=run, call_id=cid, tool="lookup", result="ok"))
    return events


def _reply(run: str, mid: str, cid: str | None, text: str, **args: Any) -> list[Any]:
    calls = [ToolCall(id=cid, name="lookup", args=args)] if cid else []
    return [
        ModelStart(run_id=run, call_id=mid),
        ModelEnd(run_id=run, call_id=mid, text=text, tool_calls=calls),
    ]


UNOBSERVED = [*_call("r", "c1", order=1), *_call("r", "c2", fault=True, order=2)]
MIXED = [
    RunStart(run_id="r", input="task"),
    *UNOBSERVED,
    *_reply("r", "m1", "c3", "Trying order 3 instead.", order=3),
    *_call("r", "c3", order=3),
    *_reply("r", "m2", "c4", "", order=4),
    *_call("r", "c4", fault=True, order=4),
    *_reply("r", "m3", "c5", "Retrying with order 5.", order=5),
    *_call("r", "c5", order=5),
    *_call("r", "c6", order=6),  # no reply issued it
    Step(run_id="r", action="explicit", success=False, had_fault=True, traceable=False),
    RunEnd(run_id="r", output="done"),
]
INTERLEAVED = [
    ev
    for pair in zip(MIXED, [*_call("q", "d1", order=9), *MIXED[3:9]], strict=False)
    for ev in pair
]


def _figures(m: Monitor) -> tuple[Any, ...]:
    return (
        m.metrics,
        m.undefined,
        m.step_count,
        m.breach_count,
        [b.as_dict() for b in m.breaches],
    )


@pytest.mark.parametrize("events", [UNOBSERVED, MIXED, INTERLEAVED], ids=["unobs", "mixed", "two"])
@pytest.mark.parametrize("version", [DERIVE_VERSION, DERIVE_V2, DERIVE_V1])
def test_unrecorded_fold_equals_observe_and_the_recorded_fold(
    events: list[Any], version: str
) -> None:
    observed = Monitor(adapt_plan=False, derive_version=version)
    for ev in events:
        observed.observe(ev)
    recorded: list[Any] = []
    with_records = score_events(events, steps=recorded, adapt_plan=False, derive_version=version)
    fast = score_events(events, adapt_plan=False, derive_version=version)
    assert _figures(fast) == _figures(observed) == _figures(with_records)
    assert fast.step_count == len(recorded)
    assert fast._deriver._as_tuples is False  # the deriver is left as it was


def test_unrecorded_fold_by_hand() -> None:
    # Two unobserved steps, the second faulted: PEI 1 - 1/2 (one fault episode, no
    # transition), FRR 0 of 1 faulted steps, IRS never judged, TI undefined (no model event).
    m = score_events(UNOBSERVED, adapt_plan=False)
    assert m.metrics == {"pei": 0.5, "frr": 0.0, "irs": None, "ti": None, "csi": None}
    assert m.undefined["ti"] == "no_model_events"
