"""An always-valid bound for a battery figure observed wave by wave, clustered by scenario.

A run that stops "as soon as the verdict is decided" looks at its figures after every wave (one
trial of every scenario) and stops at the first look where each check is settled. A bound that
is valid only at one fixed sample size would be wrong more often than it says under such
peeking; a *confidence sequence* holds at every look at once, so stopping at any of them keeps
its error at most α.

The bound here is the predictable plug-in empirical-Bernstein confidence sequence of
Waudby-Smith and Ramdas ("Estimating means of bounded random variables by betting", 2023,
Theorem 2), in its form for observations whose means differ. For values x_i in [0, 1] with
conditional means μ_i, predictable bets λ_i in [0, 1) and predictable centres m_i in [0, 1],

    exp(Σ λ_i (x_i − μ_i) − Σ (x_i − m_i)² (−ln(1 − λ_i) − λ_i))

is a non-negative supermartingale (Fan, Grama and Liu's inequality), and the same holds for
1 − x. By Ville's inequality, with probability at least 1 − α at every look at once,

    lower = (Σ λ_i x_i − Σ v_i − ln(1/α)) / Σ λ_i  ≤  μ̄,   v_i = (x_i − m_i)² (−ln(1 − λ_i) − λ_i),

and symmetrically for the upper bound; μ̄ = Σ λ_i μ_i / Σ λ_i. Each side is one-sided at α:
a decision "above the floor" is wrong only if the lower bound failed, "below" only if the
upper one did, so a decision errs with probability at most α whichever way the truth lies.

**Clustering by scenario.** The estimand is the mean of the expected values of the trials of
this battery's scenarios (what the fixed run's figure estimates). Trials of one scenario share
its expected value, so the noise is *within* a scenario: each trial is centred on its own
scenario's mean over the earlier waves (m_i, ½ before the scenario has a trial), and the
variance that sets the bet is the within-scenario spread of those residuals. A scenario that
always ends the same way adds no noise after its first trial; one that flips adds its own.
Scenarios never pool their outcomes into a shared variance. The bet is one number per wave,
chosen before the wave from the earlier waves only (predictable), so μ̄ is the trial-weighted
mean of the expected values of the trials run:

    λ_w = min(c, √(2 ln(1/α) / (σ̂² · t · ln(1 + t)))),  σ̂² = (¼ + Σ r²) / (1 + n_r),

t the index of the wave's first trial, r the within-scenario residuals seen so far (n_r of
them), c = ¾ (the authors' truncation). The running intersection over the looks is reported
(a confidence sequence may be intersected and stays valid).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from ._registry import metric
from ._validate import check_confidence

SEQUENTIAL_METHOD = "wsr_prpl_eb_cs"
"""The bound above, as reports record it: Waudby-Smith–Ramdas predictable plug-in
empirical-Bernstein confidence sequence, centred and scaled within scenario."""
BET_CAP = 0.75
"""The largest bet λ (c above)."""


@dataclass(frozen=True)
class SequentialBound:
    """The bound after the last wave given: the running intersection over every look."""

    lower: float | None
    upper: float | None
    estimate: float | None
    n: int
    waves: int
    confidence: float
    method: str = SEQUENTIAL_METHOD


def _check_value(value: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"sequential_bound values must be numbers from 0 to 1, got {value!r}")
    return float(value)


@metric("sequential_bound")
def sequential_bound(
    waves: Sequence[Sequence[tuple[Hashable, float]]], confidence: float = 0.95
) -> SequentialBound:
    """The always-valid bound (module docstring) after ``waves``: each wave a list of
    ``(scenario, value)`` with values in [0, 1]; a wave may hold no value (the figure was
    undefined on all its trials). Lower and upper are None before any value."""
    level = check_confidence(confidence)
    log_inv = math.log(1.0 / (1.0 - level))
    sums: dict[Hashable, float] = {}
    counts: dict[Hashable, int] = {}
    resid_sq = 0.0
    resid_n = 0
    bet_sum = 0.0
    up_sum = 0.0  # Σ λ x
    penalty = 0.0  # Σ v
    total = 0
    value_sum = 0.0
    lower: float | None = None
    upper: float | None = None
    for wave in waves:
        if not wave:
            continue
        t = total + 1
        spread = (0.25 + resid_sq) / (1 + resid_n)
        bet = min(BET_CAP, math.sqrt(2.0 * log_inv / (spread * t * math.log(1.0 + t))))
        cost = -math.log(1.0 - bet) - bet
        new_sums = dict(sums)
        new_counts = dict(counts)
        for key, raw in wave:
            x = _check_value(raw)
            seen = counts.get(key, 0)
            centre = sums[key] / seen if seen else 0.5
            residual = x - centre
            bet_sum += bet
            up_sum += bet * x
            penalty += residual * residual * cost
            if seen:
                resid_sq += residual * residual
                resid_n += 1
            new_sums[key] = new_sums.get(key, 0.0) + x
            new_counts[key] = new_counts.get(key, 0) + 1
            total += 1
            value_sum += x
        sums, counts = new_sums, new_counts  # centres use earlier waves only
        low = max(0.0, (up_sum - penalty - log_inv) / bet_sum)
        high = min(1.0, (up_sum + penalty + log_inv) / bet_sum)
        lower = low if lower is None else max(lower, low)
        upper = high if upper is None else min(upper, high)
    estimate = value_sum / total if total else None
    n_waves = sum(1 for w in waves if w)
    return SequentialBound(lower, upper, estimate, total, n_waves, level)


def waves_of(
    values: Mapping[tuple[Hashable, int], float],
) -> list[list[tuple[Hashable, float]]]:
    """``{(scenario, wave index): value}`` as the list of waves ``sequential_bound`` takes."""
    if not values:
        return []
    last = max(w for _, w in values)
    out: list[list[tuple[Hashable, float]]] = [[] for _ in range(last + 1)]
    for (scenario, w), value in values.items():
        out[w].append((scenario, value))
    return out
