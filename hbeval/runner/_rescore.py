"""Score a stored run again under the current scoring version, from its raw events.

``rescore_run(store, run_id)`` reads the run's latest stored report and, for each of its scored
trials, the final attempt's events, and scores the trial again with ``score_trial`` as this
hbeval scores (``SCORING_VERSION``). The new report is built as a run's report is (CSI, which
comes from other runs' reports, is taken as the old report states it), bound to the run, and
saved **beside** the old one: the old report is never edited (the store keeps
every report of a run; readers take the latest).

What the store does not hold is taken from the old verdict, because it is the task's code or
content, not the trace:

- the verifier's decision (``passed``, ``pass_basis``, ``keyword_coverage``,
  ``verifier_error``): a verifier is code, and the store keeps only what it decided;
- the task's rules as far as they acted: forbidden tools that ran, the irreversible tools the
  side-effect ledger tracked (with their idempotency keys); a forbidden or irreversible tool
  that never ran changed nothing, and an injection's forbidden tool is in the trace;
- methodology A's text figures, which grade the task's required keywords.

A trial without a verdict (infra error, skipped) is kept as it was. A run whose stored report
is already under the current scoring version is rescored all the same (the result then equals
it, figure for figure, which is a check in itself).

The new report carries the measurement fingerprint of what it now is: the same battery, plans,
seed and trials, scored under the current scoring and derivation versions. That is the recipe's
fingerprint (``hbeval_core.faults.measurement_fingerprint``) with the current versions, the one
a fresh run of the same battery gets today, so the rescored report compares with new runs and
not with its own old report. It is recomputed only where the old report's own fingerprint is
reproduced from its stored parts and versions (``rescored_fingerprints``); a fingerprint of
another recipe (an import's covers no scoring version) is kept as it was.

A store lists every report of a run under the run's one measurement fingerprint. A rescore
whose fingerprint moved is therefore a new measurement, stored as its own run beside the
original: ``<run id>-rescored-<new fingerprint>``, holding the original's trials, attempts and
events (the trial records carry the new verdicts and metrics) and the new report. Its config
names the run it was scored from (``rescored_from``). The original run and its report are
left as they were. Rescoring again gives the same run and adds an identical report to it. A
rescore whose fingerprint did not move saves its report beside the old one, in the same run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hbeval_core.contract import TrialResult
from hbeval_core.events import EventBase, RunEnd
from hbeval_core.faults import measurement_fingerprint
from hbeval_core.faults.battery import BUILD_ALGORITHM, COMPAT_BUILD_ALGORITHM
from hbeval_core.faults.ledger import IDEMPOTENCY_KEYS_FIELD
from hbeval_core.faults.userbattery import USER_BUILD_ALGORITHM
from hbeval_core.vocab import CSI, DERIVE_VERSION, METHODOLOGY_B, METHODOLOGY_C, SCORING_VERSION

from ..scoring import SCORED_OUTCOMES, Report, add_consistency, score_trial
from ..scoring._battery import DEFAULT_CONFIDENCE, DEFAULT_TAIL_SIZE, _build
from ..scoring._binding import bind_report, bound_trials
from ..store.protocol import final_attempts
from ..store.records import RUN_COMPLETED, RUN_RUNNING, TrialRecord
from ._resume import _trial_metrics

__all__ = ["RescoreError", "rescore_run", "rescored_fingerprints", "rescored_run_id"]

_CARRIED = ("passed", "pass_basis", "keyword_coverage", "verifier_error", "text_heuristics")
"""Verdict fields a rescore carries over from the old verdict (the module docstring)."""


class RescoreError(ValueError):
    """The run cannot be scored again (no such run, no stored report, no events)."""


_BUILD_VERSIONS = (BUILD_ALGORITHM, COMPAT_BUILD_ALGORITHM, USER_BUILD_ALGORITHM)
"""The battery build algorithms a battery run's measurement fingerprint can name."""


def rescored_fingerprints(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """A stored report's fingerprints as the rescored report carries them (module docstring).

    The measurement fingerprint becomes the recipe's under ``SCORING_VERSION`` and
    ``DERIVE_VERSION`` when the old one is the recipe's under the report's own versions, from
    its battery-spec and plan fingerprints, seed, trials and a battery build algorithm; else
    the fingerprints are returned as they were.
    """
    fps = report.get("fingerprints")
    if not isinstance(fps, Mapping):
        return None
    run_given, versions_given = report.get("run"), report.get("versions")
    run: Mapping[str, Any] = run_given if isinstance(run_given, Mapping) else {}
    versions: Mapping[str, Any] = versions_given if isinstance(versions_given, Mapping) else {}
    parts = [fps.get(k) for k in ("battery_spec", "plan", "measurement")]
    parts += [versions.get("scoring"), versions.get("derive")]
    seed, trials = run.get("seed"), run.get("trials")
    if not all(isinstance(v, str) for v in parts) or not isinstance(seed, int):
        return dict(fps)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        return dict(fps)
    spec, plan, measured, old_scoring, old_derive = (str(v) for v in parts)
    for build in _BUILD_VERSIONS:
        if measurement_fingerprint(spec, build, plan, seed, trials, old_scoring, old_derive) != (
            measured
        ):
            continue
        now = measurement_fingerprint(
            spec, build, plan, seed, trials, SCORING_VERSION, DERIVE_VERSION
        )
        return {**fps, "measurement": now}
    return dict(fps)


def _stored_task(trial: Mapping[str, Any], verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The task as far as the stored verdict shows it acted (the module docstring)."""
    passed = verdict.get("passed") is True
    ledger = verdict.get("side_effects")
    keyed: dict[str, str] = {}
    irreversible = list(verdict.get("irreversible_tools_run") or ())
    if isinstance(ledger, Mapping) and isinstance(ledger.get("irreversible"), Mapping):
        for tool, key in ledger["irreversible"].items():
            irreversible.append(str(tool))
            if isinstance(key, str) and key:
                keyed[str(tool)] = key

    def verify(final_state: Any, trace: Any) -> bool:
        return passed

    return {
        "id": trial.get("task_id"),
        "verify": verify,
        "forbidden_tools": tuple(dict.fromkeys(verdict.get("forbidden_tools_run") or ())),
        "irreversible_tools": tuple(dict.fromkeys(irreversible)),
        "metadata": {IDEMPOTENCY_KEYS_FIELD: keyed} if keyed else {},
    }


def _result(events: Sequence[EventBase], verdict: Mapping[str, Any]) -> TrialResult:
    """The trial's result as its events give it (the final answer is the run end's output)."""
    end = next((e for e in reversed(events) if isinstance(e, RunEnd)), None)
    output = None if end is None else end.output
    return TrialResult(
        final_state=output,
        events=list(events),
        status=str(verdict.get("run_status") or (end.status if end is not None else "ok")),
        response_text=output if isinstance(output, str) else None,
    )


def _rescored_verdict(
    store: Any, run_id: str, trial: Mapping[str, Any], attempt: int | None
) -> dict[str, Any]:
    verdict = trial["verdict"]
    events = list(store.iter_events(run_id, str(trial["trial_key"]), attempt=attempt))
    if not events:
        raise RescoreError(
            f"run {run_id!r}, trial {trial['trial_key']!r}: no events are stored for it, so it "
            "cannot be scored again"
        )
    methodology = str(verdict.get("methodology") or METHODOLOGY_B)
    scenario = {
        "fault_type": trial.get("fault_type"),
        "is_nominal": trial.get("is_nominal"),
        "domain": trial.get("domain"),
    }
    new = score_trial(
        _stored_task(trial, verdict),
        scenario,
        _result(events, verdict),
        # A judge is code the store does not keep: C is scored without one (no_judge).
        methodology=METHODOLOGY_B if methodology == METHODOLOGY_C else methodology,
    ).as_dict()
    new["methodology"] = methodology
    for key in _CARRIED:
        if key in verdict:
            new[key] = verdict[key]
    return new


def rescore_run(store: Any, run_id: str) -> tuple[Report, Report]:
    """``(old report, new report)``: the run scored again from its events, the new report saved
    beside the old one (rules in the module docstring). Raises ``RescoreError``."""
    if store.get_run(run_id) is None:
        raise RescoreError(f"no run {run_id!r} in {store.path}; `hbeval runs list` shows the runs")
    old = store.get_report(run_id)
    if old is None:
        raise RescoreError(
            f"run {run_id!r} has no stored report to score again (it never finished); resume it "
            "first"
        )
    data = old.to_dict()
    finals = final_attempts(store, run_id)
    trials: list[dict[str, Any]] = []
    for t in data.get("trials") or ():
        trial = dict(t)
        if isinstance(trial.get("verdict"), Mapping) and trial.get("outcome") in SCORED_OUTCOMES:
            final = finals.get(str(trial["trial_key"]))
            trial["verdict"] = _rescored_verdict(
                store, run_id, trial, None if final is None else final.attempt
            )
        trials.append(trial)
    fingerprints = rescored_fingerprints(data)
    moved = fingerprints is not None and fingerprints.get("measurement") != (
        (data.get("fingerprints") or {}).get("measurement")
    )
    target = run_id
    if moved and fingerprints is not None:
        target = _remeasured_run(store, run_id, fingerprints, trials)
    run_info = {
        **data["run"],
        "run_id": target,
        "fingerprints": fingerprints,
        "manifest_hash": data.get("manifest_hash"),
        "ended_at": data["run"].get("ended_at") or time.time(),
    }
    # CSI comes from other runs' reports, which a rescore leaves alone: taken as stated.
    csi_given = (old.metrics.csi, old.undefined.get(CSI), old.csi_info)
    report = _build(
        run_info,
        bound_trials(target, trials),
        (),
        data.get("thresholds"),
        DEFAULT_CONFIDENCE,
        DEFAULT_TAIL_SIZE,
        csi_given=csi_given,
    )
    report = bind_report(add_consistency(report, store))
    if moved:
        store.finish_run(target, RUN_COMPLETED, report)
    else:
        store.save_report(run_id, report)
    return old, report


def rescored_run_id(run_id: str, measurement: str) -> str:
    """The run a rescore whose measurement fingerprint moved is stored as."""
    return f"{run_id}-rescored-{measurement}"


def _remeasured_run(
    store: Any, run_id: str, fingerprints: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]
) -> str:
    """Start (or reopen) the rescore's own run and copy the original's trials into it, with the
    new verdicts and metrics (module docstring). Returns its run id."""
    original = store.get_run(run_id)
    measurement = str(fingerprints["measurement"])
    target = rescored_run_id(run_id, measurement)
    store.start_run(
        replace(
            original,
            run_id=target,
            measurement_fingerprint=measurement,
            config={**original.config, "rescored_from": run_id},
            created_at=time.time(),
            status=RUN_RUNNING,
            finished_at=None,
        )
    )
    verdicts = {str(t.get("trial_key")): t.get("verdict") for t in trials}
    for record in store.list_trials(run_id):
        key = record.trial_key
        verdict = verdicts.get(key, record.verdict)
        verdict = dict(verdict) if isinstance(verdict, Mapping) else None
        events: dict[int | None, list[Any]] = {}
        for _, label, event in store.export_events(run_id, key):
            events.setdefault(label, []).append(event)
        metrics, undefined = _trial_metrics(verdict)
        store.record_trial_bundle(
            _moved(record, target, verdict),
            [replace(a, run_id=target) for a in store.list_attempts(run_id, key)],
            events,
            metrics=metrics,
            undefined=undefined or None,
        )
    return target


def _moved(record: TrialRecord, run_id: str, verdict: dict[str, Any] | None) -> TrialRecord:
    return replace(record, run_id=run_id, verdict=verdict)
