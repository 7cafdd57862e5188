"""Telemetry in: the live span processor (hbeval.otel) and the ``otlp-json`` importer.

The LangGraph agent is real (create_agent, ToolNode, real tools); only the chat model is
scripted. OpenInference's own LangChain instrumentation emits the spans.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("langgraph")
pytest.importorskip("openinference.instrumentation.langchain")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, ToolException
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import hbeval.otel as hotel
from hbeval.importers import read_trials
from hbeval.otel import HBEvalSpanProcessor
from hbeval_core.events import dump_event
from hbeval_langgraph import HBEvalCallbackHandler
from tests.adapters.langgraph.test_langgraph_fixtures import ScriptedChatModel, call, inputs

SCRIPTS: dict[str, list[AIMessage]] = {
    # an error, then a changed call that works
    "recovers": [
        AIMessage("Looking it up.", tool_calls=[call("lookup", {"query": "bad A1"}, "c1")]),
        AIMessage("Trying the plain id.", tool_calls=[call("lookup", {"query": "A1"}, "c2")]),
        AIMessage("A1 is shipped."),
    ],
    # two parallel calls, one fails; then a blind retry that fails again
    "parallel": [
        AIMessage(
            "Both at once.",
            tool_calls=[
                call("lookup", {"query": "bad B2"}, "p1"),
                call("add", {"a": 2, "b": 3}, "p2"),
            ],
        ),
        AIMessage("Again.", tool_calls=[call("lookup", {"query": "bad B2"}, "p3")]),
        AIMessage("I could not find B2."),
    ],
    # no error at all
    "clean": [
        AIMessage("Adding.", tool_calls=[call("add", {"a": 1, "b": 1}, "k1")]),
        AIMessage("2."),
    ],
}


def _tools() -> list[Any]:
    def lookup(query: str) -> str:
        """Look an order up."""
        if "bad" in query:
            raise ToolException(f"order service returned 503 for {query!r}")
        return f"{query} is shipped"

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return [
        StructuredTool.from_function(lookup, handle_tool_error=True),
        StructuredTool.from_function(add),
    ]


@pytest.fixture(autouse=True)
def _sdk_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    # CrewAI's offline environment (set by other tests in this process) disables the SDK,
    # which then records nothing; these tests need it on.
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)


@pytest.fixture(scope="module")
def traced() -> Any:
    """Every script run once, watched by the callback handler and by OpenInference spans."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OTEL_SDK_DISABLED", raising=False)
        yield _trace_scripts()


def _trace_scripts() -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    processor = hotel.instrument(provider)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    handlers: dict[str, HBEvalCallbackHandler] = {}
    traces: dict[str, str] = {}
    try:
        for name, script in SCRIPTS.items():
            graph = create_agent(ScriptedChatModel(responses=list(script)), _tools())
            handler = HBEvalCallbackHandler(strict=True)
            before = set(processor.traces)
            processor.force_flush()
            graph.invoke(inputs(), config={"callbacks": [handler]})
            assert processor.force_flush(5000)
            new = set(processor.traces) - before
            assert len(new) == 1, new
            traces[name] = new.pop()
            handlers[name] = handler
    finally:
        instrumentor.uninstrument()
        hotel.uninstrument(provider)
    return {
        "handlers": handlers,
        "traces": traces,
        "processor": processor,
        "spans": exporter.get_finished_spans(),
    }


def _handler_counts(handler: HBEvalCallbackHandler) -> tuple[int, int]:
    events = list(handler.events)
    calls = sum(1 for e in events if e.kind == "tool_start")
    errors = sum(
        1
        for e in events
        if e.kind == "tool_error" or (e.kind == "tool_end" and e.status == "error")
    )
    return calls, errors


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_span_processor_agrees_with_the_callback_handler(
    traced: dict[str, Any], script: str
) -> None:
    handler = traced["handlers"][script]
    capture = traced["processor"].traces[traced["traces"][script]]
    assert capture.ended
    calls, errors = _handler_counts(handler)
    assert calls == sum(len(m.tool_calls) for m in SCRIPTS[script])  # what the script issued
    assert (capture.tool_calls, capture.tool_errors) == (calls, errors)
    assert capture.monitor.metrics["frr"] == handler.monitor.metrics["frr"]
    assert capture.monitor.undefined.get("frr") == handler.monitor.undefined.get("frr")
    assert capture.monitor.step_count == handler.monitor.step_count
    for name in ("pei", "ti"):  # the same steps, so the other step metrics agree too
        assert capture.monitor.metrics[name] == pytest.approx(handler.monitor.metrics[name])


def test_expected_errors_and_frr_by_hand(traced: dict[str, Any]) -> None:
    caps = {n: traced["processor"].traces[t] for n, t in traced["traces"].items()}
    assert [caps[n].tool_errors for n in SCRIPTS] == [1, 2, 0]
    # A failed call never succeeds: FRR is 0 with a tool error, undefined without one.
    assert caps["recovers"].monitor.metrics["frr"] == 0.0
    assert caps["clean"].monitor.metrics["frr"] is None
    assert caps["clean"].monitor.undefined["frr"] == "no_fault_observed"


def _otlp_json_lines(spans: Any) -> list[str]:
    """The SDK's own OTLP encoding, as OTLP/JSON lines (ids in hex, as the spec writes them)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans))

    def hexify(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (
                    base64.b64decode(v).hex()
                    if k in ("traceId", "spanId", "parentSpanId") and v
                    else hexify(v)
                )
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [hexify(v) for v in node]
        return node

    return [json.dumps(hexify(doc))]


def test_an_sdk_otlp_json_export_reimports_to_the_same_events(
    traced: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(_otlp_json_lines(traced["spans"])) + "\n", encoding="utf-8")
    trials = {t.task_id: t for t in read_trials("auto", [path], run_id="otel")}
    assert set(trials) == set(traced["traces"].values())

    def norm(events: Any) -> list[dict[str, Any]]:
        out = []
        for e in events:
            d = json.loads(dump_event(e))
            d.pop("run_id")
            if d["kind"] == "run_start":
                d.pop("input", None)  # the live processor sees the root span last
            out.append(d)
        return out

    for trace_id in traced["traces"].values():
        live = traced["processor"].traces[trace_id].events
        assert norm(trials[trace_id].events) == norm(live)


def test_base64_ids_from_a_proto3_json_dump_are_read_too(
    traced: dict[str, Any], tmp_path: Path
) -> None:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    path = tmp_path / "traces.json"
    path.write_text(MessageToJson(encode_spans(traced["spans"])), encoding="utf-8")
    trials = read_trials("otlp-json", [path])
    assert {t.task_id for t in trials} == set(traced["traces"].values())


# --------------------------------------------------------------------------- GenAI conventions
def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def _span(
    sid: str, parent: str, name: str, t: int, attrs: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": sid,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(t * 1_000_000),
        "endTimeUnixNano": str((t + 1) * 1_000_000),
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        **extra,
    }


def genai_request() -> dict[str, Any]:
    """A trace in the OTel GenAI conventions (semantic-conventions, docs/gen-ai/gen-ai-spans.md
    and gen-ai-agent-spans.md): invoke_agent root, chat spans with ``gen_ai.output.messages``
    tool-call parts, execute_tool spans; one tool fails with ``error.type``, status ERROR and an
    ``exception`` event."""
    first = json.dumps(
        [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": "Checking the weather."},
                    {
                        "type": "tool_call",
                        "id": "call_1",
                        "name": "get_weather",
                        "arguments": {"city": "Paris"},
                    },
                ],
            }
        ]
    )
    second = json.dumps(
        [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "call_2",
                        "name": "get_forecast",
                        "arguments": {"city": "Paris"},
                    },
                ],
            }
        ]
    )
    spans = [
        _span(
            "a000000000000001",
            "",
            "invoke_agent weather",
            0,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
        ),
        _span(
            "a000000000000002",
            "a000000000000001",
            "chat gpt-4o",
            1,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 40,
                "gen_ai.usage.output_tokens": 12,
                "gen_ai.output.messages": first,
            },
        ),
        _span(
            "a000000000000003",
            "a000000000000001",
            "execute_tool get_weather",
            3,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "error.type": "TimeoutError",
            },
            status={"code": 2, "message": "weather service timed out"},
            events=[
                {
                    "name": "exception",
                    "attributes": [
                        _kv("exception.type", "TimeoutError"),
                        _kv("exception.message", "weather service timed out"),
                    ],
                }
            ],
        ),
        _span(
            "a000000000000004",
            "a000000000000001",
            "chat gpt-4o",
            5,
            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": second},
        ),
        _span(
            "a000000000000005",
            "a000000000000001",
            "execute_tool get_forecast",
            7,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_forecast",
                "gen_ai.tool.call.id": "call_2",
                "gen_ai.tool.call.result": "sunny",
            },
        ),
    ]
    spans[0]["endTimeUnixNano"] = str(9 * 1_000_000)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", "w")]},
                "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}],
            }
        ]
    }


def test_genai_convention_trace_imports_from_the_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hbeval.cli import app

    path = tmp_path / "genai.json"
    path.write_text(json.dumps(genai_request()), encoding="utf-8")
    db = tmp_path / "hb.db"
    proc = CliRunner().invoke(app, ["import", "auto", str(path), "--db", str(db), "--json"])
    assert proc.exit_code == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["format"] == "otlp-json"
    assert (out["trials"], out["tool_calls"], out["tool_errors"], out["model_calls"]) == (
        1,
        2,
        1,
        2,
    )
    trial = read_trials("otlp-json", [path])[0]
    err = next(e for e in trial.events if e.kind == "tool_error")
    assert (err.tool, err.call_id, err.error, err.error_type) == (
        "get_weather",
        "call_1",
        "weather service timed out",
        "TimeoutError",
    )
    ends = [e for e in trial.events if e.kind == "model_end"]
    assert ends[0].usage.input_tokens == 40 and ends[0].tool_calls[0].args == {"city": "Paris"}


def test_a_span_without_an_id_is_refused_with_its_field(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hbeval.cli import app

    doc = genai_request()
    del doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(genai_request()) + "\n" + json.dumps(doc) + "\n", encoding="utf-8")
    proc = CliRunner().invoke(
        app, ["import", "otlp-json", str(path), "--db", str(tmp_path / "d.db")]
    )
    assert proc.exit_code == 2
    assert f"{path}:2:" in proc.stderr and "spans[2].spanId" in proc.stderr


# --------------------------------------------------------------------------- never break the host
def test_processor_errors_are_logged_once_and_never_reach_the_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken() -> Any:
        raise RuntimeError("monitor factory broke")

    provider = TracerProvider()
    processor = HBEvalSpanProcessor(monitor_factory=broken)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    with caplog.at_level(logging.WARNING, logger="hbeval.otel"):
        for i in range(3):
            with tracer.start_as_current_span(f"s{i}"):
                pass
        assert processor.force_flush(5000)
    assert processor.errors == 3
    assert len([r for r in caplog.records if "hbeval span processor" in r.message]) == 1
    processor.shutdown()


def test_a_full_queue_drops_spans_instead_of_blocking() -> None:
    processor = HBEvalSpanProcessor(max_queue=1)
    processor.shutdown()  # stop the worker, so nothing drains the queue
    processor._closed = False  # accept spans again, with no one reading them
    processor.on_end(object())
    processor.on_end(object())
    processor.on_end(object())
    assert processor.dropped == 2


def test_instrument_is_idempotent() -> None:
    provider = TracerProvider()
    try:
        assert hotel.instrument(provider) is hotel.instrument(provider)
    finally:
        hotel.uninstrument(provider)


def _one_live_tool_call(tool_attributes: dict[str, Any]) -> Any:
    """A store holding one live trace: an agent span around one get_weather tool span."""
    from hbeval.store import InMemoryStore

    store = InMemoryStore()
    provider = TracerProvider()
    processor = hotel.instrument(provider, store=store, run_id="live", agent_id="weather")
    tracer = provider.get_tracer("t")
    try:
        with tracer.start_as_current_span(
            "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            with tracer.start_as_current_span(
                "execute_tool get_weather",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    **tool_attributes,
                },
            ):
                pass
        assert processor.force_flush(5000)
    finally:
        hotel.uninstrument(provider)
    return store


def test_instrument_with_a_store_writes_each_ended_trace_as_a_trial() -> None:
    store = _one_live_tool_call({"error.type": "TimeoutError"})
    run = store.get_run("live")
    assert run is not None and run.agent_id == "weather" and run.battery == "otel:live"
    (trial,) = store.list_trials("live")
    kinds = [e.kind for e in store.iter_events("live", trial.trial_key)]
    assert kinds.count("tool_error") == 1 and kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert store.get_metrics("live", trial.trial_key).values["frr"] == 0.0


def test_auto_import_reads_the_environment_and_writes_the_store(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    db = tmp_path / "live.db"
    code = (
        "import hbeval.otel.auto as auto\n"
        "from opentelemetry import trace\n"
        "tracer = trace.get_tracer('t')\n"
        "with tracer.start_as_current_span('invoke_agent'):\n"
        "    with tracer.start_as_current_span('execute_tool lookup', attributes={\n"
        "        'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'lookup'}):\n"
        "        pass\n"
        "assert auto.processor.force_flush(5000)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OTEL_SDK_DISABLED"}
    env.update(HBEVAL_OTEL_STORE=str(db), HBEVAL_AGENT_ID="auto-agent", HBEVAL_RUN_ID="auto-run")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    from hbeval.store import open_store

    store = open_store(str(db))
    try:
        run = store.get_run("auto-run")
        assert run is not None and run.agent_id == "auto-agent"
        assert len(store.list_trials("auto-run")) == 1
    finally:
        store.close()
    env["HBEVAL_OTEL_DISABLED"] = "true"
    off = subprocess.run(
        [sys.executable, "-c", "import hbeval.otel.auto as a; assert a.processor is None"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert off.returncode == 0, off.stderr


def test_a_live_trace_is_stored_redacted_and_storable() -> None:
    """Spans come from agents nobody here wrote: what they carry is stored as a battery
    trial's trace is (secrets redacted, a lone surrogate replaced with a note)."""
    secret = "sk-ant-api03-" + "Z" * 40
    arguments = json.dumps({"city": "Paris\ud800", "auth": f"key {secret}"})
    store = _one_live_tool_call({"gen_ai.tool.call.arguments": arguments})
    (trial,) = store.list_trials("live")
    starts = [e for e in store.iter_events("live", trial.trial_key) if e.kind == "tool_start"]
    assert len(starts) == 1
    args = starts[0].args  # type: ignore[attr-defined]
    assert args["city"] == "Paris\ufffd" and secret not in args["auth"]
    assert any("lone surrogates" in n for n in starts[0].attrs["sanitised"])
