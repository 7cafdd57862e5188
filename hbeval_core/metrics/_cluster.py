"""Intervals that respect clustering: repeated trials of one scenario are not independent.

A battery runs each scenario several times; a recording holds several trials of each task. Those
trials share the task, the fault plan and the agent, so their outcomes agree far more often than
independent draws would (on a deterministic agent, always). A Wilson interval over the trials
then claims more certainty than the data holds. The functions here treat each scenario (task)
as a cluster:

* the rate is the trial-level ratio Σ s_i / Σ n_i (the same point estimate as before);
* its variance is the cluster-robust (sandwich) variance of that ratio,
  v = m/(m−1) · Σ (s_i − p̂·n_i)² / N² over the m clusters of N trials;
* the Korn–Graubard effective sample size is n_eff = p̂(1−p̂)/v, capped at N and at m: a
  scenario's repeated trials never count for more than one independent observation, so the
  interval is never narrower than a Wilson interval with n = the number of clusters (14 of 14
  clean scenarios is [0.78, 1.00], not [1, 1]); when v = 0 (every cluster at 0 or at 1, or one
  cluster only) n_eff = m;
* the interval is Wilson's score interval at n_eff, at the normal critical value;
* the design effect is N / n_eff.

Values may be fractional in [0, 1] (a judged IRS mean): the variance of a [0, 1] variable is at
most p̂(1−p̂), so the interval is then conservative. The interval for a difference of two such
rates (the reliability gap) is Newcombe's hybrid score interval over the two clustered Wilson
intervals.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from ..vocab import NO_TRIALS
from ._registry import metric
from ._stats import z_critical
from ._validate import check_confidence, check_probability

CLUSTER_METHOD = "cluster_wilson"
"""Name of the method above, as reports record it."""


def wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval for rate ``p`` over ``n`` (possibly fractional) observations."""
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    spread = z * math.sqrt(max(0.0, p * (1.0 - p)) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if p <= 0.0 else max(0.0, centre - spread)
    high = 1.0 if p >= 1.0 else min(1.0, centre + spread)
    return low, high


@dataclass(frozen=True)
class ClusteredRate:
    """A rate over clustered trials with its clustered and its independent-trials interval.

    ``interval`` is the one to show and to gate on; ``independent_interval`` is Wilson over the
    trials as if they were independent (kept as a labelled secondary). ``effective_n`` counts
    the independent observations the clustered data is worth; ``design_effect`` = n /
    effective_n. Undefined parts are None with their reason in ``undefined``.
    """

    estimate: float | None
    interval: tuple[float, float] | None
    independent_interval: tuple[float, float] | None
    n: int
    clusters: int
    design_effect: float | None
    effective_n: float | None
    confidence: float
    method: str = CLUSTER_METHOD
    undefined: Mapping[str, str] = field(default_factory=dict)


def _clean(groups: Mapping[Hashable, Sequence[float | bool]]) -> list[list[float]]:
    out: list[list[float]] = []
    for key, values in groups.items():
        if not values:
            continue
        out.append([check_probability(f"groups[{key!r}]", float(v)) for v in values])
    return out


def cluster_variance(clusters: Sequence[Sequence[float]]) -> float | None:
    """Cluster-robust variance of the pooled mean Σ s_i / Σ n_i; None with fewer than 2 clusters."""
    m = len(clusters)
    total = sum(len(c) for c in clusters)
    if m < 2 or total == 0:
        return None
    p = math.fsum(math.fsum(c) for c in clusters) / total
    spread = math.fsum((math.fsum(c) - p * len(c)) ** 2 for c in clusters)
    return m / (m - 1) * spread / (total * total)


@metric("clustered_rate")
def clustered_rate(
    groups: Mapping[Hashable, Sequence[float | bool]], confidence: float = 0.95
) -> ClusteredRate:
    """A rate over trials grouped in clusters (scenarios), with a cluster-robust Wilson interval."""
    level = check_confidence(confidence)
    z = z_critical(level)
    clusters = _clean(groups)
    n = sum(len(c) for c in clusters)
    m = len(clusters)
    if n == 0:
        reasons = dict.fromkeys(("estimate", "interval", "independent_interval"), NO_TRIALS)
        return ClusteredRate(None, None, None, 0, 0, None, None, level, undefined=reasons)
    p = math.fsum(math.fsum(c) for c in clusters) / n
    independent = wilson_bounds(p, n, z)
    variance = cluster_variance(clusters)
    n_eff = float(m)
    if variance is not None and variance > 0.0 and 0.0 < p < 1.0:
        n_eff = min(float(n), float(m), p * (1.0 - p) / variance)
    n_eff = max(n_eff, 1.0)  # at least one observation: there is a trial
    return ClusteredRate(
        estimate=p,
        interval=wilson_bounds(p, n_eff, z),
        independent_interval=independent,
        n=n,
        clusters=m,
        design_effect=n / n_eff,
        effective_n=n_eff,
        confidence=level,
    )


@dataclass(frozen=True)
class ClusteredDifference:
    """A difference of two clustered rates (first − second) with Newcombe's interval."""

    difference: float | None
    interval: tuple[float, float] | None
    z: float | None
    p_value: float | None
    first: ClusteredRate
    second: ClusteredRate
    undefined: Mapping[str, str] = field(default_factory=dict)


@metric("clustered_difference")
def clustered_difference(first: ClusteredRate, second: ClusteredRate) -> ClusteredDifference:
    """first − second with Newcombe's hybrid score interval over their clustered intervals.

    z = difference / √(p₁(1−p₁)/n_eff₁ + p₂(1−p₂)/n_eff₂) and p = erfc(|z|/√2); when that
    standard error is 0 but the rates differ, the pooled rate at the effective sizes is used
    (a total collapse is evidence, not "no evidence").
    """
    p1, p2 = first.estimate, second.estimate
    ci1, ci2 = first.interval, second.interval
    n1, n2 = first.effective_n, second.effective_n
    if p1 is None or p2 is None or ci1 is None or ci2 is None or n1 is None or n2 is None:
        reason = NO_TRIALS
        return ClusteredDifference(
            None, None, None, None, first, second, dict.fromkeys(("difference", "p"), reason)
        )
    d = p1 - p2
    low = d - math.sqrt((p1 - ci1[0]) ** 2 + (ci2[1] - p2) ** 2)
    high = d + math.sqrt((ci1[1] - p1) ** 2 + (p2 - ci2[0]) ** 2)
    se = math.sqrt(p1 * (1.0 - p1) / n1 + p2 * (1.0 - p2) / n2)
    if se > 0.0:
        z = d / se
    elif d == 0.0:
        z = 0.0
    else:
        pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
        z = d / math.sqrt(pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2))
    return ClusteredDifference(d, (low, high), z, math.erfc(abs(z) / math.sqrt(2.0)), first, second)
