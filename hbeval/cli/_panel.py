"""``hbeval panel``: the reference panel's table, and which figures separate which behaviours."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ._battery import _build_battery, _load_judge


def _fmt(v: Any) -> str:
    if v is None:
        return "undefined"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def panel(
    battery: Annotated[
        str, typer.Option("--battery", help="hbeval (default), compat, or a battery file.")
    ] = "hbeval",
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="Independent judge module:callable (methodology C)."),
    ] = None,
    trials: Annotated[int, typer.Option(help="Trials per scenario.", min=1)] = 3,
    seed: Annotated[int, typer.Option(help="Battery and stochastic member seed.")] = 1,
    scenarios: Annotated[int, typer.Option(help="Scenarios (built-in batteries).")] = 18,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Run the reference panel (agents of known behaviour) and show what the figures separate."""
    from rich.console import Console
    from rich.table import Table

    from ..testing.panel import decided_by, panel_rows, run_panel, separations

    chosen = _build_battery(battery, scenarios, seed, None, None)
    judge_obj = _load_judge(judge)
    reports = run_panel(chosen, trials=trials, seed=seed, judge=judge_obj)
    rows = panel_rows(reports)
    lines = separations(rows)
    deciders = decided_by(reports)
    if as_json:
        payload = {"rows": [r.as_dict() for r in rows], "separations": lines}
        typer.echo(json.dumps({**payload, "judge": judge, "text_signals_decided_by": deciders}))
        return
    table = Table(title=f"Reference panel (seed {seed}, {trials} trials per scenario)")
    for col in (
        "agent",
        "behaviour",
        "wording",
        "pass",
        "FRR",
        "IRS",
        "silent corr.",
        "explained",
        "verdict",
    ):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r.name,
            r.behaviour,
            r.wording,
            f"{r.passed}/{r.trials}",
            _fmt(r.frr),
            _fmt(r.irs),
            str(r.silent_corruption),
            _fmt(r.explained_share),
            r.verdict,
        )
    console = Console(width=160)
    console.print(table)
    wrong = [line for line in lines if line.startswith("WORDING MOVED")]
    unseparated = [line for line in lines if line.startswith("NOT SEPARATED")]
    console.print(f"judge: {judge or 'none'}; text signals decided by: {', '.join(deciders)}")
    for line in wrong + unseparated:
        console.print(line, markup=False)
    if not wrong:
        console.print(
            "wording moved no behavioural figure (pass, FRR, IRS, silent corruptions, verdict)"
        )
    for line in lines:
        if not line.startswith(("WORDING MOVED", "NOT SEPARATED")):
            console.print(line, markup=False)
