"""A trace of event dicts gives the figures its validated models give, read either way.

``trace_figures`` reads event dicts through msgspec struct twins where they read like the
models (``_dict_trace.struct_trace``). Here every trace is scored twice, from its dicts and
from its models, and the figures must be equal: real recordings (tau-bench airline, a Pi
session), and hand-made traces with tool errors, unexplained calls, calls without a start,
replans, claims and spans. Where the twins could differ (a lax value, NaN, an unknown field, a
fault, a kind without a twin), ``struct_trace`` must answer None so the models decide, with
pydantic's own error for a bad value.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hbeval.scoring import trace_figures
from hbeval.scoring._dict_trace import struct_trace
from hbeval_core.events import (
    ChatMessage,
    Claim,
    FaultInjected,
    ModelEnd,
    ModelStart,
    Replan,
    RunEnd,
    RunStart,
    SpanEnd,
    SpanStart,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
    parse_event,
)

pytest.importorskip("msgspec")

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"


def _dicts(events: list[Any]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in events]


def _both(dicts: list[dict[str, Any]], **kw: Any) -> tuple[Any, Any]:
    models = [parse_event(dict(d)) for d in dicts]
    return trace_figures(dicts, **kw), trace_figures(models, **kw)


def _mixed() -> list[Any]:
    """Explained and unexplained calls, a tool error, a call without a start, a replan, a claim."""
    return [
        RunStart(run_id="r", input="task", ts=1.5),
        SpanStart(run_id="r", span_id="s1", scope="agent", name="agent"),
        ModelStart(run_id="r", call_id="m0", messages=[ChatMessage(role="user", content="go")]),
        ModelEnd(
            run_id="r",
            call_id="m0",
            text="Looking the order up first.",
            tool_calls=[ToolCall(id="c0", name="lookup", args={"order": 7})],
            latency_ms=12.5,
        ),
        ToolStart(run_id="r", call_id="c0", tool="lookup", args={"order": 7}),
        ToolError(run_id="r", call_id="c0", tool="lookup", error="timeout"),
        Replan(run_id="r", reason="lookup failed"),
        ModelStart(run_id="r", call_id="m1"),
        ModelEnd(run_id="r", call_id="m1", tool_calls=[ToolCall(id="c1", name="refund", args={})]),
        ToolStart(run_id="r", call_id="c1", tool="refund", args={}),
        ToolEnd(run_id="r", call_id="c1", tool="refund", result="ok"),
        ToolEnd(run_id="r", call_id="c9", tool="notify", result="sent"),
        Claim(run_id="r", name="refunded", text="the refund went through"),
        SpanEnd(run_id="r", span_id="s1", scope="agent"),
        RunEnd(run_id="r", output="done"),
    ]


def test_hand_made_trace_reads_alike() -> None:
    dicts = _dicts(_mixed())
    fast = struct_trace(dicts)
    assert fast is not None and len(fast) == len(dicts)  # the twins took it
    for kw in ({"passed": True}, {"passed": False, "forbidden_tools": ["refund"]}):
        got, want = _both(dicts, **kw)
        assert got == want
    got, _ = _both(dicts, passed=True, forbidden_tools=["refund"])
    assert got.forbidden_tools_run == ("refund",)
    assert got.evidence.missing == ("tool_start:c9", "model_link:c9")


def test_absent_defaults_read_alike() -> None:
    """Fields left out take the model's defaults (messages, args, attrs, tool_calls)."""
    dicts: list[dict[str, Any]] = [
        {"kind": "run_start", "run_id": "r"},
        {"kind": "model_start", "run_id": "r", "call_id": "m"},
        {"kind": "model_end", "run_id": "r", "call_id": "m", "text": "Calling.",
         "tool_calls": [{"id": "c", "name": "t"}]},
        {"kind": "tool_start", "run_id": "r", "call_id": "c", "tool": "t"},
        {"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t"},
        {"kind": "run_end", "run_id": "r"},
    ]  # fmt: skip
    fast = struct_trace(dicts)
    assert fast is not None
    assert fast[1].messages == [] and fast[3].args == {} and fast[0].attrs == {}
    got, want = _both(dicts, passed=True)
    assert got == want
    assert got.metrics["pei"] == 1.0 and got.evidence.level == "E2"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"step": "3"}, "lax: pydantic coerces a numeric string"),
        ({"step": True}, "a bool for an int"),
        ({"ts": math.nan}, "NaN, which the models refuse"),
        ({"ts": math.inf}, "infinity"),
        ({"colour": "red"}, "an unknown field"),
        ({"step": -1}, "below the bound"),
    ],
)
def test_values_the_twins_may_read_otherwise_go_to_the_models(
    change: dict[str, Any], why: str
) -> None:
    dicts = _dicts(_mixed())
    dicts[4] = {**dicts[4], **change}
    assert struct_trace(dicts) is None, why
    try:
        want: Any = trace_figures([parse_event(dict(d)) for d in dicts], passed=True)
    except ValidationError as exc:
        with pytest.raises(ValidationError) as got:
            trace_figures(dicts, passed=True)
        assert str(got.value) == str(exc)  # pydantic's own error, word for word
    else:
        assert trace_figures(dicts, passed=True) == want


def test_a_trace_with_a_fault_goes_to_the_models() -> None:
    events = _mixed()
    events.insert(
        5, FaultInjected(run_id="r", call_id="c0", tool="lookup", mode="timeout", effect="error")
    )
    dicts = _dicts(events)
    assert struct_trace(dicts) is None
    got, want = _both(dicts, passed=True)
    assert got == want


def test_models_and_other_entries_go_to_the_models() -> None:
    events = _mixed()
    assert struct_trace(events) is None  # already models: nothing to convert
    assert struct_trace([*_dicts(events[:3]), events[3]]) is None
    assert struct_trace([{"kind": "step", "run_id": "r", "index": 0}]) is None
    assert struct_trace([{"kind": ["model_end"], "run_id": "r"}]) is None
    assert struct_trace([]) == []


@pytest.mark.skipif(not CORPORA.is_dir(), reason=f"recordings folder {CORPORA} is absent")
@pytest.mark.parametrize(
    ("fmt", "path", "limit"),
    [
        ("tau-bench", "tau-bench/gpt-4o-airline.json", 60),
        ("pi", "pi/large-session.jsonl", 5),
    ],
)
def test_real_recordings_read_alike(fmt: str, path: str, limit: int) -> None:
    from hbeval.importers import read_trials

    trials = read_trials(fmt, [CORPORA / path])[:limit]
    assert trials
    took = 0
    for trial in trials:
        dicts = _dicts(list(trial.events))
        took += struct_trace(dicts) is not None
        for passed in (True, False, None):
            got, want = _both(dicts, passed=passed, forbidden_tools=["book_reservation"])
            assert got == want, trial.source_id
    assert took == len(trials)  # tool errors, no faults: every one read through the twins
