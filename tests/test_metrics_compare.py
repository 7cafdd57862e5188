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
    half = 4.302653 * sd / math.sqrt(3)  # t(0.975, df 2) from tables
    assert result.interval is not None
    assert result.interval[0] == pytest.approx(mean - half, abs=1e-5)
    assert result.interval[1] == pytest.approx(mean + half, abs=1e-5)
    assert result.only_in_a == ("gone",) and result.only_in_b == ("new",)
    # Pooled over the paired tasks: a 4/8, b 5/8.
    assert (result.rate_a, result.rate_b, result.n_a, result.n_b) == (0.5, 0.625, 8, 8)
    expected = two_proportion_z(0.625, 8, 0.5, 8)
    assert expected is not None
    assert (result.z, result.p_value) == pytest.approx(expected)
    assert result.z is not None and result.z > 0  # b is better
    assert result.cohens_h == pytest.approx(cohens_h(0.625, 0.5))
    assert result.undefined == {}


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
