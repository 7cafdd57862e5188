"""pass@k and pass^k: vectors, undefined cases, brute-force cross-checks, properties."""

from __future__ import annotations

import itertools
import random

import pytest

from hbeval_core.metrics import pass_at_k, pass_at_k_detail, pass_hat_k, pass_hat_k_detail
from hbeval_core.vocab import K_EXCEEDS_TRIALS, NO_TRIALS

FOUR_OF_FIVE = {"t1": [True, True, True, True, False]}


@pytest.mark.parametrize(
    ("k", "hat", "at"),
    [(1, 0.8, 0.8), (2, 0.6, 1.0), (3, 0.4, 1.0), (4, 0.2, 1.0), (5, 0.0, 1.0)],
)
def test_four_of_five_vector(k: int, hat: float, at: float) -> None:
    assert pass_hat_k(FOUR_OF_FIVE, k) == pytest.approx(hat, abs=1e-12)
    assert pass_at_k(FOUR_OF_FIVE, k) == pytest.approx(at, abs=1e-12)


def test_zero_pass_hat_k_is_a_value_not_undefined() -> None:
    # 0.0 here is a measured zero (k = n and one trial failed), not an undefined value.
    detail = pass_hat_k_detail(FOUR_OF_FIVE, 5)
    assert detail.value == 0.0
    assert detail.reason is None


def test_empty_mapping_is_undefined_no_trials() -> None:
    assert pass_at_k({}, 1) is None
    assert pass_hat_k({}, 1) is None
    detail = pass_at_k_detail({}, 1)
    assert (detail.value, detail.reason, detail.defined, detail.total) == (None, NO_TRIALS, 0, 0)


def test_tasks_without_trials_are_no_trials() -> None:
    assert pass_hat_k_detail({"a": [], "b": []}, 1).reason == NO_TRIALS


def test_k_exceeding_every_task_is_undefined() -> None:
    detail = pass_hat_k_detail({"a": [True, True], "b": [False]}, 3)
    assert detail.value is None
    assert detail.reason == K_EXCEEDS_TRIALS
    assert (detail.defined, detail.total) == (0, 2)


def test_tasks_with_fewer_than_k_trials_are_skipped_and_counted() -> None:
    trials = {"a": [True, True, True], "b": [True, False, False], "c": [True]}
    detail = pass_hat_k_detail(trials, 2)
    # a: C(3,2)/C(3,2) = 1; b: C(1,2)/C(3,2) = 0; c undefined (n = 1 < k).
    assert detail.value == pytest.approx(0.5)
    assert (detail.defined, detail.total) == (2, 3)
    at = pass_at_k_detail(trials, 2)
    # a: 1; b: 1 - C(2,2)/C(3,2) = 2/3.
    assert at.value == pytest.approx((1 + 2 / 3) / 2)
    assert (at.defined, at.total) == (2, 3)


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_an_error_naming_k(k: int) -> None:
    with pytest.raises(ValueError, match="k"):
        pass_at_k(FOUR_OF_FIVE, k)
    with pytest.raises(ValueError, match="k"):
        pass_hat_k(FOUR_OF_FIVE, k)


def test_non_boolean_outcome_is_rejected() -> None:
    with pytest.raises(ValueError, match="t1"):
        pass_at_k({"t1": ["pass"]}, 1)  # type: ignore[list-item]


def test_integer_outcomes_are_accepted() -> None:
    assert pass_hat_k({"t": [1, 1, 0, 1]}, 2) == pytest.approx(3 / 6)  # type: ignore[list-item]


def _brute_force(outcomes: list[bool], k: int) -> tuple[float, float]:
    # Every way of drawing k of the n trials: share where all pass, share where any passes.
    draws = list(itertools.combinations(outcomes, k))
    return (
        sum(all(d) for d in draws) / len(draws),
        sum(any(d) for d in draws) / len(draws),
    )


def test_matches_brute_force_enumeration() -> None:
    rng = random.Random(7)
    for _ in range(40):
        trials = {f"t{i}": [rng.random() < 0.6 for _ in range(rng.randint(1, 7))] for i in range(4)}
        for k in range(1, 8):
            defined = [o for o in trials.values() if len(o) >= k]
            hat = pass_hat_k(trials, k)
            at = pass_at_k(trials, k)
            if not defined:
                assert hat is None and at is None
                continue
            expected = [_brute_force(o, k) for o in defined]
            assert hat == pytest.approx(sum(e[0] for e in expected) / len(expected), abs=1e-12)
            assert at == pytest.approx(sum(e[1] for e in expected) / len(expected), abs=1e-12)


def test_properties_hat_below_at_and_k1_equal_mean_rate() -> None:
    rng = random.Random(11)
    for _ in range(50):
        trials = {f"t{i}": [rng.random() < 0.5 for _ in range(8)] for i in range(5)}
        rate = sum(sum(o) / len(o) for o in trials.values()) / len(trials)
        assert pass_hat_k(trials, 1) == pytest.approx(rate)
        assert pass_at_k(trials, 1) == pytest.approx(rate)
        previous_hat, previous_at = 1.0, 0.0
        for k in range(1, 9):
            hat, at = pass_hat_k(trials, k), pass_at_k(trials, k)
            assert hat is not None and at is not None
            assert hat <= at + 1e-12
            # More draws: all-pass only gets harder, any-pass only easier.
            assert hat <= previous_hat + 1e-12 and at >= previous_at - 1e-12
            previous_hat, previous_at = hat, at
