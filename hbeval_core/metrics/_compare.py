"""Paired comparison of two runs over the same tasks (``hbeval compare A B``)."""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..vocab import INSUFFICIENT_TASKS, NO_TRIALS, SINGLE_TASK
from ._passk import _count
from ._registry import metric
from ._stats import cohens_h, two_proportion_z
from ._validate import check_confidence

MIN_PAIRED_TASKS = 6
"""Fewest shared tasks for a paired test and interval. Below it the exact two-sided sign-flip
test cannot reach p < 0.05 (its smallest p is 2 / 2^n: 0.0625 at 5 tasks, 0.03125 at 6), so
both are undefined with reason ``insufficient_tasks`` instead of an interval that means nothing
(a paired t interval on 2 tasks spanned more than ±260 points)."""

EXACT_PERMUTATION_MAX_TASKS = 16
"""Up to this many tasks the permutation test enumerates all 2^n sign assignments."""
RESAMPLES = 20_000
"""Monte Carlo sign flips above that, and bootstrap resamples of the interval (seeded)."""


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
    in both runs). ``p_paired`` is the two-sided paired permutation (sign-flip) test of that mean:
    exact over all 2^n sign assignments up to 16 tasks, seeded Monte Carlo above; ``interval`` a
    percentile bootstrap over tasks (seeded from the data, so reproducible), inside [−1, 1] like
    any change of rates. Both need ``MIN_PAIRED_TASKS`` shared tasks, else they are undefined
    with ``insufficient_tasks``. ``rate_a``, ``rate_b``, ``z``, ``p_value`` (pooled
    two-proportion test, z > 0 when b is better) and ``cohens_h`` use the trials of those same
    tasks pooled; they treat trials as independent, which trials of one task are not, so the
    paired figures are the ones to trust. Tasks in one run only, or without a trial in one of
    them, are listed — never silently dropped.
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
    method: str = "paired-permutation"
    undefined: Mapping[str, str] = field(default_factory=dict)
    p_paired: float | None = None


def _seed(diffs: Sequence[float]) -> int:
    """A seed from the data itself: the same comparison always gives the same figures."""
    text = ",".join(f"{d:.12g}" for d in diffs)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def sign_flip_p(diffs: Sequence[float]) -> float:
    """Two-sided p of the paired permutation test: the share of sign assignments to ``diffs``
    whose |mean| is at least the observed |mean| (exact up to 16 differences)."""
    n = len(diffs)
    if n == 0:
        raise ValueError("sign_flip_p needs at least one difference")
    observed = abs(math.fsum(diffs)) - 1e-12
    if n <= EXACT_PERMUTATION_MAX_TASKS:
        hits = sum(
            1
            for signs in itertools.product((1.0, -1.0), repeat=n)
            if abs(math.fsum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed
        )
        return float(hits) / float(2**n)
    rng = random.Random(_seed(diffs))
    hits = sum(
        1
        for _ in range(RESAMPLES)
        if abs(math.fsum(d if rng.random() < 0.5 else -d for d in diffs)) >= observed
    )
    return (hits + 1) / (RESAMPLES + 1)


def bootstrap_interval(diffs: Sequence[float], confidence: float) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``diffs`` (resampling tasks), in [−1, 1]."""
    n = len(diffs)
    rng = random.Random(_seed(diffs))
    means = sorted(math.fsum(rng.choice(diffs) for _ in range(n)) / n for _ in range(RESAMPLES))
    tail = (1.0 - confidence) / 2.0
    lo = means[max(0, math.floor(tail * RESAMPLES))]
    hi = means[min(RESAMPLES - 1, math.ceil((1.0 - tail) * RESAMPLES) - 1)]
    return max(-1.0, lo), min(1.0, hi)


@metric("paired_comparison")
def paired_comparison(
    a: Mapping[str, Sequence[bool]],
    b: Mapping[str, Sequence[bool]],
    confidence: float = 0.95,
) -> PairedComparison:
    """Did run b pass more often than run a on the same tasks, and is the change more than noise?

    Paired per task: an exact sign-flip permutation test and a bootstrap interval over
    per-task changes, both defined from ``MIN_PAIRED_TASKS`` shared tasks (a battery often has
    only a handful, where a t or z interval is far too wide or too narrow). The pooled z test
    treats trials as independent, as the reference does; trust the paired figures.
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
    mean = sd = p_paired = None
    interval = None
    if changes:
        diffs = [t.change for t in changes]
        mean = math.fsum(diffs) / len(diffs)
        if len(diffs) >= 2:
            sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
        else:
            undefined["sd_change"] = SINGLE_TASK
        if len(diffs) >= MIN_PAIRED_TASKS:
            interval = bootstrap_interval(diffs, level)
            p_paired = sign_flip_p(diffs)
        else:
            undefined["interval"] = undefined["p_paired"] = (
                SINGLE_TASK if len(diffs) == 1 else INSUFFICIENT_TASKS
            )
    else:
        for name in ("mean_change", "sd_change", "interval", "rate_a", "rate_b", "z", "p_value"):
            undefined[name] = NO_TRIALS
        undefined["cohens_h"] = undefined["p_paired"] = NO_TRIALS

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
        p_paired=p_paired,
    )


@metric("benjamini_hochberg")
def benjamini_hochberg(p_values: Mapping[str, float | None]) -> dict[str, float | None]:
    """Benjamini–Hochberg adjusted p-values (q-values) of a family of tests, by name.

    With the m defined p-values sorted ascending, p₍ᵢ₎ becomes min over j ≥ i of
    min(1, m · p₍ⱼ₎ / j); rejecting every test whose q is below α keeps the expected share of
    false discoveries among the rejections at most α (independent or positively dependent
    tests). An undefined p stays None and is not counted in m.
    """
    defined = sorted(((p, k) for k, p in p_values.items() if p is not None), key=lambda x: x[0])
    m = len(defined)
    out: dict[str, float | None] = dict.fromkeys(p_values)
    running = 1.0
    for rank in range(m, 0, -1):
        p, key = defined[rank - 1]
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value of {key!r} must be from 0 to 1, got {p!r}")
        running = min(running, m * p / rank)
        out[key] = min(1.0, running)
    return out
