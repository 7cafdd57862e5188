"""Failed tool calls with no tool span: the next model span's input carries the error.

A framework that refuses a call to a tool it does not have (LangGraph's ``ToolNode``) and a
fault that fails a call before the tool is entered leave no tool span; the agent reads the error
in its next model call's input. The OTLP/JSON recording below is written by hand, one trace per
row of ``TRACES``; every expected figure is counted from that table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hbeval.cli import app

OUTAGE = "HTTPError: 503 Service Unavailable returned by tool 'lookup'"
NO_SUCH_TOOL = "Error: track_parcel is not a valid tool, try one of [lookup]."

# trace: (convention, steps, label). A step is (tool, how it ended):
#   "ok" / "span_error": a tool span answered it (status OK / ERROR);
#   text: no tool span; the next model span's input carries that text as the tool's message.
TRACES: dict[str, tuple[str, list[tuple[str, str]], bool]] = {
    "a1" * 16: ("oi", [("lookup", "span_error")], True),
    "b2" * 16: ("oi", [("lookup", OUTAGE)], True),
    "c3" * 16: ("oi", [("track_parcel", NO_SUCH_TOOL)], False),
    "d4" * 16: ("oi", [("lookup", "ok")], True),
    "e5" * 16: ("oi", [("lookup", "span_error")], False),
    "f6" * 16: ("genai", [("track_parcel", NO_SUCH_TOOL), ("lookup", OUTAGE)], True),
    "a7" * 16: ("genai", [("lookup", "order A1: shipped")], True),
}


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _model_span(
    convention: str, reply: tuple[str, str] | None, answered: list[tuple[str, str, str]]
) -> list[dict[str, Any]]:
    """Attributes of one model call: it read ``answered`` (call id, tool, text) after its
    previous reply, and issues ``reply`` (call id, tool) or a final answer."""
    if convention == "oi":
        attrs = [_kv("openinference.span.kind", "LLM"), _kv("llm.model_name", "gpt-x")]
        n = 0
        attrs += [
            _kv(f"llm.input_messages.{n}.message.role", "user"),
            _kv(f"llm.input_messages.{n}.message.content", "Where is order A1?"),
        ]
        if answered:
            n += 1
            attrs.append(_kv(f"llm.input_messages.{n}.message.role", "assistant"))
        for call_id, tool, text in answered:
            n += 1
            attrs += [
                _kv(f"llm.input_messages.{n}.message.role", "tool"),
                _kv(f"llm.input_messages.{n}.message.content", text),
                _kv(f"llm.input_messages.{n}.message.tool_call_id", call_id),
                _kv(f"llm.input_messages.{n}.message.name", tool),
            ]
        out = "llm.output_messages.0.message"
        attrs.append(_kv(f"{out}.role", "assistant"))
        if reply is None:
            attrs.append(_kv(f"{out}.content", "Order A1 shipped."))
        else:
            call = f"{out}.tool_calls.0.tool_call"
            attrs += [
                _kv(f"{call}.id", reply[0]),
                _kv(f"{call}.function.name", reply[1]),
                _kv(f"{call}.function.arguments", '{"order_id": "A1"}'),
            ]
        return attrs
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": "Where is order A1?"}]}
    ]
    if answered:
        messages.append({"role": "assistant", "parts": [{"type": "text", "content": "..."}]})
    for call_id, _tool, text in answered:
        messages.append(
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": call_id, "response": text}],
            }
        )
    parts: list[dict[str, Any]] = (
        [{"type": "text", "content": "Order A1 shipped."}]
        if reply is None
        else [
            {"type": "tool_call", "id": reply[0], "name": reply[1], "arguments": {"order_id": "A1"}}
        ]
    )
    return [
        _kv("gen_ai.operation.name", "chat"),
        _kv("gen_ai.input.messages", json.dumps(messages)),
        _kv("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": parts}])),
    ]


def _trace(trace_id: str, convention: str, steps: list[tuple[str, str]]) -> list[dict[str, Any]]:
    root = trace_id[:14] + "00"
    spans: list[dict[str, Any]] = []
    clock = 1_000

    def span(n: int, name: str, attrs: list[dict[str, Any]], **extra: Any) -> None:
        nonlocal clock
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{trace_id[:14]}{n:02x}",
                "parentSpanId": root,
                "name": name,
                "startTimeUnixNano": str(clock),
                "endTimeUnixNano": str(clock + 10),
                "attributes": attrs,
                **extra,
            }
        )
        clock += 20

    answered: list[tuple[str, str, str]] = []
    n = 1
    for k, (tool, how) in enumerate(steps):
        call_id = f"call-{trace_id[:4]}-{k}"
        span(n, "llm", _model_span(convention, (call_id, tool), answered))
        n += 1
        if how in ("ok", "span_error"):
            result = "order A1: shipped" if how == "ok" else "lookup timed out"
            tool_attrs = (
                [_kv("openinference.span.kind", "TOOL"), _kv("tool.name", tool)]
                if convention == "oi"
                else [
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", tool),
                    _kv("gen_ai.tool.call.id", call_id),
                ]
            )
            tool_attrs += [_kv("input.value", '{"order_id": "A1"}'), _kv("output.value", result)]
            status = {"code": 2, "message": result} if how == "span_error" else {"code": 1}
            span(n, tool, tool_attrs, status=status)
            n += 1
            answered = [(call_id, tool, result)]
        else:
            answered = [(call_id, tool, how)]
    span(n, "llm", _model_span(convention, None, answered))
    spans.append(
        {
            "traceId": trace_id,
            "spanId": root,
            "name": "agent",
            "startTimeUnixNano": "0",
            "endTimeUnixNano": str(clock + 100),
            "attributes": [
                _kv("openinference.span.kind", "AGENT"),
                _kv("input.value", "Where is order A1?"),
                _kv("output.value", "Order A1 shipped."),
            ],
        }
    )
    return spans


def _files(tmp_path: Path) -> tuple[Path, Path]:
    spans = [s for tid, (conv, steps, _) in TRACES.items() for s in _trace(tid, conv, steps)]
    recording = tmp_path / "traces.json"
    recording.write_text(
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}), encoding="utf-8"
    )
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({tid: row[2] for tid, row in TRACES.items()}), encoding="utf-8")
    return recording, labels


def _hb(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _failed(how: str) -> bool:
    return how == "span_error" or how in (OUTAGE, NO_SUCH_TOOL)


def test_failed_calls_without_a_tool_span_are_counted_from_the_next_model_input(
    tmp_path: Path,
) -> None:
    recording, labels = _files(tmp_path)
    db = str(tmp_path / "h.db")
    proc = _hb("import", "otlp-json", str(recording), "--db", db, "--labels", str(labels), "--json")
    assert proc.exit_code == 0, proc.stderr
    out = json.loads(proc.stdout)
    # Every call of the table is on record; none is listed as skipped.
    assert out["tool_calls"] == sum(len(steps) for _, steps, _ in TRACES.values())
    assert out["tool_errors"] == sum(
        _failed(how) for _, steps, _ in TRACES.values() for _, how in steps
    )
    assert not [s for s in out["skipped"] if "no tool span" in s["reason"]], out["skipped"]

    faulted = [label for _, steps, label in TRACES.values() if any(_failed(h) for _, h in steps)]
    spans_only = [
        label for _, steps, label in TRACES.values() if any(h == "span_error" for _, h in steps)
    ]
    assert (sum(faulted), len(faulted)) == (3, 5)  # the true figure: 3 of 5 faulted runs passed
    assert (sum(spans_only), len(spans_only)) == (1, 2)  # what tool spans alone would give
    proc = _hb("report", out["run_id"], "--db", db, "--json")
    assert proc.exit_code == 0, proc.stderr
    report = next(iter(json.loads(proc.stdout)["reports"].values()))["report"]
    # Nobody injected these errors: fault handling is undefined, and the recovery from the
    # recording's own errors is reported under its own name.
    assert report["metrics"]["frr"] is None
    assert report["undefined"]["frr"] == "no_injected_fault"
    recorded = report["recorded_errors"]
    assert (recorded["recovered"], recorded["trials"]) == (sum(faulted), len(faulted))
    assert recorded["rate"] == sum(faulted) / len(faulted)
    # The errors read from message text are named as inferred, and FRR as resting on them.
    inferred = sum(h in (OUTAGE, NO_SUCH_TOOL) for _, steps, _ in TRACES.values() for _, h in steps)
    assert report["source"]["derivation"]["outcome"]["inferred"] == inferred
    assert "frr" in report["source"]["inferred_figures"]

    # Gated with --skip-security alone, as docs/recordings.md says: nobody injected a fault, so
    # the fault floors (FRR, IRS) do not apply; the gate says so and decides on the rest.
    floors = ("--floor", "frr=0.5", "--floor", "pei=off")
    proc = _hb("gate", out["run_id"], "--db", db, "--skip-security", *floors, "--json")
    gate = json.loads(proc.stdout)
    assert gate["unmeasured"] == [], gate
    assert "fault floors (frr, irs) do not apply: no fault was injected" in gate["reasons"]
    assert not [c for c in gate["checks"] if c["metric"] in ("frr", "irs")]
    assert (proc.exit_code, gate["verdict"]) == (0, "pass"), gate
    # Nor does an IRS floor the user names: there is no injected fault to handle.
    proc = _hb("gate", out["run_id"], "--db", db, "--skip-security", *floors, "--floor", "irs=0.6")
    assert proc.exit_code == 0, proc.stdout
    # Without --skip-security the security gate is unmeasured: exit 3, IRS with it.
    proc = _hb("gate", out["run_id"], "--db", db, *floors, "--json")
    assert proc.exit_code == 3
    gate = json.loads(proc.stdout)
    assert gate["unmeasured"] == ["security"]


def test_a_call_answered_by_its_tool_span_is_not_answered_again(tmp_path: Path) -> None:
    from hbeval.importers import read_trials

    recording, _ = _files(tmp_path)
    trials = {t.task_id: t for t in read_trials("otlp-json", [recording])}
    for trace_id, (_, steps, _) in TRACES.items():
        t = trials[trace_id]
        assert t.tool_calls == len(steps)
        assert t.tool_errors == sum(_failed(h) for _, h in steps)
        starts = [e for e in t.events if e.kind == "tool_start"]
        from_input = [e for e in starts if e.attrs.get("answered_in") == "model_input"]
        assert len(from_input) == sum(h not in ("ok", "span_error") for _, h in steps)
        assert [e.tool for e in starts] == [tool for tool, _ in steps]  # type: ignore[attr-defined]


def test_reimporting_with_labels_under_the_same_run_id_says_why_it_is_refused(
    tmp_path: Path,
) -> None:
    recording, labels = _files(tmp_path)
    db = str(tmp_path / "h.db")
    first = _hb("import", "otlp-json", str(recording), "--db", db, "--json")
    assert first.exit_code == 0, first.stderr
    again = _hb("import", "otlp-json", str(recording), "--db", db, "--labels", str(labels))
    assert again.exit_code == 2
    assert "other options (--labels" in again.stderr and "never changed" in again.stderr
    run_id = json.loads(first.stdout)["run_id"]
    assert f"--run-id {run_id}-2" in again.stderr
    labelled = _hb(
        "import", "otlp-json", str(recording), "--db", db, "--labels", str(labels),
        "--run-id", f"{run_id}-2",
    )  # fmt: skip
    assert labelled.exit_code == 0, labelled.stderr
