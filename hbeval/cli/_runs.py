"""``hbeval runs``: the runs recorded in the store."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from ._common import console, fail, plain_app

__all__ = ["runs_app"]

runs_app = plain_app("runs", "Runs recorded in the store.")


@runs_app.command("list")
def runs_list(
    db: Annotated[
        str | None,
        typer.Option(
            help="Store: a path, sqlite:///path or postgresql://... (default ./.hbeval/hbeval.db)."
        ),
    ] = None,
    agent_id: Annotated[
        str | None, typer.Option("--agent-id", help="Only runs of this agent.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """List recorded runs, newest first."""
    from ..store import NoStoreError, open_store, store_exists
    from ..store._listing import runs_document

    runs: list[dict[str, Any]] = []
    try:
        if store_exists(db):
            store = open_store(db, read_only=True)
            try:
                runs = runs_document(store, agent_id)["runs"]
            finally:
                store.close()
    except NoStoreError:
        pass  # no SQLite file, or a database without hbeval's tables: nothing recorded there
    except ValueError as exc:
        raise fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"runs": runs}, indent=2, default=str))
        return
    if not runs:
        typer.echo("no runs recorded")
        return
    from rich.table import Table

    table = Table(title="Runs")
    columns = ("run_id", "agent_id", "status", "battery", "measurement_fingerprint", "created_at")
    for col in columns:
        table.add_column(col)
    for r in runs:
        table.add_row(*(_cell(c, r.get(c)) for c in columns))
    console().print(table)


def _cell(column: str, value: Any) -> str:
    """A run-table cell; Unix timestamps shown as UTC ISO times."""
    if value is None:
        return ""
    if column.endswith("_at") and isinstance(value, (int, float)):
        import datetime as dt

        return dt.datetime.fromtimestamp(value, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return str(value)
