"""Paired comparison of two runs over the same tasks (``hbeval compare A B``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..vocab import NO_TRIALS, SINGLE_TASK
from ._passk import _count
from ._registry import metric
from ._special import student_t_quantile
from ._stats import cohens_h, two_proportion_z
from ._validate import check_confidence


@dataclass(frozen=True)
class TaskChange:
    """One task's pass rate in run a and run b, and the change b − a."""

    task: str
    rate_a: float
    rate_b: float
    change: float
    n_a: int
    n_b: int


@dataclass(frozen=True)
class PairedComparison:
    """Run b against run a, task by task, then overall.

    ``mean_change`` is the mean of per-task changes (b − a) over ``tasks`` (the tasks with trials
    in both runs); ``interval`` is the paired Student-t interval mean ± t(n−1)·sd/√n. ``rate_a``,
    ``rate_b``, ``z``, ``p_value`` (pooled two-proportion test, z > 0 when b is better) and
    ``cohens_h`` use the trials of those same tasks pooled. Tasks in one run only, or without a
    trial in one of them, are listed — never silently dropped.
    """

    tasks: tuple[TaskChange, ...]
    mean_change: float | None
    interval: tuple[float, float] | None
    sd_change: float | None
    confidence: float
    rate_a: float | None
    rate_b: float | None
    n_a: int
    n_b: int
    z: float | None
    p_value: float | None
    cohens_h: float | None
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    without_trials: tuple[str, ...]
    method: str = "paired-t"
    undefined: Mapping[str, str] = field(default_factory=dict)


@metric("paired_comparison")
def paired_comparison(
    a: Mapping[str, Sequence[bool]],
    b: Mapping[str, Sequence[bool]],
    confidence: float = 0.95,
) -> PairedComparison:
    """Did run b pass more often than run a on the same tasks, and is the change more than noise?

    The interval is a paired Student-t interval over per-task changes (not z: a battery often has
    only a handful of tasks, where z would be too narrow). The pooled z test treats trials as
    independent, as the reference does; trials of one task are correlated, so trust the paired
    interval when the two disagree.
    """
    level = check_confidence(confidence)
    shared = sorted(set(a) & set(b))
    changes: list[TaskChange] = []
    without: list[str] = []
    pass_a = pass_b = size_a = size_b = 0
    for task in shared:
        n_a, c_a = _count(task, a[task])
        n_b, c_b = _count(task, b[task])
        if n_a == 0 or n_b == 0:
            without.append(task)
            continue
        task_a, task_b = c_a / n_a, c_b / n_b
        changes.append(TaskChange(task, task_a, task_b, task_b - task_a, n_a, n_b))
        pass_a, pass_b, size_a, size_b = pass_a + c_a, pass_b + c_b, size_a + n_a, size_b + n_b

    undefined: dict[str, str] = {}
    mean = sd = None
    interval = None
    if changes:
        diffs = [t.change for t in changes]
        mean = math.fsum(diffs) / len(diffs)
        if len(diffs) >= 2:
            sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
            half = (
                student_t_quantile(0.5 + level / 2.0, len(diffs) - 1) * sd / math.sqrt(len(diffs))
            )
            interval = (mean - half, mean + half)
        else:
            undefined["sd_change"] = undefined["interval"] = SINGLE_TASK
    else:
        for name in ("mean_change", "sd_change", "interval", "rate_a", "rate_b", "z", "p_value"):
            undefined[name] = NO_TRIALS
        undefined["cohens_h"] = NO_TRIALS

    rate_a = pass_a / size_a if size_a else None
    rate_b = pass_b / size_b if size_b else None
    test = (
        None
        if rate_a is None or rate_b is None
        else two_proportion_z(rate_b, size_b, rate_a, size_a)
    )
    effect = None if rate_a is None or rate_b is None else cohens_h(rate_b, rate_a)
    return PairedComparison(
        tasks=tuple(changes),
        mean_change=mean,
        interval=interval,
        sd_change=sd,
        confidence=level,
        rate_a=rate_a,
        rate_b=rate_b,
        n_a=size_a,
        n_b=size_b,
        z=None if test is None else test[0],
        p_value=None if test is None else test[1],
        cohens_h=effect,
        only_in_a=tuple(sorted(set(a) - set(b))),
        only_in_b=tuple(sorted(set(b) - set(a))),
        without_trials=tuple(without),
        undefined=undefined,
    )
