"""Sample sizes for detecting a drop in a rate, with trials clustered by scenario.

- **Independent trials** (pooled normal approximation, no continuity correction), to tell a
  rate p1 from p2 with a two-sided test at level α and power 1 − β:
  n = (z_{1−α/2}·√(2·p̄·q̄) + z_{1−β}·√(p1·q1 + p2·q2))² / (p1 − p2)², p̄ = (p1 + p2)/2,
  rounded up, per run. The quantiles are the exact normal ones.
- **Within-scenario correlation** ρ: the one-way ANOVA intraclass correlation of the 0/1
  outcomes grouped by scenario, ICC(1) = (MSB − MSW) / (MSB + (k₀ − 1)·MSW), k₀ the
  unequal-group size (N − Σnᵢ²/N)/(g − 1). A negative estimate is kept as measured; the design
  effect uses max(ρ, 0).
- **Design effect** of m trials per scenario: 1 + (m − 1)·ρ. Scenarios needed at m trials:
  ⌈n · deff / m⌉. As m grows this falls only to ⌈n·ρ⌉: when a battery has fewer scenarios than
  that, no number of trials reaches the power, and more scenarios are the only way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..vocab import NO_TRIALS, NO_VARIATION, SINGLE_TASK, SINGLE_TRIAL
from ._registry import metric
from ._result import MetricValue


def _check_rate(name: str, value: float, *, closed: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and (0 <= value <= 1 if closed else 0 < value < 1)
    if not ok:
        where = "from 0 to 1" if closed else "strictly between 0 and 1"
        raise ValueError(f"{name} must be a rate {where}, got {value!r}")
    return float(value)


@metric("two_proportion_sample_size")
def two_proportion_sample_size(
    p1: float, p2: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Trials per run to tell p1 from p2 (pooled normal approximation, no continuity correction)."""
    p1, p2 = _check_rate("p1", p1, closed=True), _check_rate("p2", p2, closed=True)
    alpha, power = _check_rate("alpha", alpha), _check_rate("power", power)
    if p1 == p2:
        raise ValueError("p1 and p2 are equal: no drop to detect")
    from statistics import NormalDist  # lazy: importing the metrics stays light

    normal = NormalDist()
    z_a = normal.inv_cdf(1 - alpha / 2)
    z_b = normal.inv_cdf(power)
    mean = (p1 + p2) / 2
    spread = z_a * math.sqrt(2 * mean * (1 - mean)) + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(spread**2 / (p1 - p2) ** 2 - 1e-9)


@metric("icc_oneway")
def icc_oneway(groups: Sequence[Sequence[float]]) -> MetricValue:
    """One-way ANOVA intraclass correlation ICC(1) of outcomes grouped by scenario.

    ``defined`` = groups used, ``total`` = groups given. Undefined ``no_trials`` without
    outcomes, ``single_task`` with one group, ``single_trial`` when no group has two,
    ``no_variation`` when every outcome is the same.
    """
    used = [[float(v) for v in g] for g in groups if len(g) > 0]
    n = sum(len(g) for g in used)
    if n == 0:
        return MetricValue.undefined(NO_TRIALS, total=len(groups))
    if len(used) < 2:
        return MetricValue.undefined(SINGLE_TASK, total=len(groups))
    if n == len(used):
        return MetricValue.undefined(SINGLE_TRIAL, total=len(groups))
    grand = math.fsum(math.fsum(g) for g in used) / n
    means = [math.fsum(g) / len(g) for g in used]
    between = math.fsum(len(g) * (m - grand) ** 2 for g, m in zip(used, means, strict=True))
    within = math.fsum(math.fsum((v - m) ** 2 for v in g) for g, m in zip(used, means, strict=True))
    msb = between / (len(used) - 1)
    msw = within / (n - len(used))
    k0 = (n - math.fsum(len(g) ** 2 for g in used) / n) / (len(used) - 1)
    denominator = msb + (k0 - 1) * msw
    if denominator <= 0:
        return MetricValue.undefined(NO_VARIATION, total=len(groups))
    return MetricValue((msb - msw) / denominator, defined=len(used), total=len(groups))


def design_effect(trials: int, icc: float) -> float:
    """1 + (m − 1)·max(ρ, 0) for m trials per scenario."""
    if trials < 1:
        raise ValueError(f"trials per scenario must be >= 1, got {trials}")
    return 1 + (trials - 1) * max(icc, 0.0)


@dataclass(frozen=True)
class SamplePlan:
    """What detecting a drop takes, at m trials per scenario and a within-scenario ρ."""

    independent_trials: int
    """n: trials per run if trials were independent."""
    trials_per_scenario: int
    design_effect: float
    scenarios_needed: int
    """⌈n · deff / m⌉ scenarios at m trials each."""
    min_scenarios: int
    """⌈n · ρ⌉ (at least 1): the scenarios needed however many trials each gets."""
    scenarios: int | None
    """The scenarios available (a baseline's), when known."""
    trials_needed: int | None
    """Trials per scenario that reach the power with ``scenarios``; None when none can."""

    @property
    def trials_reach_power(self) -> bool | None:
        """Whether more trials on ``scenarios`` can reach the power (None: scenarios unknown)."""
        return None if self.scenarios is None else self.trials_needed is not None


def sample_plan(
    independent: int, icc: float, trials: int, scenarios: int | None = None
) -> SamplePlan:
    """The scenarios × trials that give ``independent`` trials' worth at correlation ``icc``."""
    rho = max(icc, 0.0)
    deff = design_effect(trials, rho)
    needed = math.ceil(independent * deff / trials - 1e-9)
    floor = max(1, math.ceil(independent * rho - 1e-9))
    trials_needed: int | None = None
    if scenarios is not None:
        # S scenarios of m trials count S·m / (1 + (m − 1)ρ); enough when m(S − nρ) ≥ n(1 − ρ).
        room = scenarios - independent * rho
        if room > 1e-12:
            trials_needed = max(1, math.ceil(independent * (1 - rho) / room - 1e-9))
    return SamplePlan(independent, trials, deff, needed, floor, scenarios, trials_needed)
