"""A run as OTLP: trials as OTel GenAI spans, the report's figures as OTel gauges.

**Traces.** One trace per trial (ids derived from the run id and trial key, so exporting again
sends the same ids). Its root span ``invoke_agent <agent>`` carries the verdict as ``hbeval.*``
attributes (outcome, passed, pass basis, severity, faulted, fault type, violations) and the
trial's faults as span events ``hbeval.fault`` with their receipts (delivered, receipt). With
the trial's stored events (a run id from the store), each model reply becomes a ``chat`` span
(``gen_ai.request.model``, ``gen_ai.usage.*``, ``gen_ai.output.messages`` with its text and
tool-call parts) and each tool call an ``execute_tool`` span (``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``; a failed
call has status ERROR, ``error.type`` and an ``exception`` event; an injected fault is a
``hbeval.fault`` event with its receipt). These are the attributes ``hbeval import otlp-json``
reads, so an exported run re-imports to the same tool calls and errors.

**Metrics.** One gauge per defined figure: ``hbeval.<metric>`` for FRR, PEI, IRS, TI, CSI...,
``hbeval.pass_rate``, ``hbeval.pass_hat_k`` and ``hbeval.pass_at_k`` (attribute ``k``), with
``hbeval.run_id``, ``hbeval.agent_id`` and ``hbeval.measurement_fingerprint`` on every point.
An undefined figure sends no point (never a zero); the summary lists it with its reason.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..scoring._view import section

if TYPE_CHECKING:
    from ..scoring import Report

RESULT_LIMIT = 4096
"""Tool results and replies longer than this many characters are cut in span attributes."""
SCOPE = "hbeval"


@dataclass
class TrialSource:
    """One trial to export: its report entry and, when the store has them, its events."""

    trial: Mapping[str, Any]
    events: Sequence[Any] = ()


@dataclass
class ExportSummary:
    """What was sent: counts, the figures left out (undefined) and the receiver's replies."""

    run_id: str
    traces: int = 0
    spans: int = 0
    tool_spans: int = 0
    model_spans: int = 0
    fault_events: int = 0
    metrics: int = 0
    data_points: int = 0
    undefined: dict[str, str] = field(default_factory=dict)
    rejected_spans: int = 0
    rejected_data_points: int = 0
    requests: int = 0
    """Trace requests sent (spans go in batches of trials)."""
    endpoint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


def _hex_id(*parts: str, size: int) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()[:size]


def _value(v: Any) -> Any:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue

    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):  # past 64 bits OTLP has no integer for it: sent as its digits
        return AnyValue(int_value=v) if -(2**63) <= v < 2**63 else AnyValue(string_value=str(v))
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, (list, tuple)):
        return AnyValue(array_value=ArrayValue(values=[_value(x) for x in v]))
    if isinstance(v, str):
        return AnyValue(string_value=v)
    return AnyValue(string_value=json.dumps(v, ensure_ascii=False, default=str))


def _attrs(items: Mapping[str, Any]) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    return [KeyValue(key=k, value=_value(v)) for k, v in items.items() if v is not None]


def _cut(text: Any) -> str:
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return s if len(s) <= RESULT_LIMIT else s[:RESULT_LIMIT] + f"... [{len(s)} chars]"


class _Clock:
    """Span times: an event's own ``ts`` when it has one, else a step after the last time."""

    def __init__(self, base: float) -> None:
        self.last = _nanos(base) or 0

    def at(self, ts: float | None) -> int:
        """A time OTLP can carry (nanoseconds from 1970 in 64 bits): a recorded time before
        1970 or past that range counts as no time (a step after the last one)."""
        ns = _nanos(ts)
        if ns is None:
            ns = self.last + 1000
        self.last = max(self.last, ns)
        return ns


def _nanos(ts: Any) -> int | None:
    """``ts`` seconds as nanoseconds when it is a time OTLP can carry, else None."""
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not 0 <= ts < 9.2e9:
        return None  # NaN fails the comparison too
    return int(ts * 1e9)


def _verdict_attrs(trial: Mapping[str, Any]) -> dict[str, Any]:
    verdict = trial.get("verdict") if isinstance(trial.get("verdict"), Mapping) else {}
    assert isinstance(verdict, Mapping)
    return {
        "hbeval.trial_key": trial.get("trial_key"),
        "hbeval.task_id": trial.get("task_id"),
        "hbeval.scenario_index": trial.get("scenario_index"),
        "hbeval.trial_index": trial.get("trial_index"),
        "hbeval.fault_type": trial.get("fault_type"),
        "hbeval.domain": trial.get("domain"),
        "hbeval.outcome": trial.get("outcome"),
        "hbeval.verdict.passed": verdict.get("passed"),
        "hbeval.verdict.pass_basis": verdict.get("pass_basis"),
        "hbeval.verdict.severity": verdict.get("severity"),
        "hbeval.verdict.faulted": verdict.get("faulted"),
        "hbeval.verdict.fault_basis": verdict.get("fault_basis"),
        "hbeval.verdict.run_status": verdict.get("run_status"),
        "hbeval.verdict.constraint_violations": list(verdict.get("constraint_violations") or ())
        or None,
        "hbeval.verdict.forbidden_tools_run": list(verdict.get("forbidden_tools_run") or ())
        or None,
    }


def _fault_event(fault: Mapping[str, Any], ns: int, extra: Mapping[str, Any]) -> Any:
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    return Span.Event(
        time_unix_nano=ns,
        name="hbeval.fault",
        attributes=_attrs(
            {
                "hbeval.fault.mode": fault.get("mode"),
                "hbeval.fault.target": fault.get("target"),
                "hbeval.fault.call_id": fault.get("call_id"),
                "hbeval.fault.effect": fault.get("effect"),
                "hbeval.fault.delivered": fault.get("delivered"),
                "hbeval.fault.receipt": fault.get("receipt"),
                **extra,
            }
        ),
    )


class _TrialSpans:
    """Builds one trial's spans from its events, in order (model, tool and fault events)."""

    def __init__(self, run_id: str, agent_id: str, trial: Mapping[str, Any], base: float) -> None:
        self.run_id, self.agent_id, self.trial = run_id, agent_id, trial
        self.key = str(trial.get("trial_key"))
        self.trace_id = _hex_id(run_id, self.key, size=16)
        self.root_id = _hex_id(run_id, self.key, "root", size=8)
        self.clock = _Clock(base)
        self.counts = {"tool": 0, "model": 0, "fault": 0}
        self.faults = [f for f in (trial.get("faults") or ()) if isinstance(f, Mapping)]
        self.receipts = {str(f.get("call_id")): f for f in self.faults if f.get("call_id")}
        self.children: list[Any] = []
        self.open_model: dict[str, tuple[int, Any]] = {}
        self.open_tool: dict[str, tuple[int, Any]] = {}
        self.pending_faults: dict[str, list[Any]] = {}
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.run_error: str | None = None

    def _span(self, what: str, call_id: str, name: str, began: int, ns: int, **kw: Any) -> Any:
        from opentelemetry.proto.trace.v1.trace_pb2 import Span

        return Span(
            trace_id=self.trace_id,
            span_id=_hex_id(self.run_id, self.key, what, call_id, size=8),
            parent_span_id=self.root_id,
            name=name,
            start_time_unix_nano=began,
            end_time_unix_nano=ns,
            **kw,
        )

    def feed(self, e: Any) -> None:
        """Take one event."""
        kind = getattr(e, "kind", None)
        ns = self.clock.at(getattr(e, "ts", None))
        self.start_ns = ns if self.start_ns is None else self.start_ns
        self.end_ns = ns
        if kind == "model_start":
            self.open_model[e.call_id] = (ns, e)
        elif kind == "model_end":
            self._model(e, ns)
        elif kind == "tool_start":
            self.open_tool[e.call_id] = (ns, e)
        elif kind == "fault_injected":
            self._fault(e, ns)
        elif kind in ("tool_end", "tool_error"):
            self._tool(e, ns)
        elif kind == "run_end" and getattr(e, "status", "ok") != "ok":
            self.run_error = str(e.error or e.status)

    def _model(self, e: Any, ns: int) -> None:
        from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

        began, started = self.open_model.pop(e.call_id, (ns, None))
        parts: list[dict[str, Any]] = []
        if e.text:
            parts.append({"type": "text", "content": _cut(e.text)})
        for c in e.tool_calls:
            parts.append({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.args})
        usage = e.usage
        model = started.model if started is not None else None
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
            "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": parts}], ensure_ascii=False, default=str
            ),
        }
        status = Status(code=Status.STATUS_CODE_ERROR, message=e.error) if e.error else Status()
        self.children.append(
            self._span(
                "model",
                e.call_id,
                f"chat {model}" if model else "chat",
                began,
                ns,
                kind=Span.SPAN_KIND_CLIENT,
                attributes=_attrs(attrs),
                status=status,
            )
        )
        self.counts["model"] += 1

    def _fault(self, e: Any, ns: int) -> None:
        receipt = self.receipts.get(str(e.call_id), {})
        self.pending_faults.setdefault(str(e.call_id), []).append(
            _fault_event(
                {
                    "mode": e.mode,
                    "target": e.tool,
                    "call_id": e.call_id,
                    "effect": e.effect,
                    "delivered": receipt.get("delivered"),
                    "receipt": receipt.get("receipt"),
                },
                ns,
                {
                    "hbeval.fault.injected": e.injected,
                    "hbeval.fault.observed": e.observed,
                    "hbeval.fault.plan_id": e.plan_id,
                    "hbeval.fault.fault_id": e.fault_id,
                },
            )
        )

    def _tool(self, e: Any, ns: int) -> None:
        from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

        began, started = self.open_tool.pop(e.call_id, (ns, None))
        failed = e.kind == "tool_error" or getattr(e, "status", "ok") == "error"
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": e.tool,
            "gen_ai.tool.call.id": e.call_id,
            "gen_ai.tool.call.arguments": json.dumps(
                started.args if started is not None else {}, ensure_ascii=False, default=str
            ),
        }
        events = self.pending_faults.pop(str(e.call_id), [])
        status = Status()
        if failed:
            text = _cut(e.error if e.kind == "tool_error" else e.result)
            etype = getattr(e, "error_type", None) or "ToolError"
            attrs["error.type"] = etype
            status = Status(code=Status.STATUS_CODE_ERROR, message=text)
            events.append(
                Span.Event(
                    time_unix_nano=ns,
                    name="exception",
                    attributes=_attrs({"exception.type": etype, "exception.message": text}),
                )
            )
        else:
            attrs["gen_ai.tool.call.result"] = _cut(e.result)
        self.counts["fault"] += sum(1 for ev in events if ev.name == "hbeval.fault")
        self.children.append(
            self._span(
                "tool",
                e.call_id,
                f"execute_tool {e.tool}",
                began,
                ns,
                kind=Span.SPAN_KIND_INTERNAL,
                attributes=_attrs(attrs),
                events=events,
                status=status,
            )
        )
        self.counts["tool"] += 1

    def root(self, has_events: bool) -> Any:
        """The trial's root span, carrying the verdict (and faults no tool span holds)."""
        from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

        if not has_events:  # a report file: the faults come from the trial's verdict
            self.start_ns = self.end_ns = self.clock.at(None)
            events = [_fault_event(f, self.start_ns, {}) for f in self.faults]
        else:  # faults on calls that never ended stay on the root
            events = [ev for evs in self.pending_faults.values() for ev in evs]
        self.counts["fault"] += len(events)
        assert self.start_ns is not None and self.end_ns is not None
        status = (
            Status(code=Status.STATUS_CODE_ERROR, message=self.run_error)
            if self.run_error
            else Status()
        )
        return Span(
            trace_id=self.trace_id,
            span_id=self.root_id,
            name=f"invoke_agent {self.agent_id}",
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=self.start_ns,
            end_time_unix_nano=max(self.end_ns, self.start_ns),
            attributes=_attrs(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.id": self.agent_id,
                    "gen_ai.agent.name": self.agent_id,
                    "hbeval.run_id": self.run_id,
                    **_verdict_attrs(self.trial),
                }
            ),
            events=events,
            status=status,
        )


def trial_spans(
    run_id: str, agent_id: str, src: TrialSource, base_time: float
) -> tuple[list[Any], dict[str, int]]:
    """The spans of one trial (root first) and counts of what they hold."""
    b = _TrialSpans(run_id, agent_id, src.trial, base_time)
    for e in src.events:
        b.feed(e)
    root = b.root(bool(src.events))
    return [root, *b.children], b.counts


def _resource(run_id: str, agent_id: str, fingerprint: str | None) -> Any:
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource

    return Resource(
        attributes=_attrs(
            {
                "service.name": agent_id,
                "hbeval.run_id": run_id,
                "hbeval.measurement_fingerprint": fingerprint,
            }
        )
    )


def _run_identity(report: Report) -> tuple[str, str, str | None, float]:
    run = section(report, "run") if isinstance(section(report, "run"), Mapping) else {}
    assert isinstance(run, Mapping)
    fps = (
        section(report, "fingerprints")
        if isinstance(section(report, "fingerprints"), Mapping)
        else {}
    )
    assert isinstance(fps, Mapping)
    run_id = str(report.run_id or run.get("run_id"))
    agent_id = str(run.get("agent_id") or "agent")
    started = run.get("started_at")
    base = float(started) if isinstance(started, (int, float)) else time.time()
    return run_id, agent_id, fps.get("measurement"), base


def build_trace_request(
    report: Report,
    trials: Iterable[TrialSource],
    summary: ExportSummary,
    *,
    first_index: int = 0,
) -> Any:
    """The ``ExportTraceServiceRequest`` of a run's trials (counts added to ``summary``)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

    run_id, agent_id, fingerprint, base = _run_identity(report)
    spans: list[Any] = []
    for i, src in enumerate(trials, start=first_index):
        trial_spans_, counts = trial_spans(run_id, agent_id, src, base + i)
        spans.extend(trial_spans_)
        summary.traces += 1
        summary.tool_spans += counts["tool"]
        summary.model_spans += counts["model"]
        summary.fault_events += counts["fault"]
    summary.spans += len(spans)
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=_resource(run_id, agent_id, fingerprint),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name=SCOPE), spans=spans)],
            )
        ]
    )


def _points(
    report: Report,
) -> tuple[dict[str, list[tuple[float, dict[str, Any]]]], dict[str, str]]:
    """``{metric name: [(value, extra attributes)]}`` and the undefined figures' reasons."""
    out: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    undefined: dict[str, str] = {}
    reasons = report.undefined
    for name, value in report.metrics.model_dump(mode="json").items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"hbeval.{name}"] = [(float(value), {})]
        else:
            undefined[f"hbeval.{name}"] = str(reasons.get(name) or "undefined")
    rate = report.pass_rate
    if rate.rate is not None:
        out["hbeval.pass_rate"] = [(float(rate.rate), {})]
    else:
        undefined["hbeval.pass_rate"] = str(rate.undefined.get("rate") or "undefined")
    for block_name, blocks in (("pass_hat_k", report.pass_hat_k), ("pass_at_k", report.pass_at_k)):
        for block in blocks:
            k, value = block.k, block.value
            if isinstance(value, (int, float)):
                out.setdefault(f"hbeval.{block_name}", []).append((float(value), {"k": k}))
            else:
                why = block.undefined.get("value")
                undefined[f"hbeval.{block_name}[k={k}]"] = str(why or "undefined")
    return out, undefined


def build_metrics_request(report: Report, summary: ExportSummary) -> Any:
    """The ``ExportMetricsServiceRequest`` of a report's defined figures (gauges)."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.metrics.v1.metrics_pb2 import (
        Gauge,
        Metric,
        NumberDataPoint,
        ResourceMetrics,
        ScopeMetrics,
    )

    run_id, agent_id, fingerprint, base = _run_identity(report)
    run = section(report, "run") if isinstance(section(report, "run"), Mapping) else {}
    assert isinstance(run, Mapping)
    ended = run.get("ended_at")
    ns = _nanos(ended) or _nanos(base) or time.time_ns()
    common = {
        "hbeval.run_id": run_id,
        "hbeval.agent_id": agent_id,
        "hbeval.measurement_fingerprint": fingerprint,
    }
    points, undefined = _points(report)
    metrics = [
        Metric(
            name=name,
            unit="1",
            gauge=Gauge(
                data_points=[
                    NumberDataPoint(
                        time_unix_nano=ns, as_double=v, attributes=_attrs({**common, **extra})
                    )
                    for v, extra in values
                ]
            ),
        )
        for name, values in sorted(points.items())
    ]
    summary.metrics += len(metrics)
    summary.data_points += sum(len(v) for v in points.values())
    summary.undefined.update(undefined)
    return ExportMetricsServiceRequest(
        resource_metrics=[
            ResourceMetrics(
                resource=_resource(run_id, agent_id, fingerprint),
                scope_metrics=[
                    ScopeMetrics(scope=InstrumentationScope(name=SCOPE), metrics=metrics)
                ],
            )
        ]
    )
