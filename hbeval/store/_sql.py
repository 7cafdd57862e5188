"""The SQL both database stores share: every ``StoreWriter`` call, written once.

:class:`SQLStore` holds the queries, the checks and the refusals; a backend supplies the
connection (``_write``: one transaction, ``_read``: a consistent read), the error classes its
driver raises on a key clash, and the two statements that differ between SQLite and PostgreSQL
(appending event rows, and finding or creating a trial's event stream). Queries are written with
``?`` placeholders; a backend whose driver wants another style translates them in its
connection wrapper. The schema itself (tables, keys, the NULL-with-reason CHECK on metrics) is
the same in both; each backend keeps its own migrations in its own SQL dialect.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from hbeval_core.events import EventBase, event_adapter

from ..scoring._report_model import Report
from ._bundle import prepare_bundle
from ._codec import encode_events
from ._json import loads
from ._replay import attempt_stored_as, bundle_stored_as, trial_stored_as
from ._validate import (
    check_attempt,
    check_final_status,
    check_index,
    check_report_labels,
    check_resume,
    check_run,
    check_text,
    check_trial,
    metric_rows,
    report_body,
    stored_report,
)
from .errors import DuplicateRecordError, StoreDamagedError, StoreVersionError, UnknownRunError
from .records import (
    RUN_RUNNING,
    AttemptRecord,
    MetricSet,
    ReportRecord,
    RunRecord,
    TrialRecord,
)

RUN_LEVEL = ""  # trial_key of run-level metrics: NULLs would defeat the UNIQUE constraint
PAGE = 2000  # events fetched per lock hold while iterating, so writers are not starved


class Cursor(Protocol):
    """The part of a DB-API cursor the shared SQL uses."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """The part of a DB-API connection the shared SQL uses (``?`` placeholders)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...


def meta_schema_version(conn: Conn, where: str) -> int:
    """The schema version an hbeval ``meta`` table records; refuses one it cannot read."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise StoreVersionError(
            f"{where} has no readable schema version in its meta table; refusing to touch it"
        ) from None


class SQLStore:
    """A ``StoreWriter`` on an SQL database; subclasses supply the connection and dialect."""

    path: str
    """Where the store is, for messages (a file path, or a URL without its password)."""
    read_only: bool
    _integrity_errors: tuple[type[BaseException], ...] = ()
    """The driver's exceptions for a violated UNIQUE key."""

    # ------------------------------------------------------------------ backend hooks
    def _write(self) -> AbstractContextManager[Conn]:
        """One transaction: committed if the block returns, rolled back if it raises."""
        raise NotImplementedError

    def _read(self) -> AbstractContextManager[Conn]:
        """A connection to read from; driver errors become ``StoreDamagedError``/``StoreError``."""
        raise NotImplementedError

    def _stream_end(self, conn: Conn, run_id: str, trial_key: str) -> tuple[int, int]:
        """A trial's event stream id (created if new) and the seq its next event gets."""
        raise NotImplementedError

    def _insert_rows(
        self,
        conn: Conn,
        stream: int,
        attempt: int | None,
        start: int,
        kinds: list[str],
        bodies: list[str],
    ) -> None:
        """Insert one stream's events as seq ``start, start + 1, ...``, in the open transaction."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the connection. Idempotent."""
        raise NotImplementedError

    def __enter__(self) -> SQLStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _require_run(conn: Conn, run_id: str) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
            raise UnknownRunError(
                f"run {run_id!r} was never started in this store (start_run first)"
            )

    @staticmethod
    def _run_row(conn: Conn, run_id: str) -> RunRecord:
        row = conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            raise UnknownRunError(
                f"run {run_id!r} was never started in this store (start_run first)"
            )
        return _run_record(row)

    # ------------------------------------------------------------------ writes
    def start_run(self, run: RunRecord) -> bool:
        """Record a new run (True), or reopen a stored run with the same identity (False)."""
        config = check_run(run)
        with self._write() as conn:
            row = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run.run_id,)
            ).fetchone()
            if row is not None:
                check_resume(_run_record(row, self.path), run)
                conn.execute(
                    "UPDATE runs SET status = ?, finished_at = NULL WHERE run_id = ?",
                    (RUN_RUNNING, run.run_id),
                )
                return False
            conn.execute(
                "INSERT INTO runs (run_id, agent_id, battery, measurement_fingerprint, "
                "manifest_hash, config, created_at, status, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    run.agent_id,
                    run.battery,
                    run.measurement_fingerprint,
                    run.manifest_hash,
                    config,
                    float(run.created_at),
                    run.status,
                    run.finished_at,
                ),
            )
            return True

    def finish_run(
        self,
        run_id: str,
        status: str,
        report: Report | None = None,
        *,
        finished_at: float | None = None,
    ) -> None:
        """Set a run's final status (``records.RUN_FINAL_STATUSES``), saving its report if given."""
        check_text("run_id", run_id)
        check_final_status(status)
        body = None if report is None else report_body(report)[1]
        when = time.time() if finished_at is None else finished_at
        with self._write() as conn:
            run = self._run_row(conn, run_id)
            if report is not None and body is not None:
                self._insert_report(conn, run, report, body)
            conn.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                (status, float(when), run_id),
            )

    def record_trial(self, trial: TrialRecord) -> None:
        """Store a trial's final result once: again as stored is a no-op, different is refused."""
        verdict = check_trial(trial)
        try:
            with self._write() as conn:
                self._require_run(conn, trial.run_id)
                self._insert_trial(conn, trial, verdict)
        except DuplicateRecordError:
            if not trial_stored_as(self, trial):
                raise

    def record_attempt(self, attempt: AttemptRecord) -> None:
        """Store one attempt of a trial; attempt numbers are never reused or overwritten."""
        check_attempt(attempt)
        try:
            with self._write() as conn:
                self._require_run(conn, attempt.run_id)
                self._insert_attempt(conn, attempt)
        except DuplicateRecordError:
            if not attempt_stored_as(self, attempt):
                raise

    def record_events(
        self,
        run_id: str,
        trial_key: str,
        events: Iterable[EventBase],
        *,
        attempt: int | None = None,
    ) -> int:
        """Append a batch of a trial's events after the ones already stored; returns how many."""
        check_text("run_id", run_id)
        check_text("trial_key", trial_key)
        if attempt is not None:
            check_index("attempt", attempt)
        # Serialise (and validate) the whole batch before the transaction: a bad event fails the
        # batch without holding the write lock, and nothing of it is stored.
        kinds, bodies = encode_events(events)
        if not bodies:
            return 0
        with self._write() as conn:
            self._require_run(conn, run_id)
            stream, start = self._stream_end(conn, run_id, trial_key)
            self._insert_rows(conn, stream, attempt, start, kinds, bodies)
        return len(bodies)

    def record_metrics(
        self,
        run_id: str,
        trial_key: str | None,
        metrics: Mapping[str, float | None],
        undefined: Mapping[str, str] | None = None,
    ) -> None:
        """Store metrics of a trial (or of the run, ``trial_key=None``); a None needs a reason."""
        check_text("run_id", run_id)
        check_text("trial_key", trial_key, optional=True)
        rows = metric_rows(metrics, {} if undefined is None else undefined)
        with self._write() as conn:
            self._require_run(conn, run_id)
            self._insert_metrics(conn, run_id, trial_key, rows)

    def record_trial_bundle(
        self,
        trial: TrialRecord,
        attempts: Sequence[AttemptRecord] = (),
        events_by_attempt: Mapping[int | None, Iterable[EventBase]] | None = None,
        *,
        metrics: Mapping[str, float | None] | None = None,
        undefined: Mapping[str, str] | None = None,
    ) -> int:
        """Store a finished trial in one transaction; returns how many events it stored.

        Everything is checked before the transaction, exactly as the separate calls check it;
        the writes then go in the runner's order (attempts, their events, the trial, its
        metrics) and commit once. A refusal anywhere (a duplicate, an unknown run) rolls all of
        it back: the bundle stores nothing of itself and what was stored before is untouched.
        A bundle already stored exactly as given (a retried delivery) stores nothing and
        returns 0.
        """
        bundle = prepare_bundle(trial, attempts, events_by_attempt, metrics, undefined)
        run_id, trial_key = trial.run_id, trial.trial_key
        try:
            with self._write() as conn:
                self._require_run(conn, run_id)
                for attempt in bundle.attempts:
                    self._insert_attempt(conn, attempt)
                if bundle.batches:
                    stream, start = self._stream_end(conn, run_id, trial_key)
                    for batch in bundle.batches:
                        self._insert_rows(
                            conn, stream, batch.attempt, start, batch.kinds, batch.bodies
                        )
                        start += len(batch.bodies)
                self._insert_trial(conn, trial, bundle.verdict)
                if bundle.metrics:
                    self._insert_metrics(conn, run_id, trial_key, bundle.metrics)
        except DuplicateRecordError:
            if bundle_stored_as(self, bundle):
                return 0
            raise
        return bundle.event_count

    def _insert_trial(self, conn: Conn, trial: TrialRecord, verdict: str | None) -> None:
        try:
            conn.execute(
                "INSERT INTO trials (run_id, trial_key, task_id, scenario_index, trial_index, "
                "fault_type, domain, outcome, verdict, started_at, ended_at, latency_ms, "
                "attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    trial.run_id,
                    trial.trial_key,
                    trial.task_id,
                    trial.scenario_index,
                    trial.trial_index,
                    trial.fault_type,
                    trial.domain,
                    trial.outcome,
                    verdict,
                    trial.started_at,
                    trial.ended_at,
                    trial.latency_ms,
                    trial.attempts,
                ),
            )
        except self._integrity_errors:
            raise DuplicateRecordError(
                f"trial {trial.trial_key!r} of run {trial.run_id!r} is already recorded; "
                "the stored result is kept (a resumed run skips completed_trial_keys)"
            ) from None

    def _insert_attempt(self, conn: Conn, attempt: AttemptRecord) -> None:
        try:
            conn.execute(
                "INSERT INTO attempts (run_id, trial_key, attempt, outcome, error, error_type, "
                "infra, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    attempt.run_id,
                    attempt.trial_key,
                    attempt.attempt,
                    attempt.outcome,
                    attempt.error,
                    attempt.error_type,
                    int(attempt.infra),
                    attempt.started_at,
                    attempt.ended_at,
                ),
            )
        except self._integrity_errors:
            raise DuplicateRecordError(
                f"attempt {attempt.attempt} of trial {attempt.trial_key!r} (run "
                f"{attempt.run_id!r}) is already recorded; use the next attempt number"
            ) from None

    def _insert_metrics(
        self,
        conn: Conn,
        run_id: str,
        trial_key: str | None,
        rows: list[tuple[str, float | None, str | None]],
    ) -> None:
        key = RUN_LEVEL if trial_key is None else trial_key
        try:
            conn.executemany(
                "INSERT INTO metrics (run_id, trial_key, name, value, reason) "
                "VALUES (?, ?, ?, ?, ?)",
                [(run_id, key, name, value, reason) for name, value, reason in rows],
            )
        except self._integrity_errors as exc:
            raise DuplicateRecordError(
                f"a metric of {'the run' if trial_key is None else repr(trial_key)} in run "
                f"{run_id!r} is already recorded ({exc}); stored metrics are never overwritten"
            ) from None

    def save_report(self, run_id: str, report: Report) -> int:
        """Save a battery report of a run (kept beside earlier ones); returns its report id."""
        check_text("run_id", run_id)
        _, body = report_body(report)
        with self._write() as conn:
            return self._insert_report(conn, self._run_row(conn, run_id), report, body)

    def _insert_report(
        self,
        conn: Conn,
        run: RunRecord,
        report: Report,
        body: str,
        saved_at: float | None = None,
    ) -> int:
        check_report_labels(report, run)
        row = conn.execute(
            "INSERT INTO reports (run_id, agent_id, measurement_fingerprint, saved_at, body) "
            "VALUES (?, ?, ?, ?, ?) RETURNING report_id",
            (
                run.run_id,
                run.agent_id,
                run.measurement_fingerprint,
                time.time() if saved_at is None else float(saved_at),
                body,
            ),
        ).fetchone()
        return int(row[0])

    # ------------------------------------------------------------------ export (store copy)
    def export_reports(self, run_id: str) -> list[tuple[float, Report]]:
        """Every report saved for a run, oldest first, with when it was saved."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT saved_at, body FROM reports WHERE run_id = ? ORDER BY report_id",
                (run_id,),
            ).fetchall()
        where = f"a stored report of run {run_id!r}"
        return [
            (float(r[0]), stored_report(_json_column(r[1], where, self.path), where)) for r in rows
        ]

    def import_report(self, run_id: str, report: Report, saved_at: float) -> int:
        """Save a report with the time it was first saved (``save_report`` uses now)."""
        check_text("run_id", run_id)
        _, body = report_body(report)
        with self._write() as conn:
            run = self._run_row(conn, run_id)
            return self._insert_report(conn, run, report, body, saved_at)

    def export_events(
        self, run_id: str, trial_key: str | None = None
    ) -> Iterator[tuple[str, int | None, EventBase]]:
        """Every event of a run (or trial) as (trial key, attempt label, event), in order."""
        sql = "SELECT stream_id, trial_key FROM event_streams WHERE run_id = ?"
        params: tuple[str, ...] = (run_id,)
        if trial_key is not None:
            sql += " AND trial_key = ?"
            params = (run_id, trial_key)
        with self._read() as conn:
            streams = conn.execute(sql + " ORDER BY trial_key", params).fetchall()
        read = _event_reader()
        for stream, key in streams:
            last = -1
            while True:
                with self._read() as conn:
                    rows = conn.execute(
                        "SELECT seq, attempt, body FROM event_rows WHERE stream_id = ? "
                        f"AND seq > ? ORDER BY seq LIMIT {PAGE}",
                        (stream, last),
                    ).fetchall()
                for _, attempt, body in rows:
                    yield key, attempt, read(body)
                if len(rows) < PAGE:
                    break
                last = rows[-1][0]

    # ------------------------------------------------------------------ reads
    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None if it was never started."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None else _run_record(row, self.path)

    def list_runs(self, agent_id: str | None = None) -> list[RunRecord]:
        """Runs, newest first, optionally of one agent."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        params: tuple[str, ...] = ()
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            params = (agent_id,)
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY created_at DESC, run_id DESC", params).fetchall()
        return [_run_record(r, self.path) for r in rows]

    def list_trials(self, run_id: str) -> list[TrialRecord]:
        """A run's recorded trials, by scenario then trial index."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT run_id, trial_key, task_id, scenario_index, trial_index, fault_type, "
                "domain, outcome, verdict, started_at, ended_at, latency_ms, attempts FROM trials "
                "WHERE run_id = ? ORDER BY scenario_index, trial_index, trial_key",
                (run_id,),
            ).fetchall()
        return [
            TrialRecord(
                run_id=r[0],
                trial_key=r[1],
                task_id=r[2],
                scenario_index=r[3],
                trial_index=r[4],
                fault_type=r[5],
                domain=r[6],
                outcome=r[7],
                verdict=None
                if r[8] is None
                else _json_column(r[8], f"the verdict of trial {r[1]!r}", self.path),
                started_at=r[9],
                ended_at=r[10],
                latency_ms=r[11],
                attempts=r[12],
            )
            for r in rows
        ]

    def list_attempts(self, run_id: str, trial_key: str | None = None) -> list[AttemptRecord]:
        """Every attempt of a run (or of one trial), by trial key then attempt number."""
        sql = (
            "SELECT run_id, trial_key, attempt, outcome, error, error_type, infra, started_at, "
            "ended_at FROM attempts WHERE run_id = ?"
        )
        params: tuple[str, ...] = (run_id,)
        if trial_key is not None:
            sql += " AND trial_key = ?"
            params = (run_id, trial_key)
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY trial_key, attempt", params).fetchall()
        return [
            AttemptRecord(
                run_id=r[0],
                trial_key=r[1],
                attempt=r[2],
                outcome=r[3],
                error=r[4],
                error_type=r[5],
                infra=bool(r[6]),
                started_at=r[7],
                ended_at=r[8],
            )
            for r in rows
        ]

    def completed_trial_keys(self, run_id: str) -> frozenset[str]:
        """Keys of the trials already recorded, whatever their outcome: what a resume skips."""
        with self._read() as conn:
            rows = conn.execute("SELECT trial_key FROM trials WHERE run_id = ?", (run_id,))
            return frozenset(r[0] for r in rows)

    def iter_events(
        self, run_id: str, trial_key: str | None = None, *, attempt: int | None = None
    ) -> Iterator[EventBase]:
        """A trial's validated events in recorded order (all trials, by trial key, when None)."""
        sql = "SELECT stream_id FROM event_streams WHERE run_id = ?"
        params: tuple[str, ...] = (run_id,)
        if trial_key is not None:
            sql += " AND trial_key = ?"
            params = (run_id, trial_key)
        with self._read() as conn:
            streams = [r[0] for r in conn.execute(sql + " ORDER BY trial_key", params)]
        return self._stream_events(streams, attempt)

    def _stream_events(self, streams: list[int], attempt: int | None) -> Iterator[EventBase]:
        read = _event_reader()
        page_sql = "SELECT seq, body FROM event_rows WHERE stream_id = ? AND seq > ?"
        if attempt is not None:
            page_sql += " AND attempt = ?"
        page_sql += f" ORDER BY seq LIMIT {PAGE}"
        for stream in streams:
            last = -1
            while True:
                args: tuple[int, ...] = (
                    (stream, last) if attempt is None else (stream, last, attempt)
                )
                with self._read() as conn:
                    rows = conn.execute(page_sql, args).fetchall()
                for _, body in rows:
                    yield read(body)
                if len(rows) < PAGE:
                    break
                last = rows[-1][0]

    def get_metrics(self, run_id: str, trial_key: str | None = None) -> MetricSet:
        """The metrics recorded for a trial, or for the run itself when ``trial_key`` is None."""
        key = RUN_LEVEL if trial_key is None else trial_key
        with self._read() as conn:
            rows = conn.execute(
                "SELECT name, value, reason FROM metrics WHERE run_id = ? AND trial_key = ? "
                "ORDER BY id",
                (run_id, key),
            ).fetchall()
        values: dict[str, float | None] = {}
        undefined: dict[str, str] = {}
        for name, value, reason in rows:
            values[name] = value
            if reason is not None:
                undefined[name] = reason
        return MetricSet(values, undefined)

    def get_report(self, run_id: str) -> Report | None:
        """The latest report saved for a run, or None."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT body FROM reports WHERE run_id = ? ORDER BY report_id DESC LIMIT 1",
                (run_id,),
            ).fetchone()
        if row is None:
            return None
        where = f"{self.path}: the stored report of run {run_id!r}"
        return stored_report(_json_column(row[0], where, self.path), where)

    def list_reports(
        self, agent_id: str | None = None, measurement_fingerprint: str | None = None
    ) -> list[ReportRecord]:
        """The latest report of each matching run, oldest run first (the input CSI needs)."""
        sql = (
            "SELECT rep.report_id, rep.run_id, rep.agent_id, rep.measurement_fingerprint, "
            "runs.created_at, rep.saved_at, rep.body FROM reports AS rep "
            "JOIN runs ON runs.run_id = rep.run_id "
            "WHERE rep.report_id IN (SELECT MAX(report_id) FROM reports GROUP BY run_id)"
        )
        params: list[str] = []
        if agent_id is not None:
            sql += " AND rep.agent_id = ?"
            params.append(agent_id)
        if measurement_fingerprint is not None:
            sql += " AND rep.measurement_fingerprint = ?"
            params.append(measurement_fingerprint)
        with self._read() as conn:
            rows = conn.execute(sql + " ORDER BY runs.created_at, rep.run_id", params).fetchall()
        return [
            ReportRecord(
                report_id=r[0],
                run_id=r[1],
                agent_id=r[2],
                measurement_fingerprint=r[3],
                created_at=r[4],
                saved_at=r[5],
                report=stored_report(
                    _json_column(r[6], f"the stored report of run {r[1]!r}", self.path),
                    f"{self.path}: the stored report of run {r[1]!r}",
                ),
            )
            for r in rows
        ]


def _event_reader() -> Callable[[str], EventBase]:
    """Validate a stored body: pydantic's JSON parser, or ``json.loads`` for what it refuses.

    The fallback mirrors ``read_events``'s slow path: a body pydantic's strict parser rejects but
    the stdlib parser accepts is still read, so whatever the store accepted it can read back.
    """
    adapter = event_adapter()
    fast, slow = adapter.validate_json, adapter.validate_python

    def read(body: str) -> EventBase:
        try:
            return fast(body)  # type: ignore[no-any-return]
        except ValueError:
            pass
        try:
            return slow(json.loads(body))  # type: ignore[no-any-return]
        except (TypeError, ValueError, RecursionError) as exc:
            raise StoreDamagedError(
                f"a stored event is not a readable hb-events/1 event ({type(exc).__name__}); "
                "the store was damaged or changed by hand"
            ) from None

    return read


_RUN_COLUMNS = (
    "run_id, agent_id, battery, measurement_fingerprint, manifest_hash, config, created_at, "
    "status, finished_at"
)


def _json_column(text: Any, what: str, where: str) -> Any:
    """A JSON column's value; a damaged one raises ``StoreDamagedError`` naming it."""
    try:
        return loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreDamagedError(
            f"{where}: {what} is not readable JSON ({type(exc).__name__}); the store was "
            "damaged or changed by hand"
        ) from None


def _run_record(row: tuple[Any, ...], where: str = "the store") -> RunRecord:
    config = _json_column(row[5], f"the config of run {row[0]!r}", where)
    if not isinstance(config, dict):
        raise StoreDamagedError(
            f"{where}: the config of run {row[0]!r} is a {type(config).__name__}, not a JSON "
            "object; the store was changed by hand"
        )
    return RunRecord(
        run_id=row[0],
        agent_id=row[1],
        battery=row[2],
        measurement_fingerprint=row[3],
        manifest_hash=row[4],
        config=config,
        created_at=row[6],
        status=row[7],
        finished_at=row[8],
    )
