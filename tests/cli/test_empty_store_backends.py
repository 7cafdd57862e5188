"""Read commands on a place with no store say the same on SQLite and PostgreSQL, and create nothing.

No SQLite file and a PostgreSQL database without hbeval's tables are the same situation to a
reader: ``runs list`` reports no runs (exit 0), commands that need a run say there is no store
there (exit 2), and neither creates a store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.mcp_server._tools import StoreTools, ToolInputError
from hbeval.store import NoStoreError, open_store
from hbeval.store.postgres import public_url


def _pg_tables(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
    return [r[0] for r in rows]


@pytest.fixture(params=["sqlite", "postgres"])
def nowhere(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, Callable[[], bool]]:
    """(``--db`` value, how messages name it, whether anything was created there)."""
    if request.param == "sqlite":
        path = tmp_path / "none" / "hbeval.db"
        return str(path), str(path), path.exists
    url: str = request.getfixturevalue("postgres_url")
    return url, public_url(url), lambda: bool(_pg_tables(url))


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_runs_list_finds_no_runs_and_creates_nothing(nowhere: tuple) -> None:
    db, _, created = nowhere
    assert run("runs", "list", "--db", db)[:2] == (0, "no runs recorded\n")
    code, out, _ = run("runs", "list", "--db", db, "--json")
    assert code == 0 and json.loads(out) == {"runs": []}
    assert not created()


def test_report_of_a_run_names_the_missing_store(nowhere: tuple) -> None:
    db, shown, created = nowhere
    code, _, err = run("report", "some-run", "--db", db)
    assert code == 2
    assert f"no store at {shown}; pass --db with the store the run was saved in" in err
    assert not created()


def test_store_copy_names_the_missing_source(nowhere: tuple, tmp_path: Path) -> None:
    db, shown, created = nowhere
    code, _, err = run("store", "copy", db, str(tmp_path / "dst.db"))
    assert code == 2
    assert f"SRC: no store at {shown!r}" in err
    assert not created() and not (tmp_path / "dst.db").exists()


def test_mcp_tools_refuse_alike(nowhere: tuple) -> None:
    db, shown, created = nowhere
    with pytest.raises(ToolInputError, match="no store at") as caught:
        StoreTools(db).list_runs()
    assert caught.value.field == "--db"
    assert shown in str(caught.value)
    assert not created()


def test_read_only_open_raises_no_store_error(nowhere: tuple) -> None:
    db, _, created = nowhere
    with pytest.raises(NoStoreError):
        open_store(db, read_only=True)
    assert not created()


def test_a_store_without_runs_lists_none(nowhere: tuple) -> None:
    db, _, created = nowhere
    open_store(db).close()  # a writer creates the tables
    assert created()
    assert run("runs", "list", "--db", db)[:2] == (0, "no runs recorded\n")
    assert StoreTools(db).list_runs() == {"runs": []}
