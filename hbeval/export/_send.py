"""A run to an OTLP/HTTP receiver: read it, check it, build both requests, POST them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._urls import masked_url
from ..scoring._view import listed
from ._otlp import (
    ExportSummary,
    TrialSource,
    build_metrics_request,
    build_trace_request,
)

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["CONTENT_TYPE", "ExportError", "export_otlp", "load_run", "post_otlp"]

CONTENT_TYPE = "application/x-protobuf"


class ExportError(ValueError):
    """The run cannot be read, or the receiver refused what was sent."""


def load_run(
    source: str | Path | Report | Mapping[str, Any], store: Any = None
) -> tuple[Report, list[TrialSource]]:
    """The report and the trials of a run id in ``store``, or of a report (file, dict, Report)."""
    from ..scoring._report_model import Report

    if isinstance(source, (Report, Mapping)):
        report = _check(source, "report")
        return report, [TrialSource(t) for t in _trials(report, "report")]
    path = Path(source)
    if str(source).endswith(".json") or (path.is_file() and store is None):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ExportError(f"cannot read report {str(source)!r}: {exc}") from None
        if not isinstance(data, Mapping):
            raise ExportError(f"{source}: a report is a JSON object")
        report = _check(data, str(source))
        return report, [TrialSource(t) for t in _trials(report, str(source))]
    if store is None:
        raise ExportError(f"{source!r} is not a report file, and no store was given to find it")
    run_id = str(source)
    stored = store.get_report(run_id)
    if stored is None:
        raise ExportError(f"no run {run_id!r} with a report in the store")
    report = _check(stored, f"run {run_id}")
    from ..store.protocol import final_attempts

    finals = final_attempts(store, run_id)
    out = []
    for t in _trials(report, run_id):
        key = str(t.get("trial_key"))
        final = finals.get(key)
        events = list(store.iter_events(run_id, key, attempt=final.attempt if final else 0))
        out.append(TrialSource(t, events))
    return report, out


def _check(data: Report | Mapping[str, Any], where: str) -> Report:
    """``data`` as a ``Report``; refused when it is no ``hbeval-report/1`` report, or its
    figures its own trials do not give (edited after hbeval built it): its gauges would send
    them on."""
    from ..scoring._recheck import ReportEdited, checked_report
    from ..scoring._report_model import ReportFormatError

    try:
        return checked_report(data, where)
    except (ReportFormatError, ReportEdited) as exc:
        message = f"{where}: {exc}" if isinstance(exc, ReportFormatError) else str(exc)
        raise ExportError(message) from None


def _trials(report: Report, where: str) -> list[dict[str, Any]]:
    if not report.run_id:
        raise ExportError(f"{where}: field 'run_id' is missing")
    return listed(report, "trials")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: the request's headers (a token, say) go to the endpoint given
    and nowhere else, and a 3xx is an error naming where it pointed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def post_otlp(
    url: str, body: bytes, *, headers: Mapping[str, str] | None = None, timeout: float = 10.0
) -> bytes:
    """POST one protobuf request; returns the response body or raises :class:`ExportError`.

    A redirect is never followed (an ``ExportError`` names its ``Location``); a password in
    ``url`` is masked in every message.
    """
    shown = masked_url(url)
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": CONTENT_TYPE, **dict(headers or {})},
    )
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return bytes(resp.read())
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = masked_url(str(exc.headers.get("Location") or "(no Location header)"))
            raise ExportError(
                f"{shown}: the receiver answered HTTP {exc.code} redirecting to {where}; "
                "redirects are not followed (the headers go only to the endpoint given): "
                "give the receiver's own address as --endpoint"
            ) from None
        raise ExportError(f"{shown}: the receiver answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = masked_url(str(getattr(exc, "reason", exc)))
        raise ExportError(f"{shown}: cannot send: {reason}") from None


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
        raise ExportError(f"--endpoint must be an http(s) URL, got {masked_url(endpoint)!r}")
    report, trials = load_run(source, store)
    base = endpoint.rstrip("/")
    summary = ExportSummary(run_id=str(report.run_id), endpoint=masked_url(base))
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
