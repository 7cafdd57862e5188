"""A run to an OTLP/HTTP receiver: read it, check it, build both requests, POST them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._otlp import (
    ExportSummary,
    TrialSource,
    build_metrics_request,
    build_trace_request,
)

__all__ = ["CONTENT_TYPE", "ExportError", "export_otlp", "load_run", "post_otlp"]

CONTENT_TYPE = "application/x-protobuf"


class ExportError(ValueError):
    """The run cannot be read, or the receiver refused what was sent."""


def load_run(
    source: str | Path | Mapping[str, Any], store: Any = None
) -> tuple[dict[str, Any], list[TrialSource]]:
    """The report and the trials of a run id in ``store``, or of a report file or mapping."""
    if isinstance(source, Mapping):
        _check(source, "report")
        return dict(source), [TrialSource(t) for t in _trials(source, "report")]
    path = Path(source)
    if str(source).endswith(".json") or (path.is_file() and store is None):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ExportError(f"cannot read report {str(source)!r}: {exc}") from None
        if not isinstance(report, Mapping):
            raise ExportError(f"{source}: a report is a JSON object")
        _check(report, str(source))
        return dict(report), [TrialSource(t) for t in _trials(report, str(source))]
    if store is None:
        raise ExportError(f"{source!r} is not a report file, and no store was given to find it")
    run_id = str(source)
    report = store.get_report(run_id)
    if report is None:
        raise ExportError(f"no run {run_id!r} with a report in the store")
    _check(report, f"run {run_id}")
    from ..store.protocol import final_attempts

    finals = final_attempts(store, run_id)
    out = []
    for t in _trials(report, run_id):
        key = str(t.get("trial_key"))
        final = finals.get(key)
        events = list(store.iter_events(run_id, key, attempt=final.attempt if final else 0))
        out.append(TrialSource(t, events))
    return dict(report), out


def _check(report: Mapping[str, Any], where: str) -> None:
    """Refuse a report that is no ``hbeval-report/1`` report, or whose figures its own trials
    do not give (edited after hbeval built it): its gauges would send them on."""
    from ..scoring._recheck import describe, report_discrepancies
    from ..scoring._report_model import ReportFormatError, validate_report

    try:
        validate_report(report)
    except ReportFormatError as exc:
        raise ExportError(f"{where}: {exc}") from None
    found = report_discrepancies(report)
    if found:
        raise ExportError(
            f"{where}: the report's figures do not follow from its own trials "
            f"({describe(found)}); it was changed after hbeval built it"
        )


def _trials(report: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    trials = report.get("trials")
    if not isinstance(trials, list) or not all(isinstance(t, Mapping) for t in trials):
        raise ExportError(f"{where}: field 'trials' must be a list of trial objects")
    if not report.get("run_id"):
        raise ExportError(f"{where}: field 'run_id' is missing")
    return trials


def post_otlp(
    url: str, body: bytes, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0
) -> bytes:
    """POST one protobuf request; returns the response body or raises :class:`ExportError`."""
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": CONTENT_TYPE, **dict(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return bytes(resp.read())
    except urllib.error.HTTPError as exc:
        raise ExportError(f"{url}: the receiver answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ExportError(f"{url}: cannot send: {reason}") from None


def export_otlp(
    source: str | Path | Mapping[str, Any],
    *,
    endpoint: str,
    store: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    trials_per_request: int = 100,
) -> ExportSummary:
    """Send a run's trials (spans) and figures (gauges) to an OTLP/HTTP receiver at ``endpoint``.

    ``endpoint`` is the receiver's base URL (``http://host:4318``); ``/v1/traces`` and
    ``/v1/metrics`` are appended. Spans go in requests of at most ``trials_per_request``
    trials (receivers cap a request's size). Raises :class:`ExportError` when the run cannot
    be read or the receiver refuses (requests already sent stay sent).
    """
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceResponse,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    if not endpoint.startswith(("http://", "https://")):
        raise ExportError(f"--endpoint must be an http(s) URL, got {endpoint!r}")
    report, trials = load_run(source, store)
    base = endpoint.rstrip("/")
    summary = ExportSummary(run_id=str(report.get("run_id")), endpoint=base)
    if trials_per_request < 1:
        raise ExportError(f"trials_per_request must be >= 1, got {trials_per_request}")
    for start in range(0, max(len(trials), 1), trials_per_request):
        chunk = trials[start : start + trials_per_request]
        traces = build_trace_request(report, chunk, summary, first_index=start)
        reply = ExportTraceServiceResponse()
        reply.ParseFromString(
            post_otlp(
                f"{base}/v1/traces", traces.SerializeToString(), headers=headers, timeout=timeout
            )
        )
        summary.rejected_spans += int(reply.partial_success.rejected_spans)
        summary.requests += 1
    metrics = build_metrics_request(report, summary)
    mreply = ExportMetricsServiceResponse()
    mreply.ParseFromString(
        post_otlp(
            f"{base}/v1/metrics", metrics.SerializeToString(), headers=headers, timeout=timeout
        )
    )
    summary.rejected_data_points = int(mreply.partial_success.rejected_data_points)
    return summary
