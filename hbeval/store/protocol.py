"""The ``StoreWriter`` protocol: what the runner, the adapters and the CLI write and read through.

Three implementations ship: :class:`~hbeval.store.SQLiteStore` (the embedded default),
:class:`~hbeval.store.PostgresStore` (a shared server for many machines) and
:class:`~hbeval.store.InMemoryStore` (tests, fast scoring). All refuse the same input with the
same errors, and none drops or overwrites anything it has stored. ``Recorder`` is the protocol's
former name, kept as an alias.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..scoring._report_model import Report

from hbeval_core.events import EventBase

from .records import AttemptRecord, MetricSet, ReportRecord, RunRecord, TrialRecord


@runtime_checkable
class StoreWriter(Protocol):
    """Where a battery run's runs, trials, attempts, events, metrics and reports are kept.

    Every write is all-or-nothing: a call that raises has stored nothing, and what was stored
    before is untouched. Invalid input raises ``ValueError`` (a :class:`StoreError` for refusals
    such as duplicates or unknown runs) naming the field, metric or event at fault.
    """

    # ------------------------------------------------------------------ writes
    def start_run(self, run: RunRecord) -> bool:
        """Record a new run (True), or reopen a stored run with the same identity (False).

        Resuming sets the status back to running and keeps everything else as first stored; a
        different agent, battery, measurement fingerprint or manifest hash is refused.
        """
        ...

    def finish_run(
        self,
        run_id: str,
        status: str,
        report: Report | None = None,
        *,
        finished_at: float | None = None,
    ) -> None:
        """Set a run's final status (``records.RUN_FINAL_STATUSES``), saving its report if given."""
        ...

    def record_trial(self, trial: TrialRecord) -> None:
        """Store a trial's final result, once.

        Trials are keyed on (run, trial key), the key naming the scenario and trial index. The
        same trial again, with every value equal, is a no-op (a retried delivery); a trial with
        the key and any other value is refused with ``DuplicateRecordError``.
        """
        ...

    def record_attempt(self, attempt: AttemptRecord) -> None:
        """Store one attempt of a trial; attempt numbers are never reused or overwritten.

        Keyed on (run, trial key, attempt): an identical second insert is a no-op, a different
        one is refused.
        """
        ...

    def record_events(
        self,
        run_id: str,
        trial_key: str,
        events: Iterable[EventBase],
        *,
        attempt: int | None = None,
    ) -> int:
        """Append a batch of a trial's events after the ones already stored; returns how many.

        Order is kept by a per-trial ``seq`` that continues across batches; ``attempt`` labels
        the events with the attempt that produced them.
        """
        ...

    def record_metrics(
        self,
        run_id: str,
        trial_key: str | None,
        metrics: Mapping[str, float | None],
        undefined: Mapping[str, str] | None = None,
    ) -> None:
        """Store metric values of a trial (or of the run, ``trial_key=None``).

        A ``None`` value needs a reason in ``undefined`` (a code from ``vocab.UNDEFINED_REASONS``);
        a number must not have one. A metric already stored for that trial is refused.
        """
        ...

    def record_trial_bundle(
        self,
        trial: TrialRecord,
        attempts: Sequence[AttemptRecord] = (),
        events_by_attempt: Mapping[int | None, Iterable[EventBase]] | None = None,
        *,
        metrics: Mapping[str, float | None] | None = None,
        undefined: Mapping[str, str] | None = None,
    ) -> int:
        """Store a finished trial at once: its attempts, their events, the trial, its metrics.

        One write (one database transaction) instead of one per record, with the checks and
        refusals of ``record_attempt``, ``record_events``, ``record_trial`` and
        ``record_metrics``; besides, every attempt must belong to ``trial`` and no attempt
        number may appear twice. ``events_by_attempt`` maps an attempt number (or None, for
        unlabelled events) to that attempt's events, appended in the mapping's order after any
        events of the trial already stored. ``metrics``/``undefined`` are ``record_metrics``'s
        (None: no metrics). A refused bundle stores nothing of itself (a duplicate attempt,
        trial or metric anywhere refuses all of it) and leaves what was stored untouched; a
        bundle already stored exactly as given (trial, attempts, events and metrics all equal)
        is a no-op. Returns how many events were stored (0 for such a replay).
        """
        ...

    def save_report(self, run_id: str, report: Report) -> int:
        """Save a battery report of a run (kept beside earlier ones); returns its report id."""
        ...

    # ------------------------------------------------------------------ reads
    def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None if it was never started."""
        ...

    def list_runs(self, agent_id: str | None = None) -> list[RunRecord]:
        """Runs, newest first, optionally of one agent."""
        ...

    def list_trials(self, run_id: str) -> list[TrialRecord]:
        """A run's recorded trials, by scenario then trial index."""
        ...

    def list_attempts(self, run_id: str, trial_key: str | None = None) -> list[AttemptRecord]:
        """Every attempt of a run (or of one trial), by trial key then attempt number."""
        ...

    def completed_trial_keys(self, run_id: str) -> frozenset[str]:
        """Keys of the trials already recorded, whatever their outcome: what a resume skips."""
        ...

    def iter_events(
        self, run_id: str, trial_key: str | None = None, *, attempt: int | None = None
    ) -> Iterator[EventBase]:
        """A trial's validated events in recorded order (all trials, by trial key, when None)."""
        ...

    def get_metrics(self, run_id: str, trial_key: str | None = None) -> MetricSet:
        """The metrics recorded for a trial, or for the run itself when ``trial_key`` is None."""
        ...

    def get_report(self, run_id: str) -> Report | None:
        """The latest report saved for a run, or None."""
        ...

    def list_reports(
        self, agent_id: str | None = None, measurement_fingerprint: str | None = None
    ) -> list[ReportRecord]:
        """The latest report of each matching run, oldest run first (the input CSI needs)."""
        ...

    def close(self) -> None:
        """Release the store's resources. Idempotent."""
        ...


Recorder = StoreWriter
"""The former name of :class:`StoreWriter`."""


def final_attempts(store: StoreWriter, run_id: str) -> dict[str, AttemptRecord]:
    """Each stored trial's final attempt (the highest attempt number), by trial key."""
    final: dict[str, AttemptRecord] = {}
    for a in store.list_attempts(run_id):
        kept = final.get(a.trial_key)
        if kept is None or a.attempt > kept.attempt:
            final[a.trial_key] = a
    return final


def one_transaction(store: object) -> AbstractContextManager[object]:
    """``store.transaction()`` when the store offers one (all three shipped stores do): every
    write in the block is stored, or none. A store without it writes call by call."""
    begin = getattr(store, "transaction", None)
    return nullcontext() if begin is None else begin()
