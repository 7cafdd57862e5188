"""Live capture in one import: ``import hbeval.otel.auto``.

Attaches an :class:`~hbeval.otel.HBEvalSpanProcessor` to the global tracer provider,
configured from the environment:

* ``HBEVAL_OTEL_STORE``: a store (a path or ``sqlite:///path``) to write each ended trace to;
  unset, traces are kept in memory only (``processor.traces``).
* ``HBEVAL_AGENT_ID`` (default ``otel``) and ``HBEVAL_RUN_ID`` (default ``otel-live-<time>``).
* ``HBEVAL_OTEL_EXPORT_ENDPOINT``: an OTLP/HTTP base URL to send each ended trace's live
  metrics to, as gauges.
* ``HBEVAL_OTEL_DISABLED``: true, 1 or yes turns it off.

A configuration that cannot be used is logged and ignored: importing this module never raises.
"""

from __future__ import annotations

import logging
import os
from typing import Any

__all__ = ["processor"]

processor: Any = None
"""The attached processor, or None when disabled or when the configuration failed."""


def _configure() -> Any:
    if os.environ.get("HBEVAL_OTEL_DISABLED", "").strip().lower() in ("1", "true", "yes"):
        return None
    from . import instrument

    store = None
    where = os.environ.get("HBEVAL_OTEL_STORE")
    if where:
        from ..store import open_store

        store = open_store(where)
    kwargs: dict[str, Any] = {"agent_id": os.environ.get("HBEVAL_AGENT_ID") or "otel"}
    if os.environ.get("HBEVAL_RUN_ID"):
        kwargs["run_id"] = os.environ["HBEVAL_RUN_ID"]
    if os.environ.get("HBEVAL_OTEL_EXPORT_ENDPOINT"):
        kwargs["export_endpoint"] = os.environ["HBEVAL_OTEL_EXPORT_ENDPOINT"]
    return instrument(store=store, **kwargs)


try:
    processor = _configure()
except Exception as exc:  # capture never breaks the host, not even at import
    logging.getLogger("hbeval.otel").warning("hbeval.otel.auto is off: %s", exc)
