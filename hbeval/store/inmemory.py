"""An in-memory :class:`StoreWriter` for tests and fast scoring: same rules as SQLite, no file.

It validates exactly what :class:`~hbeval.store.SQLiteStore` validates (the same checks, the
same errors) and keeps JSON fields as encoded text, so what you read back is a fresh copy, never
an object the caller can still mutate. Events are kept as the (frozen) event objects themselves,
after the same serialisation check, so scoring from memory does not re-parse them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from hbeval_core.events import EventBase

from ..scoring._report_model import Report
from ._bundle import prepare_bundle
from ._codec import EncodedEvents, encode_events
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
from .errors import DuplicateRecordError, UnknownRunError
from .records import (
    RUN_RUNNING,
    AttemptRecord,
    MetricSet,
    ReportRecord,
    RunRecord,
    TrialRecord,
)


@dataclass
class _Run:
    """Everything stored under one run id."""

    record: RunRecord
    config: str
    trials: dict[str, tuple[TrialRecord, str | None]] = field(default_factory=dict)
    attempts: dict[tuple[str, int], AttemptRecord] = field(default_factory=dict)
    events: dict[str, list[tuple[int | None, EventBase]]] = field(default_factory=dict)
    metrics: dict[str, dict[str, tuple[float | None, str | None]]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Report:
    report_id: int
    run_id: str
    saved_at: float
    body: str


class InMemoryStore:
    """A :class:`StoreWriter` held in dicts, guarded by one lock; gone when the object is."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._runs: dict[str, _Run] = {}
        self._reports: list[_Report] = []

    def __repr__(self) -> str:
        return f"InMemoryStore({len(self._runs)} runs)"

    def __enter__(self) -> InMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release; kept for the protocol. Idempotent."""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Every write in the block is stored, or none: an error restores what was held before."""
        with self._lock:
            runs = {k: _copied(r) for k, r in self._runs.items()}
            reports = list(self._reports)
            try:
                yield
            except BaseException:
                self._runs, self._reports = runs, reports
                raise

    def _run(self, run_id: str) -> _Run:
        try:
            return self._runs[run_id]
        except KeyError:
            raise UnknownRunError(
                f"run {run_id!r} was never started in this store (start_run first)"
            ) from None

    # ------------------------------------------------------------------ writes
    def start_run(self, run: RunRecord) -> bool:
        """Record a new run (True), or reopen a stored run with the same identity (False)."""
        config = check_run(run)
        with self._lock:
            stored = self._runs.get(run.run_id)
            if stored is not None:
                check_resume(stored.record, run)
                stored.record = replace(stored.record, status=RUN_RUNNING, finished_at=None)
                return False
            self._runs[run.run_id] = _Run(replace(run, created_at=float(run.created_at)), config)
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
        when = time.time() if finished_at is None else float(finished_at)
        with self._lock:
            stored = self._run(run_id)
            if report is not None and body is not None:
                self._insert_report(stored.record, report, body)
            stored.record = replace(stored.record, status=status, finished_at=when)

    def record_trial(self, trial: TrialRecord) -> None:
        """Store a trial's final result once: again as stored is a no-op, different is refused."""
        verdict = check_trial(trial)
        with self._lock:
            stored = self._run(trial.run_id)
            try:
                _refuse_stored_trial(stored, trial)
            except DuplicateRecordError:
                if trial_stored_as(self, trial):
                    return
                raise
            stored.trials[trial.trial_key] = (trial, verdict)

    def record_attempt(self, attempt: AttemptRecord) -> None:
        """Store one attempt of a trial; attempt numbers are never reused or overwritten."""
        check_attempt(attempt)
        with self._lock:
            stored = self._run(attempt.run_id)
            try:
                _refuse_stored_attempt(stored, attempt)
            except DuplicateRecordError:
                if attempt_stored_as(self, attempt):
                    return
                raise
            stored.attempts[attempt.trial_key, attempt.attempt] = attempt

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
        batch = list(events)
        # The same checks as SQLite (NaN, non-events), result unused; rows already made pass.
        encode_events(events if isinstance(events, EncodedEvents) else batch)
        if not batch:
            return 0
        with self._lock:
            stored = self._run(run_id)
            stored.events.setdefault(trial_key, []).extend((attempt, ev) for ev in batch)
        return len(batch)

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
        with self._lock:
            stored = self._run(run_id)
            _refuse_stored_metrics(stored, run_id, trial_key, rows)
            _store_metrics(stored, trial_key, rows)

    def record_trial_bundle(
        self,
        trial: TrialRecord,
        attempts: Sequence[AttemptRecord] = (),
        events_by_attempt: Mapping[int | None, Iterable[EventBase]] | None = None,
        *,
        metrics: Mapping[str, float | None] | None = None,
        undefined: Mapping[str, str] | None = None,
    ) -> int:
        """Store a finished trial in one step; returns how many events it stored.

        The same checks and refusals as SQLite's: everything is checked (and every duplicate
        looked for) before anything is stored, so a refused bundle stores nothing of itself.
        A bundle already stored exactly as given stores nothing and returns 0.
        """
        bundle = prepare_bundle(trial, attempts, events_by_attempt, metrics, undefined)
        run_id, trial_key = trial.run_id, trial.trial_key
        with self._lock:
            stored = self._run(run_id)
            try:
                for attempt in bundle.attempts:  # refused in SQLite's write order
                    _refuse_stored_attempt(stored, attempt)
                _refuse_stored_trial(stored, trial)
                if bundle.metrics:
                    _refuse_stored_metrics(stored, run_id, trial_key, bundle.metrics)
            except DuplicateRecordError:
                if bundle_stored_as(self, bundle):
                    return 0
                raise
            for attempt in bundle.attempts:
                stored.attempts[trial_key, attempt.attempt] = attempt
            if bundle.batches:
                kept = stored.events.setdefault(trial_key, [])
                for batch in bundle.batches:
                    kept.extend((batch.attempt, ev) for ev in batch.events)
            stored.trials[trial_key] = (trial, bundle.verdict)
            if bundle.metrics:
                _store_metrics(stored, trial_key, bundle.metrics)
        return bundle.event_count

    def save_report(self, run_id: str, report: Report) -> int:
        """Save a battery report of a run (kept beside earlier ones); returns its report id."""
        check_text("run_id", run_id)
        _, body = report_body(report)
        with self._lock:
            return self._insert_report(self._run(run_id).record, report, body)

    def _insert_report(
        self, run: RunRecord, report: Report, body: str, saved_at: float | None = None
    ) -> int:
        check_report_labels(report, run)
        report_id = len(self._reports) + 1
        when = time.time() if saved_at is None else float(saved_at)
        self._reports.append(_Report(report_id, run.run_id, when, body))
        return report_id

    # ------------------------------------------------------------------ export (store copy)
    def export_reports(self, run_id: str) -> list[tuple[float, Report]]:
        """Every report saved for a run, oldest first, with when it was saved."""
        with self._lock:
            return [
                (r.saved_at, stored_report(loads(r.body), f"report {r.report_id}"))
                for r in self._reports
                if r.run_id == run_id
            ]

    def import_report(self, run_id: str, report: Report, saved_at: float) -> int:
        """Save a report with the time it was first saved (``save_report`` uses now)."""
        check_text("run_id", run_id)
        _, body = report_body(report)
        with self._lock:
            return self._insert_report(self._run(run_id).record, report, body, saved_at)

    def export_events(
        self, run_id: str, trial_key: str | None = None
    ) -> Iterator[tuple[str, int | None, EventBase]]:
        """Every event of a run (or trial) as (trial key, attempt label, event), in order."""
        with self._lock:
            stored = self._runs.get(run_id)
            streams = {} if stored is None else stored.events
            keys = sorted(streams) if trial_key is None else [trial_key]
            rows = [(key, a, ev) for key in keys for a, ev in streams.get(key, ())]
        return iter(rows)

    # ------------------------------------------------------------------ reads
    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None if it was never started."""
        with self._lock:
            stored = self._runs.get(run_id)
            return None if stored is None else _fresh_run(stored)

    def list_runs(self, agent_id: str | None = None) -> list[RunRecord]:
        """Runs, newest first, optionally of one agent."""
        with self._lock:
            runs = [
                _fresh_run(s)
                for s in self._runs.values()
                if agent_id is None or s.record.agent_id == agent_id
            ]
        runs.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        return runs

    def list_trials(self, run_id: str) -> list[TrialRecord]:
        """A run's recorded trials, by scenario then trial index."""
        with self._lock:
            stored = self._runs.get(run_id)
            items = [] if stored is None else list(stored.trials.values())
        trials = [
            replace(t, verdict=None if verdict is None else loads(verdict)) for t, verdict in items
        ]
        trials.sort(key=lambda t: (t.scenario_index, t.trial_index, t.trial_key))
        return trials

    def list_attempts(self, run_id: str, trial_key: str | None = None) -> list[AttemptRecord]:
        """Every attempt of a run (or of one trial), by trial key then attempt number."""
        with self._lock:
            stored = self._runs.get(run_id)
            items = [] if stored is None else list(stored.attempts.items())
        return [a for (key, _), a in sorted(items) if trial_key is None or key == trial_key]

    def completed_trial_keys(self, run_id: str) -> frozenset[str]:
        """Keys of the trials already recorded, whatever their outcome: what a resume skips."""
        with self._lock:
            stored = self._runs.get(run_id)
            return frozenset() if stored is None else frozenset(stored.trials)

    def iter_events(
        self, run_id: str, trial_key: str | None = None, *, attempt: int | None = None
    ) -> Iterator[EventBase]:
        """A trial's validated events in recorded order (all trials, by trial key, when None)."""
        with self._lock:
            stored = self._runs.get(run_id)
            streams = {} if stored is None else stored.events
            keys = sorted(streams) if trial_key is None else [trial_key]
            # A snapshot, so a writer appending meanwhile does not disturb the iteration.
            rows = [row for key in keys for row in streams.get(key, ())]
        return iter([ev for a, ev in rows if attempt is None or a == attempt])

    def get_metrics(self, run_id: str, trial_key: str | None = None) -> MetricSet:
        """The metrics recorded for a trial, or for the run itself when ``trial_key`` is None."""
        key = "" if trial_key is None else trial_key
        with self._lock:
            stored = self._runs.get(run_id)
            items = [] if stored is None else list(stored.metrics.get(key, {}).items())
        values: dict[str, float | None] = {name: value for name, (value, _) in items}
        undefined = {name: reason for name, (_, reason) in items if reason is not None}
        return MetricSet(values, undefined)

    def get_report(self, run_id: str) -> Report | None:
        """The latest report saved for a run, or None."""
        with self._lock:
            for rep in reversed(self._reports):
                if rep.run_id == run_id:
                    return stored_report(loads(rep.body), f"report {rep.report_id}")
        return None

    def list_reports(
        self, agent_id: str | None = None, measurement_fingerprint: str | None = None
    ) -> list[ReportRecord]:
        """The latest report of each matching run, oldest run first (the input CSI needs)."""
        with self._lock:
            latest: dict[str, _Report] = {}
            for rep in self._reports:
                latest[rep.run_id] = rep
            out = []
            for rep in latest.values():
                run = self._runs[rep.run_id].record
                if agent_id is not None and run.agent_id != agent_id:
                    continue
                if (
                    measurement_fingerprint is not None
                    and run.measurement_fingerprint != measurement_fingerprint
                ):
                    continue
                out.append(
                    ReportRecord(
                        report_id=rep.report_id,
                        run_id=rep.run_id,
                        agent_id=run.agent_id,
                        measurement_fingerprint=run.measurement_fingerprint,
                        created_at=run.created_at,
                        saved_at=rep.saved_at,
                        report=stored_report(loads(rep.body), f"report {rep.report_id}"),
                    )
                )
        out.sort(key=lambda r: (r.created_at, r.run_id))
        return out


def _copied(run: _Run) -> _Run:
    """A copy of ``run`` whose containers can change without changing the original."""
    return replace(
        run,
        trials=dict(run.trials),
        attempts=dict(run.attempts),
        events={k: list(v) for k, v in run.events.items()},
        metrics={k: dict(v) for k, v in run.metrics.items()},
    )


def _refuse_stored_trial(stored: _Run, trial: TrialRecord) -> None:
    if trial.trial_key in stored.trials:
        raise DuplicateRecordError(
            f"trial {trial.trial_key!r} of run {trial.run_id!r} is already recorded; "
            "the stored result is kept (a resumed run skips completed_trial_keys)"
        )


def _refuse_stored_attempt(stored: _Run, attempt: AttemptRecord) -> None:
    if (attempt.trial_key, attempt.attempt) in stored.attempts:
        raise DuplicateRecordError(
            f"attempt {attempt.attempt} of trial {attempt.trial_key!r} (run "
            f"{attempt.run_id!r}) is already recorded; use the next attempt number"
        )


def _refuse_stored_metrics(
    stored: _Run, run_id: str, trial_key: str | None, rows: list[tuple[str, Any, Any]]
) -> None:
    kept = stored.metrics.get("" if trial_key is None else trial_key, {})
    for name, _, _ in rows:
        if name in kept:
            raise DuplicateRecordError(
                f"metric {name!r} of {'the run' if trial_key is None else repr(trial_key)} "
                f"in run {run_id!r} is already recorded; "
                "stored metrics are never overwritten"
            )


def _store_metrics(
    stored: _Run, trial_key: str | None, rows: list[tuple[str, float | None, str | None]]
) -> None:
    kept = stored.metrics.setdefault("" if trial_key is None else trial_key, {})
    for name, value, reason in rows:
        kept[name] = (value, reason)


def _fresh_run(stored: _Run) -> RunRecord:
    """The run record with a config the caller may mutate without touching the store."""
    return replace(stored.record, config=loads(stored.config))
