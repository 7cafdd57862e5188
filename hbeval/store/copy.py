"""``hbeval store copy``: move runs between stores (SQLite, PostgreSQL, memory) without loss.

Everything of a run is copied: the run record (status and times included), every attempt, every
event with its attempt label and order, each recorded trial with its metrics (as one trial
bundle), run-level metrics, and every saved report with the time it was saved. Copying again is
safe: what the destination already holds identically is skipped (trial bundles are idempotent),
and anything that differs is refused with ``DuplicateRecordError``, naming it, before it is
overwritten. The copy goes through the stores' public writes, so the destination checks
everything as if the run were being recorded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..scoring._report_model import Report

from hbeval_core.events import EventBase

from ._codec import encode_events
from .errors import DuplicateRecordError, UnknownRunError
from .protocol import StoreWriter, one_transaction
from .records import RUN_RUNNING, MetricSet, RunRecord

__all__ = ["CopySummary", "ExportableStore", "copy_between", "copy_store"]


@runtime_checkable
class ExportableStore(StoreWriter, Protocol):
    """A store a run can be copied from and to: the writer plus raw export and import."""

    def export_events(
        self, run_id: str, trial_key: str | None = None
    ) -> Iterator[tuple[str, int | None, EventBase]]:
        """Every event of a run (or trial) as (trial key, attempt label, event), in order."""
        ...

    def export_reports(self, run_id: str) -> list[tuple[float, Report]]:
        """Every report of a run, oldest first, with the time it was saved."""
        ...

    def import_report(self, run_id: str, report: Report, saved_at: float) -> int:
        """Save a report keeping the time it was first saved."""
        ...


@dataclass(frozen=True)
class CopySummary:
    """What a copy wrote (``*_copied``) and found already in place (``*_present``)."""

    runs: int = 0
    trials_copied: int = 0
    trials_present: int = 0
    events_copied: int = 0
    reports_copied: int = 0

    def as_dict(self) -> dict[str, int]:
        """The summary as plain JSON data."""
        return {
            "runs": self.runs,
            "trials_copied": self.trials_copied,
            "trials_present": self.trials_present,
            "events_copied": self.events_copied,
            "reports_copied": self.reports_copied,
        }


def copy_store(
    src: ExportableStore, dst: ExportableStore, run_ids: Sequence[str] | None = None
) -> CopySummary:
    """Copy runs (all of them, oldest first, or ``run_ids`` in the order given) from src to dst."""
    if run_ids is None:
        runs = list(reversed(src.list_runs()))
    else:
        runs = []
        for run_id in run_ids:
            run = src.get_run(run_id)
            if run is None:
                raise UnknownRunError(f"run {run_id!r} is not in the source store")
            runs.append(run)
    total = CopySummary()
    for run in runs:
        with one_transaction(dst):  # a run is copied whole: never `completed` with trials missing
            done = _copy_run(src, dst, run)
        total = CopySummary(
            total.runs + 1,
            total.trials_copied + done.trials_copied,
            total.trials_present + done.trials_present,
            total.events_copied + done.events_copied,
            total.reports_copied + done.reports_copied,
        )
    return total


def _copy_run(src: ExportableStore, dst: ExportableStore, run: RunRecord) -> CopySummary:
    run_id = run.run_id
    stored = dst.get_run(run_id)
    if stored is None:
        dst.start_run(run)  # stored as given: status and times included
    elif stored != run:
        dst.start_run(replace(run, status=RUN_RUNNING, finished_at=None))  # identity checked
    events = {
        key: [(attempt, ev) for _, attempt, ev in rows]
        for key, rows in groupby(src.export_events(run_id), key=lambda row: row[0])
    }
    attempts = {
        key: list(group) for key, group in groupby(src.list_attempts(run_id), lambda a: a.trial_key)
    }
    copied = present = events_copied = 0
    done = dst.completed_trial_keys(run_id)
    for trial in src.list_trials(run_id):
        key = trial.trial_key
        metrics = src.get_metrics(run_id, key)
        trial_events = events.pop(key, [])
        labels = [label for label, _ in groupby(a for a, _ in trial_events)]
        if len(labels) == len(set(labels)):  # one batch per label, in order: one bundle
            by_label = {
                label: [ev for _, ev in group]
                for label, group in groupby(trial_events, key=lambda row: row[0])
            }
            written = dst.record_trial_bundle(
                trial,
                attempts.pop(key, []),
                by_label,
                metrics=metrics.values or None,
                undefined=metrics.undefined or None,
            )
            if key in done:
                present += 1
            else:
                copied += 1
                events_copied += written
            continue
        if key in done:  # interleaved labels: compared piece by piece below
            present += 1
        else:
            copied += 1
        events_copied += _copy_unfinished(dst, run_id, key, attempts.pop(key, []), trial_events)
        dst.record_trial(trial)
        _copy_metrics(dst, run_id, key, metrics)
    for key in sorted(set(attempts) | set(events)):  # trials that never finished
        events_copied += _copy_unfinished(
            dst, run_id, key, attempts.get(key, []), events.get(key, [])
        )
        _copy_metrics(dst, run_id, key, src.get_metrics(run_id, key))
    _copy_metrics(dst, run_id, None, src.get_metrics(run_id))
    reports = _copy_reports(src, dst, run_id)
    if stored != run and run.status != RUN_RUNNING and stored is not None:
        dst.finish_run(run_id, run.status, finished_at=run.finished_at)
    return CopySummary(1, copied, present, events_copied, reports)


def _copy_unfinished(
    dst: ExportableStore,
    run_id: str,
    key: str,
    attempts: Sequence[Any],
    events: list[tuple[int | None, EventBase]],
) -> int:
    """Attempts and events of one trial, written separately; returns how many events."""
    for attempt in attempts:
        dst.record_attempt(attempt)  # idempotent when already there
    if not events:
        return 0
    _, wanted = encode_events(ev for _, ev in events)
    _, there = encode_events(dst.iter_events(run_id, key))
    if there == wanted:
        return 0
    if there:
        raise DuplicateRecordError(
            f"trial {key!r} of run {run_id!r} already has different events in the destination; "
            "nothing of it was copied"
        )
    written = 0
    for label, group in groupby(events, key=lambda row: row[0]):
        written += dst.record_events(run_id, key, [ev for _, ev in group], attempt=label)
    return written


def _copy_metrics(dst: ExportableStore, run_id: str, key: str | None, metrics: MetricSet) -> None:
    if not metrics.values:
        return
    there = dst.get_metrics(run_id, key)
    if there == metrics:
        return
    dst.record_metrics(run_id, key, metrics.values, metrics.undefined)  # refuses a clash


def _copy_reports(src: ExportableStore, dst: ExportableStore, run_id: str) -> int:
    wanted = src.export_reports(run_id)
    there = dst.export_reports(run_id)
    if wanted[: len(there)] != there:
        raise DuplicateRecordError(
            f"run {run_id!r} already has other reports in the destination; none was copied"
        )
    for saved_at, report in wanted[len(there) :]:
        dst.import_report(run_id, report, saved_at)
    return len(wanted) - len(there)


def _same_store(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> bool:
    """Whether ``src`` and ``dst`` name one store: the same URL, or paths and ``sqlite:///``
    URLs that resolve (symlinks followed) to one file."""
    from .postgres import is_postgres_url
    from .sqlite import resolve_path

    if os.fspath(src) == os.fspath(dst):
        return True
    if is_postgres_url(src) or is_postgres_url(dst):
        return False
    try:
        a, b = resolve_path(src), resolve_path(dst)
    except ValueError:
        return False
    if ":memory:" in (a, b):
        return False
    pa, pb = Path(a).resolve(), Path(b).resolve()
    if pa == pb:
        return True
    try:
        return pa.exists() and pb.exists() and os.path.samefile(pa, pb)
    except OSError:
        return False


def copy_between(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], run_ids: Sequence[str] | None = None
) -> CopySummary:
    """``hbeval store copy SRC DST``: open both stores (paths or URLs) and copy runs.

    The source is opened read-only and must exist; the destination is created (and migrated)
    when needed. Refuses to copy a store onto itself.
    """
    from ._open import open_store, store_exists
    from .errors import NoStoreError
    from .postgres import is_postgres_url, public_url

    if _same_store(src, dst):
        shown = public_url(str(src)) if is_postgres_url(src) else os.fspath(src)
        raise ValueError(
            f"SRC and DST are the same store ({shown!r} and {os.fspath(dst)!r} name one "
            "database); nothing to copy"
        )

    where = public_url(str(src)) if is_postgres_url(src) else os.fspath(src)
    if not store_exists(src):
        raise ValueError(f"SRC: no store at {where!r}")
    try:
        source = open_store(src, read_only=True)
    except NoStoreError:  # a PostgreSQL database without hbeval's tables: as a missing file
        raise ValueError(f"SRC: no store at {where!r}") from None
    try:
        target = open_store(dst)
        try:
            return copy_store(source, target, run_ids)
        finally:
            target.close()
    finally:
        source.close()
