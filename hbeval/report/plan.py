"""``hbeval plan``: how many scenarios × trials a run needs to detect a drop in a rate.

The rate and the within-scenario correlation come from a baseline report (its trials grouped
by scenario) or are stated. The method (``hbeval_core.metrics._power``, docs/statistics.md):
the pooled normal approximation without continuity correction gives the independent trials n;
the one-way ANOVA ICC ρ of the baseline's 0/1 outcomes by scenario gives the design effect
1 + (m − 1)ρ of m trials per scenario; ⌈n · deff / m⌉ scenarios are needed. With S scenarios
more trials reach the power only when S > n·ρ; otherwise the plan says so and gives the
scenarios needed instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hbeval_core.metrics import (
    SamplePlan,
    icc_oneway,
    sample_plan,
    two_proportion_sample_size,
)
from hbeval_core.vocab import FRR, OUTCOME_FAIL, OUTCOME_PASS, OUTCOME_TIMEOUT

from ..scoring._side_effects import recovered

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["PLANNED_METRICS", "Plan", "PlanRefused", "baseline_outcomes", "make_plan"]

PASS_RATE = "pass_rate"
PLANNED_METRICS = (FRR, PASS_RATE)
"""Rates a plan can be made for: FRR over faulted trials, the pass rate over scored trials."""
METHOD = (
    "pooled normal approximation without continuity correction (exact normal quantiles), "
    "design effect 1 + (m − 1)·ρ with ρ the one-way ANOVA intraclass correlation of outcomes "
    "by scenario; see docs/statistics.md"
)
_SCORED = (OUTCOME_PASS, OUTCOME_FAIL, OUTCOME_TIMEOUT)


class PlanRefused(ValueError):
    """The plan cannot be made from what was given; the message names the option to fix."""


def baseline_outcomes(report: Report, metric: str) -> dict[str, list[int]]:
    """The report's 0/1 outcomes for ``metric`` grouped by scenario (FRR: faulted trials,
    a recovery = passed without a duplicated side effect; pass rate: scored trials)."""
    groups: dict[str, list[int]] = {}
    for entry in report.trials:
        if entry.outcome not in _SCORED or entry.perturbation is not None:
            continue
        if metric == FRR:
            if entry.verdict is None or entry.verdict.faulted is not True:
                continue
            success = recovered(entry.model_dump(mode="json"))
        else:
            success = entry.outcome == OUTCOME_PASS
        key = str(entry.scenario_index if entry.scenario_index is not None else entry.task_id)
        groups.setdefault(key, []).append(int(success))
    return groups


@dataclass(frozen=True)
class Plan:
    """A sample-size plan and where each of its inputs came from."""

    metric: str
    baseline: str | None
    rate: float
    rate_source: str
    drop: float
    alpha: float
    power: float
    icc: float
    icc_source: str
    sizes: SamplePlan

    @property
    def target(self) -> float:
        return self.rate - self.drop

    def as_dict(self) -> dict[str, Any]:
        """The plan as ``--json`` prints it."""
        s = self.sizes
        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "rate": self.rate,
            "rate_source": self.rate_source,
            "target_rate": self.target,
            "drop": self.drop,
            "alpha": self.alpha,
            "power": self.power,
            "icc": self.icc,
            "icc_source": self.icc_source,
            "independent_trials": s.independent_trials,
            "trials_per_scenario": s.trials_per_scenario,
            "design_effect": s.design_effect,
            "scenarios_needed": s.scenarios_needed,
            "trials_needed_in_all": s.scenarios_needed * s.trials_per_scenario,
            "min_scenarios_any_trials": s.min_scenarios,
            "scenarios": s.scenarios,
            "trials_per_scenario_needed": s.trials_needed,
            "more_trials_reach_power": s.trials_reach_power,
            "method": METHOD,
        }

    def lines(self) -> list[str]:
        """The plan as ``hbeval plan`` prints it."""
        s, name = self.sizes, self.metric.upper() if self.metric == FRR else "pass rate"
        out = [
            f"plan: detect {name} {self.rate:.3f} -> {self.target:.3f} (drop {self.drop:.3f}), "
            f"two-sided alpha {self.alpha:g}, power {self.power:g}",
            f"  rate: {self.rate_source}",
            f"  within-scenario correlation rho {self.icc:.3f}: {self.icc_source}",
            f"  independent trials needed: {s.independent_trials} per run",
            f"  at {s.trials_per_scenario} trials per scenario: design effect "
            f"{s.design_effect:.2f}, so {s.scenarios_needed} scenarios "
            f"({s.scenarios_needed * s.trials_per_scenario} trials) per run",
        ]
        if s.scenarios is not None and s.trials_needed is not None:
            out.append(
                f"  with {s.scenarios} scenarios: {s.trials_needed} trials per scenario reach "
                "the power"
            )
        elif s.scenarios is not None:
            out.append(
                f"  with {s.scenarios} scenarios no number of trials reaches the power: "
                f"outcomes cluster by scenario (rho {self.icc:.2f}), so a scenario counts at "
                f"most 1/rho = {1 / max(self.icc, 1e-9):.2f} trials; {s.min_scenarios} "
                f"scenarios are needed however many trials each gets, {s.scenarios_needed} at "
                f"{s.trials_per_scenario} trials each"
            )
        else:
            out.append(
                f"  however many trials each scenario gets, at least {s.min_scenarios} "
                "scenarios are needed"
            )
        out.append(f"  method: {METHOD}")
        return out


def _check(name: str, value: float, low: float, high: float) -> float:
    if not low < value < high:
        raise PlanRefused(f"{name} must be between {low:g} and {high:g} (exclusive), got {value}")
    return value


def make_plan(
    report: Report | None,
    *,
    metric: str,
    drop: float,
    alpha: float = 0.05,
    power: float = 0.8,
    rate: float | None = None,
    icc: float | None = None,
    trials: int | None = None,
    scenarios: int | None = None,
) -> Plan:
    """The plan from ``report`` (a baseline) and/or stated assumptions; a stated value wins."""
    # Long because: each input comes from the option or the baseline, each with its own refusal.
    if metric not in PLANNED_METRICS:
        raise PlanRefused(f"--metric must be one of {', '.join(PLANNED_METRICS)}, got {metric!r}")
    _check("--alpha", alpha, 0, 1)
    _check("--power", power, 0, 1)
    groups = baseline_outcomes(report, metric) if report is not None else {}
    outcomes = [v for g in groups.values() for v in g]
    if rate is not None:
        rate_source = "stated (--rate)"
    elif report is None:
        raise PlanRefused("without a baseline report, state the current rate with --rate")
    elif not outcomes:
        raise PlanRefused(
            f"the baseline has no {'faulted' if metric == FRR else 'scored'} trial to take the "
            "rate from; state it with --rate"
        )
    else:
        rate = sum(outcomes) / len(outcomes)
        rate_source = (
            f"baseline, {sum(outcomes)} of {len(outcomes)} "
            f"{'faulted' if metric == FRR else 'scored'} trials in {len(groups)} scenarios"
        )
    _check("--rate", rate, 0, 1.000001)
    _check("--drop", drop, 0, rate + 1e-12)
    if icc is not None:
        _check("--icc", icc, -1, 1.000001)
        icc_source = "stated (--icc)"
    elif report is None:
        raise PlanRefused(
            "without a baseline report, state the within-scenario correlation with --icc "
            "(0: trials independent, 1: trials of a scenario always agree)"
        )
    else:
        measured = icc_oneway(list(groups.values()))
        if measured.value is None:
            raise PlanRefused(
                f"the baseline's within-scenario correlation is undefined ({measured.reason}); "
                "state one with --icc (0: trials independent, 1: trials of a scenario always "
                "agree)"
            )
        icc = measured.value
        icc_source = f"baseline, one-way ANOVA over {measured.defined} scenarios"
    m = trials if trials is not None else _baseline_trials(report, groups)
    if m < 1:
        raise PlanRefused(f"--trials must be at least 1, got {m}")
    if scenarios is None and groups and report is not None:
        scenarios = len(groups)
    if scenarios is not None and scenarios < 1:
        raise PlanRefused(f"--scenarios must be at least 1, got {scenarios}")
    independent = two_proportion_sample_size(rate, rate - drop, alpha=alpha, power=power)
    return Plan(
        metric=metric,
        baseline=None if report is None else report.run_id,
        rate=rate,
        rate_source=rate_source,
        drop=drop,
        alpha=alpha,
        power=power,
        icc=icc,
        icc_source=icc_source,
        sizes=sample_plan(independent, icc, m, scenarios),
    )


def _baseline_trials(report: Report | None, groups: Mapping[str, Sequence[int]]) -> int:
    """The baseline's trials per scenario (its run's setting, else its largest scenario), or
    the command line's default of 3 without a baseline."""
    if report is not None and isinstance(report.run.trials, int) and report.run.trials >= 1:
        return report.run.trials
    return max((len(g) for g in groups.values()), default=3)
