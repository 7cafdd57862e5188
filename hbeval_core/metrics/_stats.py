"""Interval estimates and tests for success rates: Wilson, two-proportion z, Cohen's h, Beta tails,
and the reliability gap between nominal and faulted trials (spec §7.2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..vocab import NO_FAULTED_TRIAL, NO_NOMINAL_TRIAL
from ._registry import metric
from ._special import beta_sf
from ._validate import (
    check_confidence,
    check_count,
    check_probability,
    check_successes,
)

# The reference hard-codes these three critical values (core/statistics.py, _z_critical); using
# them reproduces its published vectors exactly (1.96, not 1.959964 for 95 %).
REFERENCE_Z: Mapping[float, float] = {0.90: 1.645, 0.95: 1.960, 0.99: 2.576}


def z_critical(confidence: float = 0.95) -> float:
    """Two-sided normal critical value for a confidence level (1.96 for 95 %).

    0.90, 0.95 and 0.99 use the reference's rounded table values (reference-compatible); any other
    level uses the exact normal quantile (the reference silently falls back to 1.96 there).
    """
    level = check_confidence(confidence)
    for known, z in REFERENCE_Z.items():
        if abs(level - known) < 1e-12:
            return z
    from statistics import NormalDist  # lazy: only non-table levels need it

    return NormalDist().inv_cdf(0.5 + level / 2.0)


@metric("wilson_interval")
def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval for a success rate; None when there are no trials (n = 0)."""
    s, total = check_successes(successes, n, s_name="successes", n_name="n")
    z = z_critical(confidence)
    if total == 0:
        return None
    p = s / total
    z2 = z * z
    denominator = 1.0 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    spread = z * math.sqrt(p * (1.0 - p) / total + z2 / (4 * total * total)) / denominator
    # At p̂ = 0 (or 1) the lower (upper) bound is exactly 0 (1); float noise would put it a hair
    # inside and exclude p̂ itself. Elsewhere clamping is a no-op; the bounds are not rounded.
    low = 0.0 if s == 0 else max(0.0, centre - spread)
    high = 1.0 if s == total else min(1.0, centre + spread)
    return low, high


@metric("two_proportion_z")
def two_proportion_z(p1: float, n1: int, p2: float, n2: int) -> tuple[float, float] | None:
    """Pooled two-proportion z test of p1 vs p2: (z, two-tailed p); None when n1 or n2 is 0.

    z is positive when p1 > p2. A zero standard error (both rates 0 or both 1) gives (0.0, 1.0),
    as the reference does: there is no evidence of a difference.
    """
    rate1 = check_probability("p1", p1)
    rate2 = check_probability("p2", p2)
    size1 = check_count("n1", n1)
    size2 = check_count("n2", n2)
    if size1 == 0 or size2 == 0:
        return None
    pooled = (rate1 * size1 + rate2 * size2) / (size1 + size2)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / size1 + 1.0 / size2))
    if se == 0.0:
        return 0.0, 1.0
    z = (rate1 - rate2) / se
    return z, math.erfc(abs(z) / math.sqrt(2.0))


@metric("cohens_h")
def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h effect size between two rates: 2·|asin√p1 − asin√p2| (0.2 small, 0.8 large).

    The reference calls it "Cohen's d"; it is the arcsine-transformed h, always non-negative.
    """
    rate1 = check_probability("p1", p1)
    rate2 = check_probability("p2", p2)
    return 2.0 * abs(math.asin(math.sqrt(rate1)) - math.asin(math.sqrt(rate2)))


@metric("beta_tail_probability")
def beta_tail_probability(successes: int, n: int, threshold: float) -> float | None:
    """Chance the true success rate exceeds ``threshold`` given s of n trials passed (uniform prior).

    Exactly P(θ > threshold) for θ ~ Beta(s + 1, n − s + 1), by the regularized incomplete beta
    function (the reference estimates it by unseeded Monte Carlo, so its tier could flip between
    runs). None when n = 0: with no trial the answer would be the prior alone, not evidence.
    """
    s, total = check_successes(successes, n, s_name="successes", n_name="n")
    x = check_probability("threshold", threshold)
    if total == 0:
        return None
    return beta_sf(s + 1.0, total - s + 1.0, x)


@dataclass(frozen=True)
class ReliabilityGap:
    """Success without faults (C_nom) vs with faults (R_op), their gap and its significance.

    ``gap`` = c_nom − r_op (positive when faults hurt); ``interval`` = gap ± z·se with the unpooled
    standard error; ``p_value`` = erfc(|z|/√2); ``significant`` iff the gap is positive and
    p < 1 − confidence. Parts that cannot be computed are None, and ``undefined`` maps each such
    field to its reason code.
    """

    c_nom: float | None
    r_op: float | None
    gap: float | None
    interval: tuple[float, float] | None
    z: float | None
    p_value: float | None
    significant: bool | None
    confidence: float
    nominal_n: int
    faulted_n: int
    undefined: Mapping[str, str] = field(default_factory=dict)


@metric("reliability_gap")
def reliability_gap(
    nominal_successes: int,
    nominal_n: int,
    faulted_successes: int,
    faulted_n: int,
    confidence: float = 0.95,
) -> ReliabilityGap:
    """How much the success rate drops under faults, with an interval and a significance test.

    Reproduces the reference's gap_significance (spec §7.2): unpooled se, interval z·se, p from
    erfc(z/√2). The reference calls that p one-tailed, but erfc(z/√2) is the two-sided p-value for
    z >= 0 (so the test is conservative: significant at 95 % iff z > 1.96); for a negative gap its
    number exceeds 1, so we report erfc(|z|/√2) and require a positive gap for significance —
    the same verdicts as the reference for every input. When the unpooled se is 0 but the rates
    differ (e.g. 100 % vs 0 %), the reference reports z = 0; we use the pooled se for z instead,
    so a total collapse is not reported as "no evidence".
    """
    ns, nn = check_successes(
        nominal_successes, nominal_n, s_name="nominal_successes", n_name="nominal_n"
    )
    fs, fn = check_successes(
        faulted_successes, faulted_n, s_name="faulted_successes", n_name="faulted_n"
    )
    zc = z_critical(confidence)
    level = check_confidence(confidence)
    undefined: dict[str, str] = {}
    c_nom = ns / nn if nn else None
    r_op = fs / fn if fn else None
    if c_nom is None:
        undefined["c_nom"] = NO_NOMINAL_TRIAL
    if r_op is None:
        undefined["r_op"] = NO_FAULTED_TRIAL
    if c_nom is None or r_op is None:
        reason = NO_NOMINAL_TRIAL if c_nom is None else NO_FAULTED_TRIAL
        for name in ("gap", "interval", "z", "p_value", "significant"):
            undefined[name] = reason
        return ReliabilityGap(c_nom, r_op, None, None, None, None, None, level, nn, fn, undefined)

    gap = c_nom - r_op
    se = math.sqrt(c_nom * (1.0 - c_nom) / nn + r_op * (1.0 - r_op) / fn)
    interval = (gap - zc * se, gap + zc * se)
    if se > 0.0:
        z = gap / se
    elif gap == 0.0:
        z = 0.0
    else:
        pooled = (ns + fs) / (nn + fn)
        z = gap / math.sqrt(pooled * (1.0 - pooled) * (1.0 / nn + 1.0 / fn))
    p_value = math.erfc(abs(z) / math.sqrt(2.0))
    significant = gap > 0.0 and p_value < 1.0 - level
    return ReliabilityGap(c_nom, r_op, gap, interval, z, p_value, significant, level, nn, fn)
