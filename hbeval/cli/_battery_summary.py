"""The terminal summary ``battery run`` prints when a run finishes (loaded only then)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from ._waves import waves_line

if TYPE_CHECKING:
    from pathlib import Path

    from ..scoring import Report

__all__ = ["summary"]


def summary(report: Report, out: Path | None) -> None:
    """The terminal summary of a finished ``battery run``: verdict, figures, fingerprints."""
    from ..report.terminal import verdict_lines
    from ..scoring import decide_verdict
    from ..scoring._view import section

    metrics = section(report, "metrics")
    undefined = section(report, "undefined")
    run = section(report, "run")

    typer.echo(
        f"run {run.get('run_id')}  agent {run.get('agent_id')}  verdict "
        f"{decide_verdict(report).verdict}"
    )
    for line in verdict_lines(report):
        typer.echo(line)
    parts = []
    for name, value in metrics.items():
        shown = (
            f"{value:.3f}"
            if isinstance(value, (int, float))
            else f"undefined ({undefined.get(name, 'not_measured')})"
        )
        parts.append(f"{name.upper()} {shown}")
    typer.echo("  " + "  ".join(parts))
    trace = section(report, "traceability") or {}
    if trace.get("calls"):
        share = trace.get("explained_share")
        shown = f"{share:.3f}" if isinstance(share, (int, float)) else "undefined"
        note = f": {trace['note']}" if trace.get("note") else ""
        typer.echo(
            f"  traceability: explained share {shown} "
            f"({trace.get('explained')}/{trace.get('calls')} calls){note}"
        )
    outcomes = section(report, "outcomes") or {}
    typer.echo("  outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()))
    from ..report._perturbations import perturbation_lines

    for line in perturbation_lines(report):
        typer.echo(line)
    fps = section(report, "fingerprints") or {}
    typer.echo(
        f"  fingerprints: battery {fps.get('battery_spec')}  plan {fps.get('plan')}  "
        f"measurement {fps.get('measurement')}  manifest {report.manifest_hash}"
    )
    iso = section(report, "isolation") or {}
    typer.echo(f"  isolation: {iso.get('note')}")
    waves = waves_line(report)
    if waves is not None:
        typer.echo(waves)
    if out is not None:
        typer.echo(f"  report written to {out}")
