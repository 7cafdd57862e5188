"""The live metrics of a running agent, sent as OTel gauges when each trace ends.

``OtlpMetricsSink`` is an ``on_trace_end`` callback of ``hbeval.otel``'s span processor:
for every ended trace it POSTs an ``ExportMetricsServiceRequest`` to ``<endpoint>/v1/metrics``
with ``hbeval.live.<metric>`` gauges (PEI, FRR, IRS, TI; an undefined one sends no point) and
``hbeval.live.tool_calls`` / ``hbeval.live.tool_errors``, each point carrying the trace id and
the agent id. It runs on the processor's worker thread, never on the span's; a failure is the
processor's to count and log once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ._otlp import SCOPE, _attrs


class OtlpMetricsSink:
    """Send each ended trace's live metrics to an OTLP/HTTP receiver."""

    def __init__(
        self,
        endpoint: str,
        *,
        agent_id: str = "otel",
        headers: Mapping[str, str] | None = None,
        timeout: float = 5.0,
    ) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"export endpoint must be an http(s) URL, got {endpoint!r}")
        self.url = endpoint.rstrip("/") + "/v1/metrics"
        self.agent_id = agent_id
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.sent = 0

    def request(self, capture: Any) -> Any:
        """The ``ExportMetricsServiceRequest`` for one ended trace."""
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
        from opentelemetry.proto.resource.v1.resource_pb2 import Resource

        now = time.time_ns()
        common = _attrs({"hbeval.trace_id": capture.trace_id, "hbeval.agent_id": self.agent_id})
        values: dict[str, float] = {
            f"hbeval.live.{k}": float(v)
            for k, v in capture.monitor.metrics.items()
            if isinstance(v, (int, float))
        }
        values["hbeval.live.tool_calls"] = float(capture.tool_calls)
        values["hbeval.live.tool_errors"] = float(capture.tool_errors)
        metrics = [
            Metric(
                name=name,
                unit="1",
                gauge=Gauge(
                    data_points=[
                        NumberDataPoint(time_unix_nano=now, as_double=v, attributes=common)
                    ]
                ),
            )
            for name, v in sorted(values.items())
        ]
        return ExportMetricsServiceRequest(
            resource_metrics=[
                ResourceMetrics(
                    resource=Resource(attributes=_attrs({"service.name": self.agent_id})),
                    scope_metrics=[
                        ScopeMetrics(scope=InstrumentationScope(name=SCOPE), metrics=metrics)
                    ],
                )
            ]
        )

    def __call__(self, capture: Any) -> None:
        from ._send import post_otlp

        post_otlp(
            self.url,
            self.request(capture).SerializeToString(),
            headers=self.headers,
            timeout=self.timeout,
        )
        self.sent += 1
