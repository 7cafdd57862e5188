"""Clustered intervals: repeated trials of one scenario count as one cluster, not as many draws.

Golden values are computed here from first principles: Wilson's score interval written out, the
cluster-robust variance written out, and a scenario-cluster bootstrap (resampling whole
scenarios with a fixed seed) that the clustered interval must keep up with.
"""

from __future__ import annotations

import math
import random

import pytest

from hbeval_core.metrics import clustered_difference, clustered_rate

Z95 = 1.96  # the reference's table value at 95 % (hbeval-spec), as every hbeval interval


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def bootstrap(clusters: list[list[int]], draws: int = 4000, seed: int = 7) -> tuple[float, float]:
    """95% percentile interval of the pooled rate over resampled whole clusters."""
    rng = random.Random(seed)
    rates = []
    for _ in range(draws):
        picked = [rng.choice(clusters) for _ in clusters]
        rates.append(sum(map(sum, picked)) / sum(map(len, picked)))
    rates.sort()
    return rates[int(0.025 * draws)], rates[int(0.975 * draws) - 1]


def test_fourteen_clean_scenarios_are_worth_fourteen_not_forty_two() -> None:
    rate = clustered_rate({i: [1, 1, 1] for i in range(14)})
    assert rate.estimate == 1.0 and rate.n == 42 and rate.clusters == 14
    assert rate.interval is not None
    assert rate.interval[0] == pytest.approx(wilson(14, 14)[0])  # 0.785, not 0.916 at n 42
    assert rate.interval[0] == pytest.approx(0.7847, abs=1e-4) and rate.interval[1] == 1.0
    assert rate.independent_interval is not None
    assert rate.independent_interval[0] == pytest.approx(wilson(42, 42)[0])
    assert rate.effective_n == 14 and rate.design_effect == 3.0


def test_the_cluster_robust_variance_sets_the_effective_n() -> None:
    # Three scenarios always pass, two always fail, one passes two of three.
    groups = [[1, 1, 1]] * 3 + [[0, 0, 0]] * 2 + [[1, 0, 1]]
    n, m, successes = 18, 6, 11
    p = successes / n
    spread = sum((sum(g) - p * len(g)) ** 2 for g in groups)
    variance = m / (m - 1) * spread / n**2  # the sandwich variance of the pooled ratio
    n_eff = p * (1 - p) / variance  # 5.92: below the 6 scenarios, far below 18 trials
    assert 5.9 < n_eff < 6.0
    rate = clustered_rate(dict(enumerate(groups)))
    assert rate.effective_n == pytest.approx(n_eff)
    assert rate.design_effect == pytest.approx(n / n_eff)
    assert rate.interval == pytest.approx(wilson(p * n_eff, n_eff))


def test_one_trial_per_scenario_is_wilson_with_the_small_sample_correction() -> None:
    # No clustering (one trial per scenario): the sandwich variance is the binomial one times
    # m/(m-1), so the effective n is 19 of 20 and the interval barely wider than Wilson's.
    rate = clustered_rate({i: [i % 2] for i in range(20)})
    assert rate.effective_n == pytest.approx(19.0)
    assert rate.interval == pytest.approx(wilson(0.5 * 19, 19))
    assert rate.independent_interval == pytest.approx(wilson(10, 20))


@pytest.mark.parametrize(
    "groups",
    [
        # a naive agent's FRR shape: scenarios that always recover, never, or sometimes
        [[1, 1, 1]] * 5 + [[0, 0, 0]] * 7 + [[1, 1, 0], [1, 0, 0]],
        [[1, 1, 1]] * 9 + [[0, 0, 0]] * 3 + [[1, 0, 1]] * 2,
        [[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 1]] * 4,
    ],
)
def test_the_interval_keeps_up_with_a_scenario_cluster_bootstrap(groups: list[list[int]]) -> None:
    rate = clustered_rate(dict(enumerate(groups)))
    assert rate.interval is not None and rate.independent_interval is not None
    low, high = bootstrap(groups)
    width = rate.interval[1] - rate.interval[0]
    assert width >= 0.85 * (high - low)
    # and where outcomes cluster, wider than the interval that treats trials as independent
    if any(len(set(g)) == 1 for g in groups):
        assert width > rate.independent_interval[1] - rate.independent_interval[0]


def test_a_deterministic_agent_gives_overlapping_intervals_across_seeds() -> None:
    # The same agent on two seeds: 0 of 13 judged scenarios handled, then 2 of 13 (each
    # scenario three trials, all alike). Independent Wilson intervals at n 39 exclude each
    # other's estimate; the clustered ones overlap.
    first = clustered_rate({i: [0, 0, 0] for i in range(13)})
    second = clustered_rate({i: [1, 1, 1] if i < 2 else [0, 0, 0] for i in range(13)})
    assert first.independent_interval is not None and second.estimate is not None
    assert second.estimate > first.independent_interval[1]
    assert first.interval is not None and second.interval is not None
    assert first.interval[1] >= second.interval[0]


def test_no_trials_is_undefined_not_zero() -> None:
    rate = clustered_rate({})
    assert rate.estimate is None and rate.interval is None
    assert set(rate.undefined) == {"estimate", "interval", "independent_interval"}


def test_a_value_outside_zero_one_is_refused_naming_the_cluster() -> None:
    with pytest.raises(ValueError, match=r"groups\['s1'\]"):
        clustered_rate({"s1": [1.5]})


def test_the_gap_interval_is_newcombe_over_the_clustered_intervals() -> None:
    nominal = clustered_rate({i: [1, 1, 1] for i in range(6)})
    faulted = clustered_rate({i: [1, 1, 1] if i < 5 else [0, 0, 0] for i in range(14)})
    diff = clustered_difference(nominal, faulted)
    assert nominal.interval is not None and faulted.interval is not None
    assert faulted.estimate is not None and diff.interval is not None
    d = 1.0 - faulted.estimate
    assert diff.difference == pytest.approx(d)
    low = d - math.sqrt(
        (1.0 - nominal.interval[0]) ** 2 + (faulted.interval[1] - faulted.estimate) ** 2
    )
    high = d + math.sqrt(
        (nominal.interval[1] - 1.0) ** 2 + (faulted.estimate - faulted.interval[0]) ** 2
    )
    assert diff.interval == pytest.approx((low, high))
