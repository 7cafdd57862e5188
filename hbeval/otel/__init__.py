"""Live capture from OpenTelemetry: GenAI / OpenInference spans become hb-events and live metrics.

Enable it in one line (needs the ``[otel]`` extra, ``opentelemetry-sdk``)::

    import hbeval.otel

    processor = hbeval.otel.instrument()   # attaches to the global tracer provider
    ...                                          # run the instrumented agent
    for trace_id, capture in processor.traces.items():
        print(trace_id, capture.monitor.metrics)

Any instrumentation that emits OTel GenAI spans (``gen_ai.operation.name``) or OpenInference
spans (``openinference.span.kind``) feeds it; how spans map to events is in
``hbeval.importers._spans``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ._processor import HBEvalSpanProcessor, TraceCapture, span_data
from ._store import StoreSink

__all__ = [
    "HBEvalSpanProcessor",
    "StoreSink",
    "TraceCapture",
    "instrument",
    "span_data",
    "uninstrument",
]

_lock = threading.Lock()
_installed: dict[int, tuple[Any, HBEvalSpanProcessor]] = {}


def instrument(
    tracer_provider: Any = None,
    *,
    store: Any = None,
    agent_id: str = "otel",
    export_endpoint: str | None = None,
    export_headers: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> HBEvalSpanProcessor:
    """Attach an :class:`HBEvalSpanProcessor` to ``tracer_provider`` and return it. Idempotent.

    Without a provider, the global one is used; when that is not an SDK provider (nothing set
    one up yet), an SDK ``TracerProvider`` is created and made global. With ``store`` every
    ended trace is written there as a trial of one live run (:class:`StoreSink`, agent
    ``agent_id``). With ``export_endpoint`` (an OTLP/HTTP base URL) each ended trace's live
    metrics are also sent there as gauges (``hbeval.export.OtlpMetricsSink``), from the
    worker thread. ``kwargs`` go to the processor (``monitor_factory``, ``on_event``,
    ``on_trace_end``, ``max_queue``, ...).
    """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    with _lock:
        provider = tracer_provider
        if provider is None:
            provider = trace.get_tracer_provider()
            if not isinstance(provider, TracerProvider):
                provider = TracerProvider()
                trace.set_tracer_provider(provider)
        key = id(provider)
        if key in _installed:
            return _installed[key][1]
        sinks: list[Any] = []
        if store is not None:
            sinks.append(StoreSink(store, run_id=kwargs.get("run_id"), agent_id=agent_id))
        if export_endpoint is not None:
            from ..export import OtlpMetricsSink

            sinks.append(
                OtlpMetricsSink(export_endpoint, agent_id=agent_id, headers=export_headers)
            )
        if sinks:
            user_end = kwargs.pop("on_trace_end", None)

            def on_trace_end(capture: TraceCapture) -> None:
                for sink in sinks:
                    sink(capture)
                if user_end is not None:
                    user_end(capture)

            kwargs["on_trace_end"] = on_trace_end
        processor = HBEvalSpanProcessor(**kwargs)
        provider.add_span_processor(processor)
        _installed[key] = (provider, processor)
        return processor


def uninstrument(tracer_provider: Any = None) -> None:
    """Stop the processor ``instrument`` attached (to this provider, or to every provider).

    The SDK cannot remove a span processor; a stopped one ignores further spans.
    """
    with _lock:
        keys = list(_installed) if tracer_provider is None else [id(tracer_provider)]
        for key in keys:
            entry = _installed.pop(key, None)
            if entry is not None:
                entry[1].shutdown()
