"""SQLite specifics: opening, pragmas, migrations, refusals that leave the file untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import hbeval.store.sqlite as sqlite_store
from hbeval.store import (
    DEFAULT_PATH,
    RunRecord,
    SQLiteStore,
    StoreError,
    StoreVersionError,
    open_store,
    resolve_path,
)
from hbeval_core.events import ToolStart
from hbeval_core.vocab import EVENTS_FORMAT, STORE_SCHEMA_VERSION

TABLES = {"meta", "runs", "trials", "attempts", "event_streams", "event_rows", "metrics", "reports"}


def run(run_id: str = "r1") -> RunRecord:
    return RunRecord(
        run_id=run_id, agent_id="a", battery="hbeval", measurement_fingerprint="fp", created_at=1.0
    )


def meta(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def test_a_new_file_is_migrated_to_the_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "hb.db"  # missing folders are created
    with SQLiteStore(path) as store:
        assert store.schema_version == STORE_SCHEMA_VERSION
        conn = store._live()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert names >= TABLES
        store.start_run(run())
    assert meta(path) == {
        "schema_version": str(STORE_SCHEMA_VERSION),
        "events_format": EVENTS_FORMAT,
    }
    with SQLiteStore(path) as again:  # reopening migrates nothing and keeps the data
        assert again.get_run("r1") == run()


def test_a_newer_store_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "hb.db"
    with SQLiteStore(path) as store:
        store.start_run(run())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreVersionError) as err:
        SQLiteStore(path)
    assert str(err.value).startswith(
        f"store schema v99 is newer than this hbeval (v{STORE_SCHEMA_VERSION}); upgrade hbeval"
    )
    assert path.read_bytes() == before


def test_foreign_and_broken_files_are_refused_untouched(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.close()
    before = foreign.read_bytes()
    with pytest.raises(StoreVersionError, match="not an hbeval store"):
        SQLiteStore(foreign)
    assert foreign.read_bytes() == before

    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database, just some bytes" * 100)
    with pytest.raises(StoreError, match="not an SQLite database"):
        SQLiteStore(garbage)
    assert garbage.read_bytes() == b"this is not a database, just some bytes" * 100


def test_migrations_apply_in_order_all_or_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "hb.db"
    with SQLiteStore(path) as store:
        store.start_run(run())

    def add_column(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN label TEXT")

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("migration bug")

    monkeypatch.setattr(sqlite_store, "STORE_SCHEMA_VERSION", STORE_SCHEMA_VERSION + 2)
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", (*sqlite_store.MIGRATIONS, add_column, broken))
    with pytest.raises(RuntimeError, match="migration bug"):
        SQLiteStore(path)
    with sqlite3.connect(path) as conn:  # neither migration left a trace
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    conn.close()
    assert "half_done" not in tables and "label" not in columns
    assert meta(path)["schema_version"] == str(STORE_SCHEMA_VERSION)

    monkeypatch.setattr(sqlite_store, "STORE_SCHEMA_VERSION", STORE_SCHEMA_VERSION + 1)
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", (*sqlite_store.MIGRATIONS[:-1],))
    with SQLiteStore(path) as store:
        assert store.schema_version == STORE_SCHEMA_VERSION + 1
        assert store.get_run("r1") == run()
        columns = {r[1] for r in store._live().execute("PRAGMA table_info(runs)")}
        assert "label" in columns


def test_sql_constraints_back_up_the_python_checks(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "hb.db") as store:
        store.start_run(run())
        conn = store._live()
        insert = (
            "INSERT INTO metrics (run_id, trial_key, name, value, reason) VALUES (?, ?, ?, ?, ?)"
        )
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute(insert, ("r1", "", "frr", None, None))  # NULL without a reason
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute(insert, ("r1", "", "pei", 0.5, "no_steps"))  # a value with a reason
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            conn.execute(insert, ("ghost", "", "pei", 0.5, None))


def test_events_view_has_the_documented_columns(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "hb.db") as store:
        store.start_run(run())
        events = [ToolStart(run_id="x", call_id=f"c{i}", tool="t") for i in range(3)]
        store.record_events("r1", "s000-t0", events, attempt=2)
        rows = store._live().execute(
            "SELECT run_id, trial_key, seq, attempt, kind, body FROM events "
            "WHERE run_id = ? AND trial_key = ? ORDER BY seq",
            ("r1", "s000-t0"),
        )
        got = list(rows)
    assert [r[:5] for r in got] == [("r1", "s000-t0", i, 2, "tool_start") for i in range(3)]
    assert got[0][5] == '{"kind":"tool_start","run_id":"x","call_id":"c0","tool":"t"}'


def test_paths_and_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_path(None) == str(DEFAULT_PATH)
    assert resolve_path("sqlite:///rel/hb.db") == "rel/hb.db"
    assert resolve_path("sqlite:////abs/hb.db") == "/abs/hb.db"
    assert resolve_path(tmp_path / "x.db") == str(tmp_path / "x.db")
    for memory in (":memory:", "sqlite://", "sqlite:///:memory:"):
        assert resolve_path(memory) == ":memory:"
    with pytest.raises(StoreError, match="PostgreSQL URL, not an SQLite path"):
        resolve_path("postgresql://db/hbeval")
    with pytest.raises(StoreError, match="unsupported store URL 'mysql://db/hb'"):
        resolve_path("mysql://db/hb")

    monkeypatch.chdir(tmp_path)
    with open_store(None) as store:
        store.start_run(run())
    assert (tmp_path / ".hbeval" / "hbeval.db").is_file()
    with open_store(f"sqlite:///{tmp_path / '.hbeval' / 'hbeval.db'}") as store:
        assert store.get_run("r1") == run()
    with open_store(":memory:") as store:
        store.start_run(run())
        assert store.get_run("r1") == run()


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "hb.db")
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        store.get_run("r1")
