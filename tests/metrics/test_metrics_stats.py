"""Wilson, two-proportion z, Cohen's h, exact Beta tails and the reliability gap (spec §7.2)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from hbeval_core.metrics import (
    beta_tail_probability,
    cohens_h,
    reliability_gap,
    two_proportion_z,
    wilson_interval,
    z_critical,
)
from hbeval_core.vocab import NO_FAULTED_TRIAL, NO_NOMINAL_TRIAL

SPEC_4DP = 5e-5  # the reference rounds to 4 decimals


# --- Wilson ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [(362, 1000, 0.3328, 0.3923), (422, 1000, 0.3917, 0.4529)],
)
def test_wilson_spec_vectors(successes: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(successes, n)
    assert interval is not None
    assert interval[0] == pytest.approx(low, abs=SPEC_4DP)
    assert interval[1] == pytest.approx(high, abs=SPEC_4DP)


def _wilson_by_quadratic(successes: int, n: int, z: float) -> tuple[float, float]:
    # Independent route: the Wilson bounds are the roots p of (p̂ − p)² = z²·p(1 − p)/n.
    p_hat = successes / n
    a = 1 + z * z / n
    b = -(2 * p_hat + z * z / n)
    c = p_hat * p_hat
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def test_wilson_agrees_with_the_quadratic_and_contains_p_hat() -> None:
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 500)
        s = rng.randint(0, n)
        for confidence in (0.9, 0.95, 0.99, 0.8):
            interval = wilson_interval(s, n, confidence)
            assert interval is not None
            low, high = interval
            assert 0.0 <= low <= s / n <= high <= 1.0
            q_low, q_high = _wilson_by_quadratic(s, n, z_critical(confidence))
            assert low == pytest.approx(max(0.0, q_low), abs=1e-9)
            assert high == pytest.approx(min(1.0, q_high), abs=1e-9)


def test_wilson_without_trials_is_none() -> None:
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((5, 3), "successes"),
        ((-1, 3), "successes"),
        ((1, -3), "n"),
        ((1, 3, 0.0), "confidence"),
        ((1, 3, 1.0), "confidence"),
        ((1, 3, 1.5), "confidence"),
        ((1.5, 3), "successes"),
    ],
)
def test_wilson_rejects_bad_input_naming_the_field(args: tuple[float, ...], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        wilson_interval(*args)  # type: ignore[arg-type]


def test_z_critical_table_and_exact_quantile() -> None:
    assert z_critical(0.95) == 1.96
    assert z_critical(0.90) == 1.645
    assert z_critical(0.99) == 2.576
    # Not in the reference table: the exact normal quantile (textbook 1.2815515655).
    assert z_critical(0.80) == pytest.approx(1.2815515655446004, abs=1e-9)
    assert z_critical(0.98) == pytest.approx(2.3263478740408408, abs=1e-9)


# --- two-proportion z -----------------------------------------------------------------------


def test_two_proportion_z_spec_vectors() -> None:
    result = two_proportion_z(0.362, 6000, 0.356, 4998)
    assert result is not None
    assert result[0] == pytest.approx(0.653, abs=5e-4)
    assert result[1] == pytest.approx(0.5138, abs=SPEC_4DP)
    assert two_proportion_z(0.5, 1000, 0.5, 1000) == (0.0, 1.0)


def test_two_proportion_z_sign_and_zero_se() -> None:
    z, p = two_proportion_z(0.3, 100, 0.6, 100)  # type: ignore[misc]
    assert z < 0 and 0 < p < 1
    assert two_proportion_z(1.0, 10, 1.0, 20) == (0.0, 1.0)


def test_two_proportion_z_without_trials_is_none() -> None:
    assert two_proportion_z(0.5, 0, 0.5, 10) is None
    assert two_proportion_z(0.5, 10, 0.5, 0) is None


@pytest.mark.parametrize(
    ("args", "field"),
    [((1.2, 10, 0.5, 10), "p1"), ((0.5, 10, -0.1, 10), "p2"), ((0.5, -1, 0.5, 10), "n1")],
)
def test_two_proportion_z_rejects_bad_input(args: tuple[float, ...], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        two_proportion_z(*args)  # type: ignore[arg-type]


# --- Cohen's h ------------------------------------------------------------------------------


def test_cohens_h_spec_vector_and_symmetry() -> None:
    assert cohens_h(0.730, 0.321) == pytest.approx(0.8441, abs=SPEC_4DP)
    assert cohens_h(0.321, 0.730) == cohens_h(0.730, 0.321)
    assert cohens_h(0.4, 0.4) == 0.0
    assert cohens_h(1.0, 0.0) == pytest.approx(math.pi)


def test_cohens_h_rejects_non_proportions() -> None:
    with pytest.raises(ValueError, match="p2"):
        cohens_h(0.5, 1.5)


# --- exact Beta tail ------------------------------------------------------------------------


def _beta_tail_by_binomial_sum(successes: int, n: int, threshold: str) -> float:
    # Independent route, exact rational arithmetic: P(Beta(s+1, n−s+1) > x) = P(Bin(n+1, x) <= s).
    x = Fraction(threshold)
    trials = n + 1
    num, den = x.numerator, x.denominator
    total = sum(
        math.comb(trials, j) * num**j * (den - num) ** (trials - j) for j in range(successes + 1)
    )
    return float(Fraction(total, den**trials))


@pytest.mark.parametrize(
    ("successes", "n", "threshold", "spec"),
    [
        (795, 1000, "0.80", 0.3353),
        (820, 1000, "0.80", 0.9416),
        (82, 100, "0.80", 0.6561),
        (87, 100, "0.80", 0.9574),
        (88, 100, "0.80", 0.9772),
        (88, 100, "0.95", 0.0016),
        (730, 1000, "0.80", 0.0000),
        (1000, 1000, "0.95", 1.0),
    ],
)
def test_beta_tail_spec_vectors_and_exact_sum(
    successes: int, n: int, threshold: str, spec: float
) -> None:
    value = beta_tail_probability(successes, n, float(threshold))
    assert value is not None
    assert value == pytest.approx(spec, abs=SPEC_4DP)
    exact = _beta_tail_by_binomial_sum(successes, n, threshold)
    assert value == pytest.approx(exact, rel=1e-9, abs=1e-15)


def test_beta_tail_keeps_precision_in_tiny_tails() -> None:
    # 730/1000 at 0.80 is about 4e-8: a 1 − I_x(a, b) route would lose it to cancellation.
    value = beta_tail_probability(730, 1000, 0.80)
    assert value is not None and value > 0
    assert value == pytest.approx(_beta_tail_by_binomial_sum(730, 1000, "0.80"), rel=1e-9)


def test_beta_tail_random_cross_check() -> None:
    rng = random.Random(5)
    for _ in range(60):
        n = rng.randint(1, 300)
        s = rng.randint(0, n)
        threshold = f"0.{rng.randint(1, 99):02d}"
        value = beta_tail_probability(s, n, float(threshold))
        exact = _beta_tail_by_binomial_sum(s, n, threshold)
        assert value == pytest.approx(exact, rel=1e-9, abs=1e-14)


def test_beta_tail_edges() -> None:
    assert beta_tail_probability(0, 0, 0.8) is None  # no data: the prior is not evidence
    assert beta_tail_probability(5, 10, 0.0) == 1.0
    assert beta_tail_probability(5, 10, 1.0) == 0.0
    with pytest.raises(ValueError, match="threshold"):
        beta_tail_probability(5, 10, 1.5)
    with pytest.raises(ValueError, match="successes"):
        beta_tail_probability(11, 10, 0.5)


# --- reliability gap ------------------------------------------------------------------------


def test_reliability_gap_spec_vector() -> None:
    gap = reliability_gap(90, 100, 60, 100)
    assert gap.c_nom == pytest.approx(0.9)
    assert gap.r_op == pytest.approx(0.6)
    assert gap.gap is not None and gap.gap * 100 == pytest.approx(30.0, abs=5e-3)
    assert gap.interval is not None
    half_width = (gap.interval[1] - gap.interval[0]) / 2
    assert half_width * 100 == pytest.approx(11.26, abs=5e-3)
    assert gap.z == pytest.approx(5.222, abs=5e-4)
    assert gap.p_value is not None and gap.p_value == pytest.approx(0.0, abs=5e-5)
    assert gap.significant is True
    assert gap.undefined == {}


def test_reliability_gap_small_gap_is_not_significant() -> None:
    gap = reliability_gap(55, 100, 50, 100)
    assert gap.significant is False
    assert gap.p_value is not None and 0 < gap.p_value < 1


def test_reliability_gap_negative_gap_keeps_p_a_probability() -> None:
    gap = reliability_gap(50, 100, 80, 100)
    assert gap.gap is not None and gap.gap < 0
    assert gap.p_value is not None and 0 <= gap.p_value <= 1
    assert gap.significant is False


def test_reliability_gap_zero_variance() -> None:
    same = reliability_gap(10, 10, 20, 20)
    assert (same.gap, same.z, same.p_value, same.significant) == (0.0, 0.0, 1.0, False)
    collapse = reliability_gap(20, 20, 0, 20)
    assert collapse.z is not None and collapse.z > 5
    assert collapse.significant is True


def test_reliability_gap_undefined_parts_carry_reasons() -> None:
    no_nominal = reliability_gap(0, 0, 6, 10)
    assert no_nominal.c_nom is None and no_nominal.gap is None and no_nominal.significant is None
    assert no_nominal.r_op == pytest.approx(0.6)
    assert no_nominal.undefined["c_nom"] == NO_NOMINAL_TRIAL
    assert no_nominal.undefined["gap"] == NO_NOMINAL_TRIAL
    assert "r_op" not in no_nominal.undefined
    no_faulted = reliability_gap(6, 10, 0, 0)
    assert no_faulted.r_op is None and no_faulted.z is None
    assert no_faulted.undefined["r_op"] == NO_FAULTED_TRIAL
    assert no_faulted.undefined["gap"] == NO_FAULTED_TRIAL


def test_reliability_gap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="faulted_successes"):
        reliability_gap(5, 10, 11, 10)
    with pytest.raises(ValueError, match="confidence"):
        reliability_gap(5, 10, 5, 10, confidence=95)
