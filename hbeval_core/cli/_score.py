"""``hbeval score``: live metrics, breaches and halts of a recorded hb-events/1 trace."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..vocab import LIVE_METRICS, PEI_V2, PEI_VERSIONS
from ._common import EXIT_INSUFFICIENT, console, err, fail, fmt_value

if TYPE_CHECKING:
    from ..live.derive import StepRecord

__all__ = ["parse_halt", "score", "score_trace"]

_HALT_RE = re.compile(r"^\s*(pei|frr|irs|ti|csi)\s*<\s*([0-9.]+)\s*(?:(?:x|for)\s*(\d+))?\s*$")


def parse_halt(text: str) -> dict[str, Any]:
    """Parse ``frr<0.5x3`` (metric, bound, consecutive steps) into a halt policy."""
    m = _HALT_RE.match(text)
    if m is None:
        raise ValueError(f"--halt-policy {text!r} is not METRIC<BOUNDxSTEPS, e.g. 'frr<0.5x3'")
    return {"metric": m.group(1), "below": float(m.group(2)), "for_steps": int(m.group(3) or 3)}


_TABLE_LIMIT = 100


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
    from ..events import EventFormatError

    if str(events) != "-" and not events.is_file():
        raise fail(f"EVENTS {str(events)!r}: no such file; pass a JSONL file of hb-events/1 events")
    try:
        source = sys.stdin if str(events) == "-" else events
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


def score_trace(
    source: Any,
    *,
    label: str,
    pei_version: str = PEI_V2,
    halt_policy: str | None = None,
    steps: bool | None = None,
) -> dict[str, Any]:
    """The ``hbeval score --json`` document of an hb-events/1 stream (path or open text file).

    ``label`` is shown as ``source``; ``steps`` None keeps the per-step rows only for traces of
    at most 100 steps. Raises ValueError naming the option (``--halt-policy``, PEI version) or,
    as ``EventFormatError``, the event line at fault.
    """
    from ..live._trace import fold_trace
    from ..monitor import Monitor

    policy = parse_halt(halt_policy) if halt_policy else None
    monitor = Monitor(pei_version=pei_version, halt_policy=policy)
    rows: list[dict[str, Any]] = []
    keep_rows = steps is not False

    def row(step: StepRecord) -> bool:
        nonlocal keep_rows, rows
        rows.append(
            {
                "step": step.index + 1,
                "action": step.action,
                "metrics": monitor.metrics,
                "undefined": monitor.undefined,
            }
        )
        if steps is None and len(rows) > _TABLE_LIMIT:
            keep_rows = False
            rows = []
        return keep_rows

    # Per-step rows need the metrics after each step; without them steps are folded in batches.
    fold_trace(source, monitor, row if keep_rows else None)
    doc: dict[str, Any] = {"source": label, **monitor.summary()}
    if keep_rows:
        doc["steps"] = rows
    return doc


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
