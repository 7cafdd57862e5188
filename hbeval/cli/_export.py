"""``hbeval export otlp``: a run's trials and figures to an OpenTelemetry collector."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

import typer

from ._common import plain_app

__all__ = ["export_app", "otlp_cmd"]

EXIT_BAD_INPUT = 2

export_app = plain_app(
    "export", "Send a run to other tools (OTLP/HTTP: Phoenix, Langfuse, any collector)."
)


@export_app.command("otlp")
def otlp_cmd(
    source: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID|report.json",
            help="A run id in the store (trials with their tool and model calls), or a report "
            "file (trials and verdicts only).",
        ),
    ],
    endpoint: Annotated[
        str,
        typer.Option(
            "--endpoint",
            help="The receiver's OTLP/HTTP base URL, e.g. http://localhost:4318 "
            "(/v1/traces and /v1/metrics are appended).",
        ),
    ],
    db: Annotated[
        str | None,
        typer.Option(help="Store: a path or sqlite:///path (default ./.hbeval/hbeval.db)."),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", help="An HTTP header KEY=VALUE to send (repeatable)."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the receiver.")] = 10.0,
    trials_per_request: Annotated[
        int,
        typer.Option("--trials-per-request", min=1, help="Trials whose spans go in one request."),
    ] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Send a run's trials as OTel GenAI spans and its figures as OTel gauges (OTLP/HTTP)."""
    from ..export import ExportError, export_otlp

    headers = _headers(header)
    if not math.isfinite(timeout) or timeout <= 0:
        typer.echo(f"hbeval: --timeout must be seconds > 0, got {timeout!r}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    store = None
    if not source.endswith(".json"):
        from ..store import open_store

        try:
            store = open_store(db, read_only=True)
        except (ValueError, TypeError) as exc:
            typer.echo(f"hbeval: {exc}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        summary = export_otlp(
            source,
            endpoint=endpoint,
            store=store,
            headers=headers,
            timeout=timeout,
            trials_per_request=trials_per_request,
        )
    except ExportError as exc:
        typer.echo(f"hbeval: export failed: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        if store is not None:
            store.close()
    if as_json:
        typer.echo(json.dumps(summary.as_dict(), indent=2, ensure_ascii=False))
        return
    _print_summary(summary)


def _headers(given: list[str] | None) -> dict[str, str]:
    """``--header KEY=VALUE`` options as a mapping; a malformed one exits 2."""
    headers: dict[str, str] = {}
    for h in given or ():
        name, sep, value = h.partition("=")
        if not sep or not name.strip():
            typer.echo(f"hbeval: --header {h!r}: expected KEY=VALUE", err=True)
            raise typer.Exit(EXIT_BAD_INPUT)
        if any(c in h for c in "\r\n\0"):
            typer.echo(
                f"hbeval: --header {name.strip()!r}: a line break or NUL in a header would "
                "start another header; give one KEY=VALUE per --header",
                err=True,
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        headers[name.strip()] = value
    return headers


def _print_summary(summary: Any) -> None:
    """What was sent, what was not (undefined), what the receiver rejected."""
    typer.echo(
        f"run {summary.run_id} -> {summary.endpoint}: {summary.traces} traces, {summary.spans} "
        f"spans ({summary.tool_spans} tool, {summary.model_spans} model, "
        f"{summary.fault_events} fault events); {summary.metrics} metrics, "
        f"{summary.data_points} points"
    )
    if summary.undefined:
        typer.echo(
            "  not sent (undefined, never sent as 0): "
            + ", ".join(f"{k} ({v})" for k, v in sorted(summary.undefined.items()))
        )
    if summary.rejected_spans or summary.rejected_data_points:
        typer.echo(
            f"  the receiver rejected {summary.rejected_spans} span(s) and "
            f"{summary.rejected_data_points} data point(s)"
        )
