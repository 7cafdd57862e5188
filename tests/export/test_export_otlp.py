"""``hbeval export otlp`` against a real OTLP/HTTP receiver on 127.0.0.1.

The receiver below is an HTTP server that decodes the protobuf bodies with
``opentelemetry-proto`` as a collector does. The run is a real battery run of the plain example
agent with injected faults, stored in SQLite; every expected count is taken from the stored
events and trial records, and the received spans are re-imported through ``otlp-json``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app

pytest.importorskip("opentelemetry.proto")


class Receiver:
    """An OTLP/HTTP receiver: decodes what it is sent, answers as a collector does."""

    def __init__(self, status: int = 200) -> None:
        self.traces: list[Any] = []
        self.metrics: list[Any] = []
        self.content_types: list[str] = []
        self.status = status
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as m
                from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as t

                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.content_types.append(self.headers["Content-Type"])
                if self.path == "/v1/traces":
                    req: Any = t.ExportTraceServiceRequest()
                    req.ParseFromString(body)
                    receiver.traces.append(req)
                    reply = t.ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    req = m.ExportMetricsServiceRequest()
                    req.ParseFromString(body)
                    receiver.metrics.append(req)
                    reply = m.ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_error(404)
                    return
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def spans(self) -> list[Any]:
        return [
            s
            for req in self.traces
            for rs in req.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        ]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    try:
        yield r
    finally:
        r.server.shutdown()
        r.server.server_close()


@pytest.fixture(scope="module")
def battery_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery
    from hbeval_plain.examples import careful, tasks

    db = tmp_path_factory.mktemp("export") / "hb.db"
    with open_store(str(db)) as store:
        report = run_battery(
            None,
            careful,
            tasks,
            Battery.hbeval(n_scenarios=6, seed=42),
            trials=2,
            store=store,
            agent_id="careful",
        )
    run_id = report.run.run_id
    assert run_id is not None
    return db, run_id


def _stored(db: Path, run_id: str) -> dict[str, Any]:
    """What the store holds, counted from its records (the final attempt of each trial)."""
    from hbeval.store import open_store

    out: dict[str, Any] = {"trials": {}, "report": None}
    with open_store(str(db), read_only=True) as store:
        stored = store.get_report(run_id)
        out["report"] = stored.to_dict() if stored is not None else None
        last: dict[str, int] = {}
        for a in store.list_attempts(run_id):
            last[a.trial_key] = max(last.get(a.trial_key, 0), a.attempt)
        for t in store.list_trials(run_id):
            events = list(store.iter_events(run_id, t.trial_key, attempt=last[t.trial_key]))
            out["trials"][t.trial_key] = {
                "outcome": t.outcome,
                "tools": sum(1 for e in events if e.kind == "tool_start"),
                "errors": sum(
                    1
                    for e in events
                    if e.kind == "tool_error" or (e.kind == "tool_end" and e.status == "error")
                ),
                "models": sum(1 for e in events if e.kind == "model_end"),
                "faults": [e for e in events if e.kind == "fault_injected"],
                "verdict_faults": (t.verdict or {}).get("faults") or [],
            }
    return out


def _attrs(kvs: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    out = {}
    for kv in kvs:
        v = MessageToDict(kv.value)
        out[kv.key] = next(iter(v.values())) if v else None
    return out


def test_a_stored_run_arrives_as_genai_spans_and_gauges(
    battery_run: tuple[Path, str], receiver: Receiver, tmp_path: Path
) -> None:
    db, run_id = battery_run
    want = _stored(db, run_id)
    proc = CliRunner().invoke(
        app,
        ["export", "otlp", run_id, "--db", str(db), "--endpoint", receiver.url, "--json"],
    )
    assert proc.exit_code == 0, proc.stderr
    sent = json.loads(proc.stdout)
    assert receiver.content_types == ["application/x-protobuf"] * 2

    spans = receiver.spans()
    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == len(want["trials"]) == sent["traces"] == 12
    assert len({s.trace_id for s in spans}) == len(roots)
    by_key = {_attrs(r.attributes)["hbeval.trial_key"]: r for r in roots}
    assert set(by_key) == set(want["trials"])
    n_faults = 0
    for key, trial in want["trials"].items():
        root = by_key[key]
        attrs = _attrs(root.attributes)
        assert attrs["gen_ai.operation.name"] == "invoke_agent"
        assert attrs["hbeval.outcome"] == trial["outcome"]
        kids = [s for s in spans if s.trace_id == root.trace_id and s.parent_span_id]
        tools = [s for s in kids if _attrs(s.attributes)["gen_ai.operation.name"] == "execute_tool"]
        chats = [s for s in kids if _attrs(s.attributes)["gen_ai.operation.name"] == "chat"]
        assert len(tools) == trial["tools"], key
        assert len(chats) == trial["models"], key
        assert sum(1 for s in tools if s.status.code == 2) == trial["errors"], key
        # Each injected fault is an event on its tool call, with the verdict's receipt.
        got = {
            _attrs(ev.attributes)["hbeval.fault.call_id"]: _attrs(ev.attributes)
            for s in tools
            for ev in s.events
            if ev.name == "hbeval.fault"
        }
        assert len(got) == len(trial["faults"]), key
        for f in trial["verdict_faults"]:
            assert got[f["call_id"]]["hbeval.fault.mode"] == f["mode"]
            assert got[f["call_id"]].get("hbeval.fault.delivered") == f["delivered"]
            assert got[f["call_id"]]["hbeval.fault.receipt"] == f["receipt"]
        n_faults += len(trial["faults"])
    assert n_faults > 0 and sent["fault_events"] == n_faults

    # Gauges: every defined figure of the report, none for an undefined one.
    report = want["report"]
    gauges = {
        m.name: m
        for req in receiver.metrics
        for rm in req.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }
    for name, value in report["metrics"].items():
        if value is None:
            assert f"hbeval.{name}" not in gauges
            assert f"hbeval.{name}" in sent["undefined"]
        else:
            (point,) = gauges[f"hbeval.{name}"].gauge.data_points
            assert point.as_double == pytest.approx(value)
            assert _attrs(point.attributes)["hbeval.run_id"] == run_id
    hat = {
        int(_attrs(p.attributes)["k"]): p.as_double
        for p in gauges["hbeval.pass_hat_k"].gauge.data_points
    }
    assert hat == {b["k"]: pytest.approx(b["value"]) for b in report["pass_hat_k"]}


def test_exported_spans_reimport_to_the_same_calls(
    battery_run: tuple[Path, str], receiver: Receiver, tmp_path: Path
) -> None:
    from google.protobuf.json_format import MessageToDict

    from hbeval.importers import read_trials

    db, run_id = battery_run
    want = _stored(db, run_id)
    proc = CliRunner().invoke(
        app, ["export", "otlp", run_id, "--db", str(db), "--endpoint", receiver.url]
    )
    assert proc.exit_code == 0, proc.stderr
    path = tmp_path / "export.jsonl"
    path.write_text(
        "\n".join(json.dumps(MessageToDict(req)) for req in receiver.traces) + "\n",
        encoding="utf-8",
    )
    trials = read_trials("otlp-json", [path])
    assert sorted((t.tool_calls, t.tool_errors) for t in trials) == sorted(
        (t["tools"], t["errors"]) for t in want["trials"].values()
    )
    assert sum(t.model_calls for t in trials) == sum(t["models"] for t in want["trials"].values())


def test_a_report_file_sends_trials_and_verdicts(
    battery_run: tuple[Path, str], receiver: Receiver, tmp_path: Path
) -> None:
    db, run_id = battery_run
    want = _stored(db, run_id)
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(want["report"]), encoding="utf-8")
    proc = CliRunner().invoke(
        app, ["export", "otlp", str(report_path), "--endpoint", receiver.url, "--json"]
    )
    assert proc.exit_code == 0, proc.stderr
    spans = receiver.spans()
    assert len(spans) == len(want["report"]["trials"])  # roots only: a report has no events
    faults = sum(len(t["faults"]) for t in want["report"]["trials"])
    assert sum(1 for s in spans for ev in s.events if ev.name == "hbeval.fault") == faults


def test_a_refusing_receiver_or_a_bad_source_exits_2(
    battery_run: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = battery_run
    refusing = Receiver(status=503)
    refusing.thread.start()
    try:
        proc = CliRunner().invoke(
            app, ["export", "otlp", run_id, "--db", str(db), "--endpoint", refusing.url]
        )
    finally:
        refusing.server.shutdown()
        refusing.server.server_close()
    assert proc.exit_code == 2 and "HTTP 503" in proc.stderr
    missing = CliRunner().invoke(
        app, ["export", "otlp", "no-such-run", "--db", str(db), "--endpoint", "http://127.0.0.1:9"]
    )
    assert missing.exit_code == 2 and "no run 'no-such-run'" in missing.stderr
    bad = tmp_path / "r.json"
    bad.write_text('{"run_id": "x"}', encoding="utf-8")
    proc = CliRunner().invoke(app, ["export", "otlp", str(bad), "--endpoint", "http://127.0.0.1:9"])
    assert proc.exit_code == 2 and "'format'" in proc.stderr  # no hbeval-report/1 report


def test_an_edited_report_file_is_not_sent(
    battery_run: tuple[Path, str], receiver: Receiver, tmp_path: Path
) -> None:
    """Its gauges would carry a figure hbeval never computed: nothing reaches the receiver."""
    db, run_id = battery_run
    report = _stored(db, run_id)["report"]
    report["pass_rate"]["rate"] = 1.0 if report["pass_rate"]["rate"] != 1.0 else 0.5
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    proc = CliRunner().invoke(app, ["export", "otlp", str(path), "--endpoint", receiver.url])
    assert proc.exit_code == 2
    assert "do not follow from its own trials" in proc.stderr and "pass_rate.rate" in proc.stderr
    assert receiver.traces == [] and receiver.metrics == []


def test_the_live_processor_sends_each_traces_metrics(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    import hbeval.otel as hotel

    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    provider = TracerProvider()
    processor = hotel.instrument(provider, agent_id="live-agent", export_endpoint=receiver.url)
    tracer = provider.get_tracer("t")
    outcomes = [True, False, False]  # three tool calls, the first one fails
    try:
        with tracer.start_as_current_span(
            "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
        ) as root:
            for k, fails in enumerate(outcomes):
                attrs = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.id": f"c{k}",
                }
                if fails:
                    attrs["error.type"] = "TimeoutError"
                with tracer.start_as_current_span("execute_tool lookup", attributes=attrs):
                    pass
            trace_id = format(root.get_span_context().trace_id, "032x")
        assert processor.force_flush(5000)
    finally:
        hotel.uninstrument(provider)
    assert processor.errors == 0
    (req,) = receiver.metrics
    gauges = {
        m.name: m for rm in req.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    (calls,) = gauges["hbeval.live.tool_calls"].gauge.data_points
    (errors,) = gauges["hbeval.live.tool_errors"].gauge.data_points
    assert (calls.as_double, errors.as_double) == (len(outcomes), sum(outcomes))
    assert _attrs(calls.attributes) == {
        "hbeval.trace_id": trace_id,
        "hbeval.agent_id": "live-agent",
    }
    live = processor.traces[trace_id].monitor.metrics
    for name, value in live.items():
        if value is None:
            assert f"hbeval.live.{name}" not in gauges
        else:
            assert gauges[f"hbeval.live.{name}"].gauge.data_points[0].as_double == value


def test_spans_go_in_batches_of_trials(battery_run: tuple[Path, str], receiver: Receiver) -> None:
    db, run_id = battery_run
    want = _stored(db, run_id)
    proc = CliRunner().invoke(
        app,
        [
            *("export", "otlp", run_id, "--db", str(db), "--endpoint", receiver.url),
            *("--trials-per-request", "5", "--json"),
        ],
    )
    assert proc.exit_code == 0, proc.stderr
    n = len(want["trials"])
    assert json.loads(proc.stdout)["requests"] == len(receiver.traces) == -(-n // 5)
    roots = [s for s in receiver.spans() if not s.parent_span_id]
    assert len(roots) == n
    expected = sum(1 + t["tools"] + t["models"] for t in want["trials"].values())
    assert len(receiver.spans()) == expected
