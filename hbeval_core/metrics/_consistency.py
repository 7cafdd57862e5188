"""Consistency over repeated trials of a task: outcomes (C_out, the flip rate) and trajectories.

All figures are taken per task, over the trials of one run, then averaged over tasks:

- **C_out** = mean over tasks of (2p − 1)², p the task's pass fraction (the population form):
  1 when every task passes always or fails always, 0 when every task passes half the time.
- **flip rate** = share of tasks whose trials did not all end the same way.
- **C_traj_d** = 1 − mean pairwise Jensen–Shannon divergence (base 2, so in [0, 1]) between the
  tool-name frequency distributions of a task's successful trials. A successful trial that
  called no tool has no distribution and is left out of the pairs.
- **C_traj_s** = mean pairwise 1 − Levenshtein(a, b) / max(len a, len b) between the tool-name
  sequences of a task's successful trials (two empty sequences are identical).

Only tasks with at least two trials count for the outcome figures, and only tasks with at least
two successful trials (with a distribution, for C_traj_d) for the trajectory figures. With none,
the figure is undefined with a reason (``single_trial``, ``no_repeated_success``), never zero.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from ..vocab import NO_REPEATED_SUCCESS, NO_TRIALS, SINGLE_TRIAL
from ._registry import metric
from ._result import MetricValue


def _outcome(task: str, value: object) -> bool:
    if value is True or value == 1:
        return True
    if value is False or value == 0:
        return False
    raise ValueError(f"trials[{task!r}] holds {value!r}; expected True/False")


def _repeated(trials: Mapping[str, Sequence[object]]) -> tuple[list[tuple[int, int]], str | None]:
    """(trials, passes) of each task with at least two trials; the reason when there is none."""
    counts: list[tuple[int, int]] = []
    any_trial = False
    for task, outcomes in trials.items():
        passes = sum(1 for o in outcomes if _outcome(task, o))
        any_trial = any_trial or len(outcomes) > 0
        if len(outcomes) >= 2:
            counts.append((len(outcomes), passes))
    if counts:
        return counts, None
    return counts, SINGLE_TRIAL if any_trial else NO_TRIALS


@metric("outcome_consistency")
def outcome_consistency(trials: Mapping[str, Sequence[bool]]) -> MetricValue:
    """C_out: mean over tasks of (2p − 1)², p the task's pass fraction over its trials.

    Tasks with one trial are skipped (``defined`` counts the tasks used of ``total``); undefined
    ``single_trial`` when no task ran twice, ``no_trials`` when there are no trials.
    """
    counts, reason = _repeated(trials)
    if reason is not None:
        return MetricValue.undefined(reason, total=len(trials))
    values = [((2 * c - n) / n) ** 2 for n, c in counts]
    return MetricValue(math.fsum(values) / len(values), defined=len(values), total=len(trials))


@metric("flip_rate")
def flip_rate(trials: Mapping[str, Sequence[bool]]) -> MetricValue:
    """Share of tasks (with at least two trials) whose trials had both outcomes.

    Undefined ``single_trial`` when no task ran twice, ``no_trials`` when there are no trials.
    """
    counts, reason = _repeated(trials)
    if reason is not None:
        return MetricValue.undefined(reason, total=len(trials))
    mixed = sum(1 for n, c in counts if 0 < c < n)
    return MetricValue(mixed / len(counts), defined=len(counts), total=len(trials))


def js_divergence(a: Sequence[str], b: Sequence[str]) -> float:
    """Base-2 Jensen–Shannon divergence of the name frequencies of two non-empty sequences."""
    if not a or not b:
        raise ValueError("js_divergence needs two non-empty sequences (no distribution otherwise)")
    pa, pb = Counter(a), Counter(b)
    na, nb = len(a), len(b)
    total = 0.0
    for name in pa.keys() | pb.keys():
        p, q = pa[name] / na, pb[name] / nb
        m = (p + q) / 2
        if p > 0:
            total += p * math.log2(p / m)
        if q > 0:
            total += q * math.log2(q / m)
    # Rounding can leave a hair outside [0, 1].
    return min(1.0, max(0.0, total / 2))


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance (insert, delete, substitute, each 1) between two sequences of names."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def sequence_similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """1 − Levenshtein(a, b) / max(len a, len b); two empty sequences are identical (1.0)."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1.0 - levenshtein(a, b) / longest


def _pairwise_mean(
    successes: Mapping[str, Sequence[Sequence[str]]], *, distributions: bool
) -> MetricValue:
    values: list[float] = []
    for runs in successes.values():
        usable = [list(r) for r in runs if r] if distributions else [list(r) for r in runs]
        if len(usable) < 2:
            continue
        pairs = list(combinations(usable, 2))
        if distributions:
            per_pair = [1.0 - js_divergence(a, b) for a, b in pairs]
        else:
            per_pair = [sequence_similarity(a, b) for a, b in pairs]
        values.append(math.fsum(per_pair) / len(per_pair))
    if not values:
        return MetricValue.undefined(NO_REPEATED_SUCCESS, total=len(successes))
    return MetricValue(math.fsum(values) / len(values), defined=len(values), total=len(successes))


@metric("trajectory_consistency_distribution")
def trajectory_consistency_distribution(
    successes: Mapping[str, Sequence[Sequence[str]]],
) -> MetricValue:
    """C_traj_d: 1 − mean pairwise base-2 JS divergence of tool-name frequencies, per task.

    ``successes`` maps each task to the tool-name sequences of its successful trials. Trials
    without tool calls are left out; tasks with fewer than two left are skipped. Undefined
    ``no_repeated_success`` when no task is left.
    """
    return _pairwise_mean(successes, distributions=True)


@metric("trajectory_consistency_sequence")
def trajectory_consistency_sequence(
    successes: Mapping[str, Sequence[Sequence[str]]],
) -> MetricValue:
    """C_traj_s: mean pairwise 1 − Levenshtein/max-length of tool-name sequences, per task.

    ``successes`` maps each task to the tool-name sequences of its successful trials; tasks with
    fewer than two are skipped. Undefined ``no_repeated_success`` when no task has two.
    """
    return _pairwise_mean(successes, distributions=False)


@dataclass(frozen=True)
class Consistency:
    """C_out, the flip rate, C_traj_d and C_traj_s of one run's repeated trials."""

    c_out: MetricValue
    flip_rate: MetricValue
    c_traj_d: MetricValue
    c_traj_s: MetricValue
    tasks: int
    tasks_repeated: int
    tasks_with_two_successes: int


def run_consistency(trials: Mapping[str, Sequence[tuple[bool, Sequence[str]]]]) -> Consistency:
    """All four figures from each task's trials as (passed, tool-name sequence) pairs."""
    outcomes = {task: [p for p, _ in runs] for task, runs in trials.items()}
    successes = {task: [list(s) for p, s in runs if p] for task, runs in trials.items()}
    return Consistency(
        c_out=outcome_consistency(outcomes),
        flip_rate=flip_rate(outcomes),
        c_traj_d=trajectory_consistency_distribution(successes),
        c_traj_s=trajectory_consistency_sequence(successes),
        tasks=len(trials),
        tasks_repeated=sum(1 for runs in trials.values() if len(runs) >= 2),
        tasks_with_two_successes=sum(1 for s in successes.values() if len(s) >= 2),
    )
