"""``hbeval score``: live metrics, breaches and halts of a recorded hb-events/1 trace."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hbeval_core.live._document import TABLE_LIMIT as _TABLE_LIMIT
from hbeval_core.live._document import score_trace
from hbeval_core.vocab import LIVE_METRICS, PEI_V2, PEI_VERSIONS

from ._common import EXIT_INSUFFICIENT, console, err, fail, fmt_value

if TYPE_CHECKING:
    pass

__all__ = ["score"]


def score(
    events: Annotated[Path, typer.Argument(help="An hb-events/1 JSONL file ('-' reads stdin).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
    pei_version: Annotated[
        str, typer.Option(help=f"PEI version: {', '.join(PEI_VERSIONS)}.")
    ] = PEI_V2,
    halt_policy: Annotated[
        str | None, typer.Option(help="Safe Halt policy METRIC<BOUNDxSTEPS, e.g. 'frr<0.5x3'.")
    ] = None,
    steps: Annotated[
        bool | None,
        typer.Option(
            "--steps/--no-steps",
            help=f"Per-step table (default: when at most {_TABLE_LIMIT} steps).",
        ),
    ] = None,
) -> None:
    """Live metrics, breaches and halts of a recorded trace."""
    from hbeval_core.events import EventFormatError

    if str(events) != "-" and not events.is_file():
        raise fail(f"EVENTS {str(events)!r}: no such file; pass a JSONL file of hb-events/1 events")
    try:
        source: Any = events
        if str(events) == "-":  # read whole, up to a limit: stdin may never end
            from .._inputs import STDIN_LIMIT, read_stream_bounded

            source = io.BytesIO(read_stream_bounded(sys.stdin.buffer, "stdin", STDIN_LIMIT))
        doc = score_trace(
            source, label=str(events), pei_version=pei_version, halt_policy=halt_policy, steps=steps
        )
    except UnicodeDecodeError as exc:
        raise fail(f"{events}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        message = str(exc) if not isinstance(exc, EventFormatError) else f"{events}: {exc}"
        raise fail(message) from None
    except OSError as exc:
        raise fail(f"{events}: {exc}") from None

    if as_json:
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
    else:
        summary = {k: v for k, v in doc.items() if k not in ("source", "steps")}
        _print_score(summary, doc.get("steps"))
    if doc["step_count"] == 0:
        err("no steps in the trace: every metric is undefined (no_steps)")
        raise typer.Exit(EXIT_INSUFFICIENT)


def _print_score(summary: dict[str, Any], rows: list[dict[str, Any]] | None) -> None:
    from rich.table import Table

    out = console()
    undefined: dict[str, str] = summary["undefined"]
    if rows:
        table = Table(title="Live metrics after each step", show_lines=False)
        table.add_column("step", justify="right")
        table.add_column("action")
        for name in ("pei", "frr", "irs", "ti"):
            table.add_column(name.upper(), justify="right")
        for row in rows:
            cells = []
            for name in ("pei", "frr", "irs", "ti"):
                cells.append(fmt_value(row["metrics"][name], row["undefined"].get(name)))
            table.add_row(str(row["step"]), row["action"][:40], *cells)
        out.print(table)
    final = Table(
        title=f"Final ({summary['step_count']} steps, metric versions {summary['metric_versions']['pei']} PEI)"
    )
    final.add_column("metric")
    final.add_column("value", justify="right")
    for name in LIVE_METRICS:
        final.add_row(name.upper(), fmt_value(summary["metrics"][name], undefined.get(name)))
    out.print(final)
    out.print(f"breaches: {summary['breach_count']} (as {len(summary['breaches'])} intervals)")
    for b in summary["breaches"]:
        out.print(
            f"  {b['metric'].upper()} < {b['threshold']}: steps {b['first_step'] + 1}-{b['last_step'] + 1}"
            f" (min {b['min_value']:.4g})"
        )
    if summary["halted"]:
        rec = summary["halt_record"]
        out.print(f"[bold red]Safe Halt[/] at step {rec['step_index'] + 1}: {rec['reason']}")
    for d in summary["directives"]:
        out.print(f"directive at step {d['step_index'] + 1}: {d['action']} ({d['reason']})")
