"""OTLP/JSON import grouped by session: ``--group-by session`` joins the traces that carry the
same ``session.id`` (OpenInference) or ``gen_ai.conversation.id`` (OTel GenAI), across files.

The traces are written here in OTLP/JSON by hand; expected counts are counted from them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.importers import read_trials


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _trace(trace_id: str, t0: int, session: tuple[str, str] | None, tools: list[bool]) -> list[Any]:
    """A root agent span, then one chat span and one tool span per entry of ``tools``
    (True: the tool fails with status ERROR)."""
    root_attrs = {"openinference.span.kind": "AGENT", "input.value": f"q{trace_id[-1]}"}
    if session is not None:
        root_attrs[session[0]] = session[1]
    root = f"{trace_id[:14]}00"
    spans = []
    t = t0
    for k, fails in enumerate(tools):
        call_id = f"{trace_id[-4:]}-{k}"
        out = json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "tool_call", "id": call_id, "name": "lookup", "arguments": {}}
                    ],
                }
            ]
        )
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{trace_id[:14]}{2 * k + 1:02x}",
                "parentSpanId": root,
                "name": "chat",
                "startTimeUnixNano": str(t * 1000),
                "endTimeUnixNano": str((t + 1) * 1000),
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    _kv("gen_ai.output.messages", out),
                ],
            }
        )
        spans.append(
            {
                "traceId": trace_id,
                "spanId": f"{trace_id[:14]}{2 * k + 2:02x}",
                "parentSpanId": root,
                "name": "execute_tool lookup",
                "startTimeUnixNano": str((t + 2) * 1000),
                "endTimeUnixNano": str((t + 3) * 1000),
                "attributes": [
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", "lookup"),
                    _kv("gen_ai.tool.call.id", call_id),
                ],
                "status": {"code": 2, "message": "lookup failed"} if fails else {},
            }
        )
        t += 4
    spans.append(
        {
            "traceId": trace_id,
            "spanId": root,
            "name": "agent",
            "startTimeUnixNano": str(t0 * 1000),
            "endTimeUnixNano": str((t + 1) * 1000),
            "attributes": [_kv(k, v) for k, v in root_attrs.items()],
        }
    )
    return spans


def _doc(*traces: list[Any]) -> str:
    spans = [s for tr in traces for s in tr]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


TRACES = {
    # trace id: (t0, session attribute, tool outcomes)
    "a" * 32: (0, ("session.id", "s1"), [False, True]),
    "b" * 32: (100, ("session.id", "s1"), [False]),
    "c" * 32: (200, ("gen_ai.conversation.id", "c9"), [True]),
    "d" * 32: (300, None, [False, False]),
}


def _files(tmp_path: Path) -> list[Path]:
    """Trace a in one file; b, c and d in another (a session spans both)."""
    built = {tid: _trace(tid, t0, sess, tools) for tid, (t0, sess, tools) in TRACES.items()}
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text(_doc(built["a" * 32]) + "\n", encoding="utf-8")
    two.write_text(_doc(built["b" * 32], built["c" * 32], built["d" * 32]) + "\n", encoding="utf-8")
    return [one, two]


def _expected_by_session() -> dict[str, tuple[int, int, int]]:
    """Per session key (trace id when none): (traces, tool calls, tool errors)."""
    out: dict[str, tuple[int, int, int]] = {}
    for tid, (_, sess, tools) in TRACES.items():
        key = sess[1] if sess else tid
        n, calls, errs = out.get(key, (0, 0, 0))
        out[key] = (n + 1, calls + len(tools), errs + sum(tools))
    return out


def test_default_is_one_trial_per_trace(tmp_path: Path) -> None:
    trials = read_trials("otlp-json", _files(tmp_path))
    assert sorted(t.task_id for t in trials) == sorted(TRACES)
    assert [t.tool_calls for t in sorted(trials, key=lambda t: t.task_id)] == [2, 1, 1, 2]


def test_group_by_session_joins_traces_across_files(tmp_path: Path) -> None:
    files = _files(tmp_path)
    want = _expected_by_session()
    assert want == {"s1": (2, 3, 1), "c9": (1, 1, 1), "d" * 32: (1, 2, 0)}
    trials = {t.task_id: t for t in read_trials("otlp-json", files, group_by="session")}
    assert set(trials) == set(want)
    for key, (traces, calls, errors) in want.items():
        t = trials[key]
        assert (t.tool_calls, t.tool_errors) == (calls, errors), key
        assert t.attrs["traces"] == traces
        kinds = [e.kind for e in t.events]
        assert kinds[0] == "run_start" and kinds[-1] == "run_end"
        assert kinds.count("run_start") == kinds.count("run_end") == 1
        assert "spans" not in t.attrs
    seqs = [e.seq for e in trials["s1"].events]
    assert seqs == list(range(len(seqs)))

    db = tmp_path / "hb.db"
    runner = CliRunner()
    by_trace = runner.invoke(
        app, ["import", "otlp-json", *map(str, files), "--db", str(db), "--json"]
    )
    by_session = runner.invoke(
        app,
        [
            "import",
            "otlp-json",
            *map(str, files),
            "--db",
            str(db),
            "--json",
            "--group-by",
            "session",
        ],
    )
    assert by_trace.exit_code == 0 and by_session.exit_code == 0, by_session.stderr
    a, b = json.loads(by_trace.stdout), json.loads(by_session.stdout)
    assert (a["trials"], b["trials"]) == (4, 3)
    assert a["tool_calls"] == b["tool_calls"] == 6
    # The grouping changes the trials, so it is part of the measurement fingerprint.
    assert a["measurement_fingerprint"] != b["measurement_fingerprint"]
    assert a["run_id"] != b["run_id"]


def test_group_by_session_is_refused_for_other_formats(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(_doc(_trace("e" * 32, 0, None, [False])) + "\n", encoding="utf-8")
    proc = CliRunner().invoke(
        app,
        ["import", "tau-bench", str(path), "--db", str(tmp_path / "d.db"), "--group-by", "session"],
    )
    assert proc.exit_code == 2
    assert "--group-by" in proc.stderr
    bad = CliRunner().invoke(
        app,
        ["import", "otlp-json", str(path), "--db", str(tmp_path / "d.db"), "--group-by", "user"],
    )
    assert bad.exit_code == 2 and "trace, session" in bad.stderr


def test_live_traces_say_how_each_call_was_tied_to_its_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A GenAI tool span with a call id is tied by id; an OpenInference one without is tied by
    tool name, which is inferred, so TI rests on an inferred field."""
    from opentelemetry.sdk.trace import TracerProvider

    import hbeval.otel as hotel

    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    provider = TracerProvider()
    processor = hotel.instrument(provider)
    tracer = provider.get_tracer("t")
    reply = json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "k1", "name": "lookup"}]}]
    )
    ids: dict[str, str] = {}
    try:
        for label, tool_attrs in (
            ("by_id", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "k1"}),
            ("by_name", {"openinference.span.kind": "TOOL"}),
        ):
            with tracer.start_as_current_span("agent") as root:
                with tracer.start_as_current_span(
                    "chat",
                    attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": reply},
                ):
                    pass
                with tracer.start_as_current_span(
                    "lookup", attributes={**tool_attrs, "gen_ai.tool.name": "lookup"}
                ):
                    pass
                ids[label] = format(root.get_span_context().trace_id, "032x")
        assert processor.force_flush(5000)
    finally:
        hotel.uninstrument(provider)
    by_id, by_name = processor.traces[ids["by_id"]], processor.traces[ids["by_name"]]
    assert by_id.derivation["link"] == {"by_id": 1} and by_id.inferred_figures == {}
    assert by_name.derivation["link"] == {"by_name": 1}
    assert set(by_name.inferred_figures) == {"ti"}
    assert by_id.derivation["outcome"] == by_name.derivation["outcome"] == {"absence_of_error": 1}
