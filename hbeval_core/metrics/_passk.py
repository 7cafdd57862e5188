"""pass@k and pass^k over repeated trials of each task (unbiased per-task estimators)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..vocab import K_EXCEEDS_TRIALS, NO_TRIALS
from ._registry import metric
from ._result import MetricValue


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return k


def _count(task: str, outcomes: Sequence[object]) -> tuple[int, int]:
    passed = 0
    for outcome in outcomes:
        # 0/1 are accepted because stores often hold outcomes as integers; anything else is a bug
        # upstream (a string outcome would otherwise count as a pass).
        if outcome is True or outcome == 1:
            passed += 1
        elif not (outcome is False or outcome == 0):
            raise ValueError(f"trials[{task!r}] holds {outcome!r}; expected True/False")
    return len(outcomes), passed


def _per_task_mean(trials: Mapping[str, Sequence[bool]], k: int, *, all_k: bool) -> MetricValue:
    size = _check_k(k)
    values: list[float] = []
    any_trial = False
    for task, outcomes in trials.items():
        n, c = _count(task, outcomes)
        any_trial = any_trial or n > 0
        if n < size:
            continue  # undefined for this task: fewer trials than k
        # Exact integer binomials, then one correctly rounded division.
        if all_k:
            values.append(math.comb(c, size) / math.comb(n, size))
        else:
            values.append(1.0 - math.comb(n - c, size) / math.comb(n, size))
    total = len(trials)
    if not values:
        return MetricValue.undefined(K_EXCEEDS_TRIALS if any_trial else NO_TRIALS, total=total)
    return MetricValue(math.fsum(values) / len(values), defined=len(values), total=total)


def pass_at_k_detail(trials: Mapping[str, Sequence[bool]], k: int) -> MetricValue:
    """pass@k with how many tasks had at least k trials (``defined``) out of ``total`` tasks."""
    return _per_task_mean(trials, k, all_k=False)


def pass_hat_k_detail(trials: Mapping[str, Sequence[bool]], k: int) -> MetricValue:
    """pass^k with how many tasks had at least k trials (``defined``) out of ``total`` tasks."""
    return _per_task_mean(trials, k, all_k=True)


@metric("pass_at_k")
def pass_at_k(trials: Mapping[str, Sequence[bool]], k: int) -> float | None:
    """Chance that at least one of k trials of a task succeeds, averaged over tasks (pass@k).

    Per task with c successes in n trials: 1 − C(n−c, k)/C(n, k). Tasks with fewer than k trials
    are skipped (undefined for them); None when no task has k trials (k_exceeds_trials) or there
    are no trials at all (no_trials). Use ``pass_at_k_detail`` for the reason and the counts.
    """
    return pass_at_k_detail(trials, k).value


@metric("pass_hat_k")
def pass_hat_k(trials: Mapping[str, Sequence[bool]], k: int) -> float | None:
    """Chance that all k trials of a task succeed, averaged over tasks (pass^k, tau-bench).

    Per task with c successes in n trials: C(c, k)/C(n, k). Undefined tasks and the None result
    follow ``pass_at_k``; use ``pass_hat_k_detail`` for the reason and the counts.
    """
    return pass_hat_k_detail(trials, k).value
