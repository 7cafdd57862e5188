"""Small folds over a battery's trial dicts (as the runner records them), shared by the report's
sections: a trial's verdict, whether it passed, means, rates with Wilson intervals, pass^k
entries, the report's trial order and the mean of a live metric.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hbeval_core.metrics import (
    ClusteredRate,
    clustered_rate,
    wilson_interval,
)
from hbeval_core.metrics import MetricValue as _MetricValue
from hbeval_core.vocab import (
    NO_MODEL_EVENTS,
    NO_STEPS,
    NO_TRIALS,
    OUTCOME_FAIL,
    OUTCOME_PASS,
    OUTCOME_TIMEOUT,
)

from ._report_model import KValue, Rate, RateUncertainty

SCORED_OUTCOMES = (OUTCOME_PASS, OUTCOME_FAIL, OUTCOME_TIMEOUT)
"""Outcomes that count in rates; infra_error and skipped do not."""


def _verdict(trial: Mapping[str, Any]) -> Mapping[str, Any]:
    v = trial.get("verdict")
    return v if isinstance(v, Mapping) else {}


def _passed(trial: Mapping[str, Any]) -> bool:
    return trial.get("outcome") == OUTCOME_PASS


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _interval(successes: int, n: int, confidence: float) -> tuple[float, float] | None:
    ci = wilson_interval(successes, n, confidence)
    return None if ci is None else (ci[0], ci[1])


def _cluster_key(trial: Mapping[str, Any]) -> Any:
    """The cluster a trial belongs to: its scenario (a recording's scenario is its task)."""
    index = trial.get("scenario_index")
    if isinstance(index, int) and not isinstance(index, bool):
        return ("scenario", index)
    return ("task", str(trial.get("task_id")))


def _clustered(
    values: Iterable[tuple[Mapping[str, Any], float]], confidence: float
) -> ClusteredRate:
    """The clustered rate of per-trial values in [0, 1], clustered by scenario."""
    groups: dict[Any, list[float]] = {}
    for trial, value in values:
        groups.setdefault(_cluster_key(trial), []).append(value)
    return clustered_rate(groups, confidence)


def _clustered_pass(trials: Sequence[Mapping[str, Any]], confidence: float) -> ClusteredRate:
    return _clustered(((t, 1.0 if _passed(t) else 0.0) for t in trials), confidence)


def _uncertainty_entry(cr: ClusteredRate, reason: str | None = None) -> RateUncertainty:
    """A clustered rate as the report's ``uncertainty.rates`` entry (null with ``reason``)."""
    if reason is not None or cr.estimate is None:
        why = reason or NO_TRIALS
        return RateUncertainty(
            value=None,
            interval=None,
            interval_independent=None,
            n=cr.n,
            clusters=cr.clusters,
            design_effect=None,
            effective_n=None,
            undefined={"value": why, "interval": why},
        )
    return RateUncertainty(
        value=cr.estimate,
        interval=cr.interval,
        interval_independent=cr.independent_interval,
        n=cr.n,
        clusters=cr.clusters,
        design_effect=cr.design_effect,
        effective_n=cr.effective_n,
    )


def _rate(trials: Sequence[Mapping[str, Any]], confidence: float) -> Rate:
    n = len(trials)
    passed = sum(1 for t in trials if _passed(t))
    cr = _clustered_pass(trials, confidence)
    return Rate(
        n=n,
        passed=passed,
        rate=passed / n if n else None,
        interval=cr.interval,
        undefined={} if n else {"rate": NO_TRIALS, "interval": NO_TRIALS},
        interval_independent=_interval(passed, n, confidence),
        clusters=cr.clusters,
        design_effect=cr.design_effect,
        effective_n=cr.effective_n,
    )


def _value_entry(mv: _MetricValue, k: int) -> KValue:
    return KValue(
        k=k,
        value=mv.value,
        defined=mv.defined,
        total=mv.total,
        undefined={} if mv.reason is None else {"value": mv.reason},
    )


def _outcomes_by_task(trials: Iterable[Mapping[str, Any]]) -> dict[str, list[bool]]:
    by_task: dict[str, list[bool]] = {}
    for t in trials:
        by_task.setdefault(str(t.get("task_id")), []).append(_passed(t))
    return dict(sorted(by_task.items()))


def _sort_key(t: Mapping[str, Any]) -> tuple[Any, ...]:
    def num(v: Any) -> int:
        return v if isinstance(v, int) and not isinstance(v, bool) else -1

    return (
        num(t.get("scenario_index")),
        num(t.get("trial_index")),
        str(t.get("task_id")),
        str(t.get("trial_key")),
    )


def _live_mean(
    scored: Sequence[Mapping[str, Any]], metric: str
) -> tuple[float | None, int, str | None]:
    """Mean of a live metric over the trials where it is defined, with how many, or its reason.

    Undefined everywhere: ``no_trials`` without scored trials, ``no_model_events`` when a trial
    had steps but no model event (TI, hb-derive/3), else ``no_steps``.
    """
    values: list[float] = []
    blind = False
    for t in scored:
        v = _verdict(t)
        metrics = v.get("metrics")
        value = metrics.get(metric) if isinstance(metrics, Mapping) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values.append(float(value))
            continue
        reasons = v.get("metrics_undefined")
        if isinstance(reasons, Mapping) and reasons.get(metric) == NO_MODEL_EVENTS:
            blind = True
    if values:
        return _mean(values), len(values), None
    if not scored:
        return None, 0, NO_TRIALS
    return None, 0, NO_MODEL_EVENTS if blind else NO_STEPS
