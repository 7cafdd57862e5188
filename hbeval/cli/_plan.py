"""The ``plan`` command: scenarios × trials needed to detect a drop in FRR or the pass rate.

From a baseline (a report file, ``FILE#LABEL`` or a run id) it takes the observed rate and the
within-scenario correlation; ``--rate``, ``--icc``, ``--trials`` and ``--scenarios`` state them
instead (all of ``--rate`` and ``--icc`` without a baseline). Exit 0, or 2 for bad input with
a message naming the option.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import DB_HELP, emit_json, fail

__all__ = ["plan_cmd"]


def plan_cmd(
    baseline: Annotated[
        str | None,
        typer.Argument(
            metavar="[REPORT|RUN_ID]",
            help="A baseline report file, FILE#LABEL or run id (omit to plan from --rate and "
            "--icc alone).",
        ),
    ] = None,
    metric: Annotated[
        str, typer.Option("--metric", help="The rate to plan for: frr or pass_rate.")
    ] = "frr",
    drop: Annotated[
        float, typer.Option("--drop", help="The drop to detect, as a rate (0.10 = 10 points).")
    ] = 0.10,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided significance level.")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="Power to detect the drop.")] = 0.8,
    rate: Annotated[
        float | None, typer.Option("--rate", help="The current rate (instead of the baseline's).")
    ] = None,
    icc: Annotated[
        float | None,
        typer.Option(
            "--icc",
            help="Within-scenario correlation of outcomes (instead of the baseline's; 0 "
            "independent, 1 a scenario's trials always agree).",
        ),
    ] = None,
    trials: Annotated[
        int | None,
        typer.Option(
            "--trials", help="Trials per scenario to plan for (default the baseline's, else 3)."
        ),
    ] = None,
    scenarios: Annotated[
        int | None,
        typer.Option(
            "--scenarios",
            help="Scenarios available (default the baseline's, for FRR its faulted ones).",
        ),
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help=DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Scenarios x trials needed to detect a drop in FRR or the pass rate (power analysis)."""
    from ..report.plan import PlanRefused, make_plan
    from ._report import load_one

    try:
        report = load_one(baseline, db)[1] if baseline is not None else None
        plan = make_plan(
            report,
            metric=metric.strip().lower(),
            drop=drop,
            alpha=alpha,
            power=power,
            rate=rate,
            icc=icc,
            trials=trials,
            scenarios=scenarios,
        )
    except (PlanRefused, ValueError) as exc:
        raise fail(f"plan: {exc}") from None
    if as_json:
        emit_json(plan.as_dict())
        return
    for line in plan.lines():
        typer.echo(line)
