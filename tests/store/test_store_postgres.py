"""PostgreSQL specifics: migrations, refusals, read-only opening, writers on many connections."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hbeval.store import (
    AttemptRecord,
    DuplicateRecordError,
    PostgresStore,
    StoreError,
    StoreVersionError,
    open_store,
)
from hbeval.store.postgres import public_url
from hbeval_core.vocab import EVENTS_FORMAT, STORE_SCHEMA_VERSION

from .test_store_recorder import RUN, run_record, trace, trial


def raw(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def test_a_new_database_is_migrated_and_reopened_as_is(postgres_url: str) -> None:
    with open_store(postgres_url) as store:
        assert isinstance(store, PostgresStore)
        assert store.schema_version == STORE_SCHEMA_VERSION
        store.start_run(run_record())
    with raw(postgres_url) as conn:
        assert dict(conn.execute("SELECT key, value FROM meta").fetchall()) == {
            "schema_version": str(STORE_SCHEMA_VERSION),
            "events_format": EVENTS_FORMAT,
        }
        # undefined is never zero: the database itself refuses a NULL without a reason
        with pytest.raises(Exception, match="check"):
            conn.execute(
                "INSERT INTO metrics (run_id, trial_key, name, value, reason) "
                f"VALUES ('{RUN}', '', 'pei', NULL, NULL)"
            )
    with PostgresStore(postgres_url) as again:
        assert again.get_run(RUN) == run_record()


def test_a_newer_store_is_refused_untouched(postgres_url: str) -> None:
    with PostgresStore(postgres_url) as store:
        store.start_run(run_record())
    with raw(postgres_url) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreVersionError, match="v99 is newer"):
        PostgresStore(postgres_url)
    with raw(postgres_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)


def test_read_only_writes_nothing_and_needs_a_store(postgres_url: str) -> None:
    with pytest.raises(StoreError, match=r"no hbeval store.*point --db at the database"):
        PostgresStore(postgres_url, read_only=True)
    with PostgresStore(postgres_url) as store:
        store.start_run(run_record())
    with PostgresStore(postgres_url, read_only=True) as ro:
        assert ro.get_run(RUN) == run_record()
        with pytest.raises(StoreError, match="read-only"):
            ro.record_trial(trial(0, 0))


def test_an_unreachable_server_is_a_clear_error() -> None:
    url = "postgresql://someone:secret@127.0.0.1:1/nowhere"
    with pytest.raises(StoreError, match=r"cannot connect to the store at .*:\*\*\*@127") as err:
        PostgresStore(url)
    assert "secret" not in str(err.value) and "\n" not in str(err.value)  # one line, no password
    assert "secret" not in public_url(url)


def test_writers_on_many_connections_store_each_key_once(postgres_url: str) -> None:
    """Eight workers deliver the same bundle; then eight deliver different ones for one key."""
    with PostgresStore(postgres_url) as setup:
        setup.start_run(run_record())
    events = trace(f"{RUN}/s000-t0", 2)
    attempt = AttemptRecord(run_id=RUN, trial_key="s000-t0", attempt=0, outcome="pass")
    stores = [PostgresStore(postgres_url) for _ in range(8)]
    results: list[Any] = [None] * 8
    gate = threading.Barrier(8)

    def deliver(i: int, outcome: str) -> None:
        gate.wait()
        key = "s000-t0" if outcome == "pass" else "s001-t0"
        a = AttemptRecord(run_id=RUN, trial_key=key, attempt=0, outcome="pass")
        try:
            results[i] = stores[i].record_trial_bundle(
                trial(int(key[1:4]), 0, outcome=outcome, latency_ms=float(i))
                if outcome != "pass"
                else trial(0, 0),
                [a if outcome != "pass" else attempt],
                {0: events} if outcome == "pass" else None,
                metrics={"pei": 1.0},
            )
        except DuplicateRecordError as exc:
            results[i] = exc

    for outcome in ("pass", "fail"):
        threads = [threading.Thread(target=deliver, args=(i, outcome)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if outcome == "pass":  # identical: one stores the events, the others are no-ops
            assert sorted(results) == [0] * 7 + [len(events)]
        else:  # different: one stored, seven refused
            assert sum(isinstance(r, DuplicateRecordError) for r in results) == 7
    for s in stores:
        s.close()
    with PostgresStore(postgres_url) as check:
        assert [t.trial_key for t in check.list_trials(RUN)] == ["s000-t0", "s001-t0"]
        assert len(list(check.iter_events(RUN, "s000-t0"))) == len(events)
        assert len(check.list_attempts(RUN)) == 2


def test_without_a_server_the_tests_skip_but_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from ..postgres_server import _unavailable

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server: initdb missing"):
        _unavailable("initdb missing")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run under CI: initdb missing"):
        _unavailable("initdb missing")
