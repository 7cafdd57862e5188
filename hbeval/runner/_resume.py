"""Run ids, resuming a stored run, and recording finished trials in the store.

A trial's attempts, events, metrics and record are written together (``trial_bundle``), the
trial record last, so a trial is either complete in the store or re-run on resume.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hbeval_core.events import EventBase
from hbeval_core.vocab import (
    OUTCOME_INFRA_ERROR,
    OUTCOME_SKIPPED,
    OUTCOME_TIMEOUT,
)

from ..store import (
    RUN_COMPLETED,
    AttemptRecord,
    TrialRecord,
)
from ..store._json import Encoded
from ..store.protocol import final_attempts
from ._attempts import _Done, _Job, _Runner

if TYPE_CHECKING:
    from ..scoring import Report

log = logging.getLogger("hbeval.runner")


def default_run_id(store: Any, agent_id: str, fingerprint: str, identity: Mapping[str, Any]) -> str:
    """``<agent>-<fingerprint>``, or the first ``-N`` suffix that is new or resumable.

    A stored run is resumable when it did not complete and has the same identity (agent,
    battery, measurement fingerprint, manifest hash); otherwise the next suffix is tried.
    """
    base = f"{agent_id}-{fingerprint}"
    n = 1
    while True:
        candidate = base if n == 1 else f"{base}-{n}"
        stored = store.get_run(candidate)
        if stored is None:
            return candidate
        same = all(getattr(stored, k) == v for k, v in identity.items())
        if same and stored.status != RUN_COMPLETED:
            return candidate
        n += 1


def reusable_report(store: Any, identity: Mapping[str, Any]) -> Report | None:
    """The report of the newest completed run with exactly this identity, or None.

    ``identity`` holds ``agent_id``, ``battery``, ``measurement_fingerprint`` and
    ``manifest_hash``; a run differing in any of them is never reused. Nor is a run whose
    report recorded no loaded source files or one that has changed since
    (``_provenance.stale_sources``), nor a report ``hbeval gate`` would refuse: one whose
    figures or binding its own trials do not give (``checked_report``).
    """
    from ..scoring._recheck import ReportEdited, checked_report
    from ..scoring._report_model import ReportFormatError
    from ._provenance import stale_sources

    for stored in store.list_runs(agent_id=identity["agent_id"]):
        if stored.status != RUN_COMPLETED:
            continue
        if not all(getattr(stored, k) == v for k, v in identity.items()):
            continue
        report = store.get_report(stored.run_id)
        if report is None:
            continue
        why = stale_sources(report.loaded_sources)
        if why is not None:
            log.info("stored run %s not reused: %s", stored.run_id, why)
            continue
        try:
            return checked_report(report.to_dict(), f"the stored report of run {stored.run_id}")
        except (ReportFormatError, ReportEdited) as exc:
            log.warning("stored run %s not reused: %s", stored.run_id, exc)
    return None


# ---------------------------------------------------------------------- recording
def _record(store: Any, run_id: str, done: _Done) -> None:
    """Write one finished trial in one transaction: attempts, their events, the trial, its metrics.

    A trial is never half-written: an interruption or a refused record stores none of it.
    """
    bundle = trial_bundle(run_id, done)
    store.record_trial_bundle(*bundle.args, **bundle.kwargs)


@dataclass(frozen=True)
class TrialBundle:
    """A finished trial as the store's ``record_trial_bundle`` takes it (plain, picklable data)."""

    args: tuple[TrialRecord, list[AttemptRecord], dict[int | None, Any]]
    kwargs: dict[str, Any]


def trial_bundle(run_id: str, done: _Done) -> TrialBundle:
    """The records, events and metrics ``_record`` writes for one finished trial."""
    job = done.job
    last = len(done.attempts) - 1
    attempts: list[AttemptRecord] = []
    events_by_attempt: dict[int | None, Any] = {}
    for i, att in enumerate(done.attempts):
        res = att.result
        if att.infra:
            att_outcome = OUTCOME_INFRA_ERROR
        elif res.status == "timeout":
            att_outcome = OUTCOME_TIMEOUT
        elif res.status == "skipped":
            att_outcome = OUTCOME_SKIPPED
        else:
            att_outcome = done.outcome
        error, error_type = res.error, res.error_type
        if i == last and done.scoring_error is not None:
            error, error_type = done.scoring_error, "ScoringError"
        attempts.append(
            AttemptRecord(
                run_id=run_id,
                trial_key=job.key,
                attempt=att.number,
                outcome=att_outcome,
                error=error,
                error_type=error_type,
                infra=att.infra or (i == last and done.scoring_error is not None),
                started_at=att.started_at,
                ended_at=att.ended_at,
            )
        )
        events_by_attempt[att.number] = res.events
    final = done.attempts[-1]
    metrics, undefined = _trial_metrics(done.verdict)
    record = TrialRecord(
        run_id=run_id,
        trial_key=job.key,
        task_id=job.task.id,
        scenario_index=job.scenario.index,
        trial_index=job.trial_index,
        outcome=done.outcome,
        fault_type=job.scenario.fault_type,
        domain=job.scenario.domain,
        # The text the verdict's secret check wrote is the text the store writes: once.
        verdict=(
            done.verdict
            if done.verdict is None or done.verdict_json is None
            else Encoded(done.verdict, done.verdict_json)
        ),
        started_at=done.attempts[0].started_at,
        ended_at=final.ended_at,
        latency_ms=final.latency_ms,
        attempts=len(done.attempts),
    )
    return TrialBundle(
        (record, attempts, events_by_attempt), {"metrics": metrics, "undefined": undefined}
    )


def _trial_metrics(
    verdict: Mapping[str, Any] | None,
) -> tuple[dict[str, float | None] | None, dict[str, str] | None]:
    """A verdict's live metrics and the reasons of the undefined ones (None when it has none)."""
    if verdict is None:
        return None, None
    metrics = verdict.get("metrics")
    if not isinstance(metrics, Mapping):
        return None, None
    undefined = verdict.get("metrics_undefined") or {}
    return dict(metrics), {k: v for k, v in undefined.items() if metrics.get(k) is None}


def _record_trial_metrics(store: Any, run_id: str, key: str, verdict: Mapping[str, Any]) -> None:
    # Resume path only: a store written before trial bundles may hold a trial without metrics.
    metrics, undefined = _trial_metrics(verdict)
    if metrics is not None:
        store.record_metrics(run_id, key, metrics, undefined)


KeptTrial = tuple[int, int, str | None]
"""What a run keeps of a trial it recorded and does not hold: its model calls, interventions
and final error (the trial dict's ``usage`` counts and ``error``)."""


def _resumed_trial(
    runner: _Runner,
    job: _Job,
    store: Any,
    record: Any,
    final: AttemptRecord | None,
    kept: KeptTrial | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | str | None]:
    """Rebuild a stored trial's dict (and its episode for memory) from its record, its final
    attempt and that attempt's events.

    ``kept`` (model calls and interventions of the final attempt, and its error as stored) is
    given for a trial this run recorded itself, in one bundle with its metrics: its attempts and
    events are then not read back (``final`` is not needed).
    """
    if kept is not None or final is None:
        events: list[EventBase] = []
    else:
        events = list(store.iter_events(runner.run_id, job.key, attempt=final.attempt))
    verdict = record.verdict
    if (
        kept is None
        and verdict is not None
        and not store.get_metrics(runner.run_id, job.key).values
    ):
        # The run stopped between the trial record and its metrics: write them now.
        _record_trial_metrics(store, runner.run_id, job.key, verdict)
    if kept is not None:
        error: str | None = kept[2]
    else:
        error = final.error if final is not None else None
    trial = runner.trial_dict(
        job,
        outcome=record.outcome,
        verdict=verdict,
        attempts=record.attempts,
        latency_ms=record.latency_ms,
        events=events,
        error=error,
        counts=None if kept is None else kept[:2],
    )
    return trial, runner.episode(job, trial, events)


def _reload_trials(
    runner: _Runner,
    jobs: Sequence[_Job],
    store: Any,
    trial_dicts: dict[str, dict[str, Any]],
    kept: Mapping[str, KeptTrial] | None = None,
) -> None:
    """Fill in the trial dicts not held in memory, from the store (as a resumed run does).

    ``kept`` holds what the run kept of the trials it recorded (``KeptTrial``), so their
    attempts and events need not be read back.
    """
    missing = [job for job in jobs if trial_dicts.get(job.key) is None]
    if not missing:
        return
    kept = kept or {}
    records = {r.trial_key: r for r in store.list_trials(runner.run_id)}
    finals = (
        final_attempts(store, runner.run_id) if any(job.key not in kept for job in missing) else {}
    )
    for job in missing:
        trial_dicts[job.key], _ = _resumed_trial(
            runner,
            job,
            store,
            records[job.key],
            finals.get(job.key),
            kept.get(job.key),
        )
