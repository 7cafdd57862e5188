"""Paired comparison of two runs."""

from __future__ import annotations

import math

import pytest

from hbeval_core.metrics import cohens_h, paired_comparison, two_proportion_z
from hbeval_core.metrics._special import student_t_quantile
from hbeval_core.vocab import NO_TRIALS, SINGLE_TASK


@pytest.mark.parametrize(
    ("df", "textbook"),
    [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423), (1000, 1.9623)],
)
def test_student_t_quantiles_match_tables(df: int, textbook: float) -> None:
    assert student_t_quantile(0.975, df) == pytest.approx(textbook, abs=1e-4)
    assert student_t_quantile(0.025, df) == pytest.approx(-textbook, abs=1e-4)


def test_paired_comparison_by_hand() -> None:
    a = {"t1": [True, False], "t2": [True, True], "t3": [False, False, False, True], "gone": [True]}
    b = {"t1": [True, True], "t2": [True, True], "t3": [True, False, False, False], "new": [False]}
    result = paired_comparison(a, b)
    assert [t.task for t in result.tasks] == ["t1", "t2", "t3"]
    changes = [0.5, 0.0, 0.0]
    assert [t.change for t in result.tasks] == pytest.approx(changes)
    mean = sum(changes) / 3
    sd = math.sqrt(sum((c - mean) ** 2 for c in changes) / 2)
    assert result.mean_change == pytest.approx(mean)
    assert result.sd_change == pytest.approx(sd)
    # three shared tasks: too few for a paired test (the smallest exact p would be 2/8)
    assert result.interval is None and result.p_paired is None
    assert result.only_in_a == ("gone",) and result.only_in_b == ("new",)
    # Pooled over the paired tasks: a 4/8, b 5/8.
    assert (result.rate_a, result.rate_b, result.n_a, result.n_b) == (0.5, 0.625, 8, 8)
    expected = two_proportion_z(0.625, 8, 0.5, 8)
    assert expected is not None
    assert (result.z, result.p_value) == pytest.approx(expected)
    assert result.z is not None and result.z > 0  # b is better
    assert result.cohens_h == pytest.approx(cohens_h(0.625, 0.5))
    assert result.undefined == {"interval": "insufficient_tasks", "p_paired": "insufficient_tasks"}


def _runs(changes: list[int]) -> tuple[dict[str, list[bool]], dict[str, list[bool]]]:
    """One trial per task in each run; change +1 (b passes, a fails), -1, or 0 (both pass)."""
    a = {f"t{i}": [c <= 0] for i, c in enumerate(changes)}
    b = {f"t{i}": [c >= 0] for i, c in enumerate(changes)}
    return a, b


@pytest.mark.parametrize(
    ("changes", "p"),
    [
        # all six tasks improve: only "all +" and "all -" reach |sum| 6 -> 2/64
        ([1, 1, 1, 1, 1, 1], 2 / 64),
        # a zero change has no sign to flip: 2 x 2 of 64 assignments reach |sum| 5
        ([1, 1, 1, 1, 1, 0], 4 / 64),
        # |sum| >= 4 with six +-1 terms: all one sign (1) or one flipped (6), each side -> 14/64
        ([1, 1, 1, 1, 1, -1], 14 / 64),
    ],
)
def test_exact_sign_flip_p_by_hand(changes: list[int], p: float) -> None:
    result = paired_comparison(*_runs(changes))
    assert result.p_paired == pytest.approx(p)
    assert result.method == "paired-permutation"


def test_bootstrap_interval_stays_inside_the_range_and_is_reproducible() -> None:
    same = paired_comparison(*_runs([1] * 6))
    assert same.interval == (1.0, 1.0)
    mixed = paired_comparison(*_runs([1, -1, 1, -1, 1, 0, 1]))
    assert mixed.interval is not None
    lo, hi = mixed.interval
    assert -1.0 <= lo <= mixed.mean_change <= hi <= 1.0  # type: ignore[operator]
    assert paired_comparison(*_runs([1, -1, 1, -1, 1, 0, 1])).interval == mixed.interval


def test_two_tasks_are_insufficient_data_not_a_wide_interval() -> None:
    # Finding 4 of the adversarial pass: two tasks gave a "95% interval" of [-260.1, +304.6].
    result = paired_comparison({"x": [True, True], "y": [False]}, {"x": [False, True], "y": [True]})
    assert result.interval is None and result.p_paired is None
    assert result.undefined["interval"] == "insufficient_tasks"


def test_single_shared_task_has_no_interval() -> None:
    result = paired_comparison({"t": [True, False]}, {"t": [True, True]})
    assert result.mean_change == pytest.approx(0.5)
    assert result.interval is None and result.sd_change is None
    assert result.undefined["interval"] == SINGLE_TASK


def test_nothing_shared_is_undefined_not_zero() -> None:
    result = paired_comparison({"a": [True]}, {"b": [False]})
    assert result.mean_change is None and result.rate_a is None and result.z is None
    assert result.undefined["mean_change"] == NO_TRIALS
    assert result.only_in_a == ("a",) and result.only_in_b == ("b",)


def test_tasks_without_trials_are_listed() -> None:
    result = paired_comparison({"t": [], "u": [True, True]}, {"t": [True], "u": [True, False]})
    assert result.without_trials == ("t",)
    assert [t.task for t in result.tasks] == ["u"]


def test_bad_confidence() -> None:
    with pytest.raises(ValueError, match="confidence"):
        paired_comparison({}, {}, confidence=1.0)
