"""Send a run to any OpenTelemetry collector: trials as GenAI spans, figures as gauges (OTLP/HTTP).

``export_otlp(source, endpoint=URL, store=STORE)`` reads a run (a run id in ``store``, with
every trial's events; or a report file, trials only) and POSTs its
``ExportTraceServiceRequest`` to ``URL/v1/traces`` and its ``ExportMetricsServiceRequest`` to
``URL/v1/metrics`` as protobuf (``application/x-protobuf``), as OTLP/HTTP exporters do. The
mapping is in ``_otlp``, the sending in ``_send``. ``OtlpMetricsSink`` sends a running agent's live metrics the same way
(``hbeval.otel.instrument(export_endpoint=URL)``). Needs the ``[otel]`` extra
(``opentelemetry-proto``).

``serve_metrics`` serves the live metrics of running agents to Prometheus instead (extra
``[prometheus]``): ``LiveMetrics`` per agent, undefined metrics as their own sample, never 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ExportError": "._send",
    "export_otlp": "._send",
    "load_run": "._send",
    "post_otlp": "._send",
    "ExportSummary": "._otlp",
    "TrialSource": "._otlp",
    "build_metrics_request": "._otlp",
    "build_trace_request": "._otlp",
    "OtlpMetricsSink": "._live",
    "DEFAULT_LATENCY_BUCKETS": "._prometheus",
    "DEFAULT_MAX_AGENTS": "._prometheus",
    "LIVE_GAUGE_METRICS": "._prometheus",
    "LiveMetrics": "._prometheus",
    "serve_metrics": "._prometheus",
}

__all__ = [
    "DEFAULT_LATENCY_BUCKETS",
    "DEFAULT_MAX_AGENTS",
    "LIVE_GAUGE_METRICS",
    "ExportError",
    "ExportSummary",
    "LiveMetrics",
    "OtlpMetricsSink",
    "TrialSource",
    "build_metrics_request",
    "build_trace_request",
    "export_otlp",
    "load_run",
    "post_otlp",
    "serve_metrics",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from ._live import OtlpMetricsSink
    from ._otlp import ExportSummary, TrialSource, build_metrics_request, build_trace_request
    from ._prometheus import (
        DEFAULT_LATENCY_BUCKETS,
        DEFAULT_MAX_AGENTS,
        LIVE_GAUGE_METRICS,
        LiveMetrics,
        serve_metrics,
    )
    from ._send import ExportError, export_otlp, load_run, post_otlp
