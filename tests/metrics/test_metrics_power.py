"""Sample sizes, the one-way ANOVA ICC and the design effect, against arithmetic written out."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from hbeval_core.metrics import design_effect, icc_oneway, sample_plan, two_proportion_sample_size
from hbeval_core.vocab import NO_TRIALS, NO_VARIATION, SINGLE_TASK, SINGLE_TRIAL


def _pooled(p1: float, p2: float, alpha: float, power: float) -> float:
    z_a = NormalDist().inv_cdf(1 - alpha / 2)
    z_b = NormalDist().inv_cdf(power)
    pbar = (p1 + p2) / 2
    top = z_a * math.sqrt(2 * pbar * (1 - pbar)) + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return top**2 / (p1 - p2) ** 2


def test_frr_095_to_085_needs_141_independent_trials() -> None:
    # (1.95996·√(2·0.9·0.1) + 0.84162·√(0.0475 + 0.1275))² / 0.1² = 140.09 -> 141
    assert _pooled(0.95, 0.85, 0.05, 0.8) == pytest.approx(140.09, abs=0.01)
    assert two_proportion_sample_size(0.95, 0.85, alpha=0.05, power=0.8) == 141
    assert two_proportion_sample_size(0.85, 0.95) == 141  # symmetric
    assert two_proportion_sample_size(0.5, 0.4, alpha=0.01, power=0.9) == math.ceil(
        _pooled(0.5, 0.4, 0.01, 0.9)
    )


def test_bad_rates_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="p2"):
        two_proportion_sample_size(0.9, 1.5)
    with pytest.raises(ValueError, match="equal"):
        two_proportion_sample_size(0.9, 0.9)
    with pytest.raises(ValueError, match="alpha"):
        two_proportion_sample_size(0.9, 0.8, alpha=0)


def test_icc_of_the_textbook_layout() -> None:
    groups = [[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 1]]
    # Written out: N = 12, grand mean 1/2; group means 1, 0, 2/3, 1/3.
    msb = 3 * ((1 - 0.5) ** 2 + (0 - 0.5) ** 2 + (2 / 3 - 0.5) ** 2 + (1 / 3 - 0.5) ** 2) / 3
    msw = (0 + 0 + 2 * (1 / 3) ** 2 + (2 / 3) ** 2 + 2 * (1 / 3) ** 2 + (2 / 3) ** 2) / (12 - 4)
    expected = (msb - msw) / (msb + 2 * msw)  # k0 = 3
    value = icc_oneway(groups)
    assert value.value == pytest.approx(expected)
    assert value.defined == 4


def test_icc_is_one_when_scenarios_never_disagree_within() -> None:
    assert icc_oneway([[1, 1, 1], [0, 0, 0], [1, 1, 1]]).value == pytest.approx(1.0)


def test_icc_undefined_cases() -> None:
    assert icc_oneway([]).reason == NO_TRIALS
    assert icc_oneway([[1, 0, 1]]).reason == SINGLE_TASK
    assert icc_oneway([[1], [0]]).reason == SINGLE_TRIAL
    assert icc_oneway([[1, 1], [1, 1]]).reason == NO_VARIATION


def test_design_effect_and_the_issue_scenarios() -> None:
    assert design_effect(3, 0.41) == pytest.approx(1.82)
    plan = sample_plan(141, 0.41, 3)
    assert plan.design_effect == pytest.approx(1.82)
    assert plan.scenarios_needed == math.ceil(141 * 1.82 / 3) == 86
    assert plan.min_scenarios == math.ceil(141 * 0.41) == 58
    # Independent trials on the default battery's 14 faulted scenarios: ⌈141 / 14⌉ = 11 each.
    assert sample_plan(141, 0.0, 3, 14).trials_needed == 11
    # Correlation near 1: every scenario counts about once; no number of trials will do.
    near_one = sample_plan(141, 0.99, 3, 14)
    assert near_one.trials_needed is None and near_one.trials_reach_power is False
    assert near_one.scenarios_needed == math.ceil(141 * (1 + 2 * 0.99) / 3) == 141
    assert near_one.min_scenarios == 140


def test_trials_needed_solves_the_effective_n() -> None:
    # With S scenarios of m trials the effective n is S·m / (1 + (m − 1)ρ).
    plan = sample_plan(100, 0.1, 3, 30)
    m = plan.trials_needed
    assert m is not None
    assert 30 * m / (1 + (m - 1) * 0.1) >= 100
    assert 30 * (m - 1) / (1 + (m - 2) * 0.1) < 100
