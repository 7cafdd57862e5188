"""``battery run --until-decided [--confidence 0.95]``: the flags and the summary line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["ConfidenceOption", "UntilDecidedOption", "checked_waves", "waves_line"]

UntilDecidedOption = Annotated[
    bool,
    typer.Option(
        "--until-decided",
        help="Run in waves (one trial of every scenario each) up to --trials, and stop once "
        "every check of the verdict is decided at --confidence by an always-valid bound "
        "clustered by scenario (docs/statistics.md).",
    ),
]
ConfidenceOption = Annotated[
    float,
    typer.Option(
        "--confidence",
        help="With --until-decided: the confidence each check is decided at (default 0.95).",
    ),
]


def checked_waves(until_decided: bool, confidence: float, executor: str) -> float | None:
    """The confidence to pass as ``run_battery(until_decided=)``, or None; exits 2 on misuse."""
    if not until_decided:
        if confidence != 0.95:
            typer.echo("error: --confidence needs --until-decided", err=True)
            raise typer.Exit(2)
        return None
    if not 0.0 < confidence < 1.0:
        typer.echo(
            f"error: --confidence must be strictly between 0 and 1, e.g. 0.95 (got {confidence})",
            err=True,
        )
        raise typer.Exit(2)
    if executor == "ray":
        typer.echo(
            "error: --until-decided runs its waves on the local executor; drop --executor ray",
            err=True,
        )
        raise typer.Exit(2)
    return confidence


def waves_line(report: Report) -> str | None:
    """``until decided: stopped after wave 3 of 6 (decided at 95%), 54 of 108 trials``."""
    info = report.run.until_decided
    if info is None:
        return None
    why = {
        "decided": f"the verdict was decided at {info.confidence:.0%}",
        "max_trials": f"every wave ran, not decided at {info.confidence:.0%}",
        "budget_exhausted": "the budget ran out",
    }[info.stopped]
    open_checks = [c.metric for c in info.checks if c.state == "open"]
    line = (
        f"  until decided: stopped after wave {info.waves_run} of {info.max_waves} ({why}); "
        f"{info.trials_run} of {info.trials_planned} trials, bound {info.bound}"
    )
    if open_checks and info.stopped != "decided":
        line += f"; still open: {', '.join(open_checks)}"
    return line
