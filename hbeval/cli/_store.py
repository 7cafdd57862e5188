"""``hbeval store copy``: copy runs between stores (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ._common import fail, plain_app

__all__ = ["store_app"]

store_app = plain_app("store", "Stores themselves: copy runs between them.")


@store_app.command("copy")
def store_copy(
    src: Annotated[
        str, typer.Argument(help="Source store: a path, sqlite:///path or postgresql://...")
    ],
    dst: Annotated[str, typer.Argument(help="Destination store (created when missing).")],
    run_ids: Annotated[
        list[str] | None, typer.Option("--run", help="Copy only this run (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Copy runs between stores (SQLite <-> PostgreSQL) without loss; copying again is safe."""
    from ..store import copy_between

    try:
        summary = copy_between(src, dst, run_ids or None)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(summary.as_dict()))
        return
    typer.echo(
        f"copied {summary.runs} run(s): {summary.trials_copied} trial(s) and "
        f"{summary.events_copied} event(s) written, {summary.trials_present} trial(s) already "
        f"there, {summary.reports_copied} report(s)"
    )
