"""hb-events/1: JSONL round trip, version header, and errors that name the line and field."""

from __future__ import annotations

import io
import json

import pytest

from hbeval_core.events import (
    EventFormatError,
    ModelEnd,
    RunStart,
    ToolCall,
    ToolEnd,
    ToolStart,
    events_json_schema,
    read_events,
    write_events,
)
from hbeval_core.vocab import EVENT_KINDS, EVENTS_FORMAT


def test_round_trip_with_header(tmp_path) -> None:  # type: ignore[no-untyped-def]
    evs = [
        RunStart(run_id="r", agent_id="a", ts=1.5),
        ModelEnd(
            run_id="r",
            call_id="m",
            text="because",
            tool_calls=[ToolCall(id="c", name="t", args={"x": "é"})],
        ),
        ToolStart(run_id="r", call_id="c", tool="t", args={"x": "é"}, parent_id="p"),
        ToolEnd(run_id="r", call_id="c", tool="t", result={"ok": True}, latency_ms=1.25),
    ]
    path = tmp_path / "e.jsonl"
    assert write_events(path, evs) == 4
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": EVENTS_FORMAT}
    assert json.loads(lines[1])["kind"] == "run_start"  # kind first, defaults left out
    assert list(json.loads(lines[1])) == ["kind", "run_id", "ts", "agent_id"]
    assert list(read_events(path)) == evs


def test_every_kind_in_vocab_is_in_the_schema() -> None:
    schema = events_json_schema()
    assert schema["$id"] == EVENTS_FORMAT
    text = json.dumps(schema)
    for kind in EVENT_KINDS:
        assert f'"{kind}"' in text


def read(text: str) -> list[object]:
    return list(read_events(io.StringIO(text)))


def test_newer_version_refused() -> None:
    with pytest.raises(EventFormatError, match="newer hbeval") as exc:
        read('{"format":"hb-events/2"}\n{"kind":"run_start","run_id":"r"}\n')
    assert exc.value.line == 1 and exc.value.field == "format"


def test_missing_field_names_line_and_field() -> None:
    text = '{"format":"hb-events/1"}\n{"kind":"run_start","run_id":"r"}\n{"kind":"tool_end","run_id":"r","tool":"t"}\n'
    with pytest.raises(EventFormatError) as exc:
        read(text)
    assert exc.value.line == 3
    assert exc.value.field == "call_id"
    assert "line 3" in str(exc.value)


def test_wrong_type_names_field() -> None:
    with pytest.raises(EventFormatError) as exc:
        read('{"kind":"tool_end","run_id":"r","call_id":"c","tool":"t","latency_ms":"slow"}')
    assert exc.value.field == "latency_ms"


@pytest.mark.parametrize("const", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinities_rejected(const: str) -> None:
    with pytest.raises(EventFormatError, match="not allowed"):
        read('{"kind":"tool_end","run_id":"r","call_id":"c","tool":"t","result":' + const + "}")
    with pytest.raises(ValueError):
        ToolEnd(run_id="r", call_id="c", tool="t", latency_ms=float("nan"))


def test_unknown_kind_and_extra_field() -> None:
    with pytest.raises(EventFormatError, match="unknown event kind") as exc:
        read('{"kind":"tool_finish","run_id":"r"}')
    assert exc.value.field == "kind"
    with pytest.raises(EventFormatError) as exc2:
        read('{"kind":"run_start","run_id":"r","agnet_id":"typo"}')
    assert exc2.value.field == "agnet_id"


def test_not_json_and_not_object() -> None:
    with pytest.raises(EventFormatError, match="line 2: not valid JSON"):
        read('{"kind":"run_start","run_id":"r"}\n{oops\n')
    with pytest.raises(EventFormatError, match="JSON object"):
        read("[1,2]")


def test_write_refuses_nan_inside_any_field() -> None:
    with pytest.raises(ValueError):
        write_events(
            io.StringIO(), [ToolEnd(run_id="r", call_id="c", tool="t", result=[float("nan")])]
        )
