"""Live metrics of long-running agents for Prometheus: ``serve_metrics`` and ``LiveMetrics``.

Quick start (an agent under ``hbeval_langgraph.instrument()``)::

    from hbeval_core.live import serve_metrics
    from hbeval_langgraph import instrument

    live = serve_metrics(9464, instrument(), agent_id="support")  # http://127.0.0.1:9464/metrics

Undefined metrics have no value sample: ``hbeval_metric_undefined{agent, metric, reason}`` is 1
instead. ``prometheus-client`` (extra ``[prometheus]``) is imported only when serving or
collecting.
"""

from __future__ import annotations

from ._prometheus import (
    DEFAULT_LATENCY_BUCKETS,
    DEFAULT_MAX_AGENTS,
    LIVE_GAUGE_METRICS,
    LiveMetrics,
    serve_metrics,
)

__all__ = [
    "DEFAULT_LATENCY_BUCKETS",
    "DEFAULT_MAX_AGENTS",
    "LIVE_GAUGE_METRICS",
    "LiveMetrics",
    "serve_metrics",
]
