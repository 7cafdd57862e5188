"""The store's fast event serialiser says exactly what ``dump_event`` says."""

from __future__ import annotations

import datetime as dt
import enum
import json
import math
import re
import uuid
from typing import Any

import pytest
from pydantic import BaseModel, field_serializer

from hbeval.store import _codec
from hbeval.store._codec import encode_event, encode_events
from hbeval_core.events import (
    ChatMessage,
    Claim,
    Directive,
    EventBase,
    FaultInjected,
    Halt,
    ModelEnd,
    ModelStart,
    Replan,
    RunEnd,
    RunStart,
    SpanEnd,
    SpanStart,
    Step,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
    Usage,
    dump_event,
    parse_event,
)
from hbeval_core.vocab import EVENT_KINDS


class Colour(enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int = 0
    y: int = 0


class Shouty(ToolStart):
    """An event subclass with a custom serialiser: must go through pydantic."""

    @field_serializer("tool")
    def _upper(self, tool: str) -> str:
        return tool.upper()


R = "run-1/s000-t0"
EVERY_KIND: list[EventBase] = [
    RunStart(run_id=R, agent_id="a", task_id="t", scenario=0, trial=1, input={"q": "ünï ✈"}),
    RunEnd(run_id=R, status="error", error="boom", output=[1, 2.5, None]),
    SpanStart(run_id=R, span_id="s", scope="node", name="plan"),
    SpanEnd(run_id=R, span_id="s", scope="node", status="error", error="x"),
    ModelStart(
        run_id=R,
        call_id="m",
        model="gpt",
        messages=[
            ChatMessage(role="user", content="hi"),
            ChatMessage(role="tool", tool_call_id="c"),
        ],
    ),
    ModelEnd(
        run_id=R,
        call_id="m",
        text="because",
        reasoning="",
        tool_calls=[
            ToolCall(id="c", name="t", args={"a": [1, {"b": None}]}),
            ToolCall(id="d", name="u"),
        ],
        usage=Usage(input_tokens=3),
        latency_ms=1e-7,
    ),
    ToolStart(run_id=R, call_id="c", tool="t", args={"big": 10**30, "small": -(2**63)}),
    ToolEnd(run_id=R, call_id="c", tool="t", result="ok", status="error", latency_ms=12.0),
    ToolError(run_id=R, call_id="c", tool="t", error="503", error_type="HTTPError"),
    FaultInjected(
        run_id=R, call_id="c", mode="malformed", effect="result_altered", intended={"kind": "x"}
    ),
    Replan(run_id=R, reason="fault"),
    Claim(run_id=R, name="deliberate_handling", value={"nested": [True, False]}),
    Halt(run_id=R, metric="pei", value=0.5, threshold=0.7, enforced=True),
    Step(run_id=R, action="a", success=False, had_fault=True, metadata={"k": 1e300}),
    Directive(run_id=R, action="retry", tool="t", value=0.0),
]
EDGE_CASES: list[EventBase] = [
    # fields explicitly set to their defaults are left out, as pydantic's exclude_defaults does
    ToolStart(run_id=R, call_id="c", tool="t", args={}, attrs={}, step=None),
    RunEnd(run_id=R, status="ok"),
    Step(run_id=R, success=True, traceable=True, had_fault=False),
    ToolEnd(run_id=R, call_id="c", tool="t", result=0, latency_ms=0.0),
    # values only pydantic knows how to write: the fast path must step aside
    ToolStart(run_id=R, call_id="c", tool="t", args={"when": dt.datetime(2026, 1, 2, 3, 4, 5)}),
    ToolStart(run_id=R, call_id="c", tool="t", args={"d": dt.date(2026, 1, 2), "t": (1, 2)}),
    ToolStart(run_id=R, call_id="c", tool="t", args={"s": {3}, "b": b"bytes"}),
    ToolStart(run_id=R, call_id="c", tool="t", args={"e": Colour.RED, "u": uuid.UUID(int=7)}),
    ToolStart(run_id=R, call_id="c", tool="t", args={"p": Point(x=1), "ps": [Point()]}),
    ToolStart(run_id=R, call_id="c", tool="t", attrs={"int_keys": {1: "one"}}),
    Shouty(run_id=R, call_id="c", tool="quiet"),
]


def same_content(a: str, b: str) -> None:
    """Equal JSON values with keys in the same order at every level."""

    def ordered(value: Any) -> Any:
        if isinstance(value, dict):
            return [(k, ordered(v)) for k, v in value.items()]
        if isinstance(value, list):
            return [ordered(v) for v in value]
        return value

    assert ordered(json.loads(a)) == ordered(json.loads(b))


def test_the_corpus_covers_every_event_kind() -> None:
    assert {e.kind for e in EVERY_KIND} == set(EVENT_KINDS)  # type: ignore[attr-defined]


@pytest.mark.parametrize("event", EVERY_KIND + EDGE_CASES, ids=lambda e: type(e).__name__)
def test_encode_event_matches_dump_event(event: EventBase) -> None:
    ours = encode_event(event)
    same_content(ours, dump_event(event))
    assert ours.startswith('{"kind":')
    if not isinstance(event, Shouty):
        assert parse_event(json.loads(ours)) == parse_event(json.loads(dump_event(event)))


@pytest.mark.parametrize("event", EVERY_KIND + EDGE_CASES, ids=lambda e: type(e).__name__)
def test_the_stdlib_encoder_says_the_same(
    event: EventBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_codec, "_to_json", _codec._stdlib_to_json)
    same_content(encode_event(event), dump_event(event))


def test_plain_events_take_the_fast_path() -> None:
    """The fast path is really used (a regression here would only show up as slowness)."""
    for event in EVERY_KIND:
        builder, kind = _codec._event_info(type(event)) or (None, "")
        assert builder is not None and kind == event.kind  # type: ignore[attr-defined]
    assert _codec._event_info(Shouty) == (None, "tool_start")
    assert _codec._event_info(Point) is None


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (ToolStart(run_id=R, call_id="c", tool="t", args={"x": math.nan}), "args.x"),
        (ToolEnd(run_id=R, call_id="c", tool="t", result=[1, [math.inf]]), "result[1][0]"),
        (RunEnd(run_id=R, output={"p": Point(), "v": -math.inf}), "output.v"),
        (Step(run_id=R, metadata={"when": dt.date(2026, 1, 1), "x": math.nan}), "metadata.x"),
    ],
)
def test_nan_and_infinities_are_refused_by_field(event: EventBase, field: str) -> None:
    with pytest.raises(ValueError, match=rf"events\[2\]: field '{re.escape(field)}' is NaN or inf"):
        encode_events([EVERY_KIND[0], EVERY_KIND[1], event])


def test_lone_surrogates_are_refused_by_field() -> None:
    """SQLite and UTF-8 files cannot hold them, so no store accepts them."""
    event = ToolEnd(run_id=R, call_id="c", tool="t", result={"text": "lone \ud800 half"})
    with pytest.raises(ValueError, match=r"events\[0\]: field 'result.text' is not valid Unicode"):
        encode_events([event])


def test_none_values_are_not_mistaken_for_nan() -> None:
    event = ToolEnd(run_id=R, call_id="c", tool="t", result={"missing": None})
    assert json.loads(encode_event(event))["result"] == {"missing": None}


def test_non_events_are_refused_by_position() -> None:
    with pytest.raises(ValueError, match=r"events\[1\] is a Point, not an hbeval event"):
        encode_events([EVERY_KIND[0], Point()])  # type: ignore[list-item]
