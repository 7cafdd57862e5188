"""C_out, the flip rate, C_traj_d and C_traj_s on small inputs worked out by hand."""

from __future__ import annotations

import math

import pytest

from hbeval_core.metrics import (
    METRICS,
    flip_rate,
    outcome_consistency,
    run_consistency,
    trajectory_consistency_distribution,
    trajectory_consistency_sequence,
)
from hbeval_core.metrics._consistency import js_divergence, levenshtein, sequence_similarity
from hbeval_core.vocab import NO_REPEATED_SUCCESS, NO_TRIALS, SINGLE_TRIAL


def test_c_out_is_the_population_form_over_tasks_with_two_trials() -> None:
    # a: p = 1/2 -> 0; b: p = 1 -> 1; c: p = 1/3 -> (−1/3)² = 1/9; d has one trial: skipped.
    trials = {
        "a": [True, True, False, False],
        "b": [True, True],
        "c": [True, False, False],
        "d": [True],
    }
    value = outcome_consistency(trials)
    assert value.value == pytest.approx((0 + 1 + 1 / 9) / 3)
    assert (value.defined, value.total) == (3, 4)
    flips = flip_rate(trials)
    assert flips.value == pytest.approx(2 / 3)  # a and c are mixed, b is not


def test_every_task_the_same_way_is_fully_consistent() -> None:
    trials = {"a": [True] * 3, "b": [False] * 3}
    assert outcome_consistency(trials).value == 1.0
    assert flip_rate(trials).value == 0.0


def test_one_trial_per_task_is_undefined_never_one() -> None:
    single = outcome_consistency({"a": [True], "b": [False]})
    assert single.value is None and single.reason == SINGLE_TRIAL
    assert flip_rate({"a": [True]}).reason == SINGLE_TRIAL
    assert outcome_consistency({}).reason == NO_TRIALS


def test_a_non_boolean_outcome_is_refused() -> None:
    with pytest.raises(ValueError, match="'a'"):
        outcome_consistency({"a": [True, "pass"]})


def test_js_divergence_base_two() -> None:
    assert js_divergence(["x", "y"], ["y", "x"]) == 0.0
    assert js_divergence(["x"], ["y"]) == pytest.approx(1.0)
    # P = (1/2, 1/2), Q = (1, 0), M = (3/4, 1/4).
    kl_p = 0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25)
    kl_q = 1.0 * math.log2(1 / 0.75)
    assert js_divergence(["x", "y"], ["x"]) == pytest.approx((kl_p + kl_q) / 2)
    with pytest.raises(ValueError):
        js_divergence([], ["x"])


def test_levenshtein_and_similarity() -> None:
    assert levenshtein(["a", "b", "c"], ["a", "c"]) == 1
    assert levenshtein([], ["a", "b"]) == 2
    assert levenshtein(["a", "b"], ["b", "a"]) == 2
    assert sequence_similarity(["a", "b", "c"], ["a", "c"]) == pytest.approx(2 / 3)
    assert sequence_similarity([], []) == 1.0
    assert sequence_similarity([], ["a"]) == 0.0


def test_trajectory_figures_over_successful_trials() -> None:
    successes = {
        # three successes: pairs (ab, ab), (ab, a), (ab, a)
        "t1": [["a", "b"], ["a", "b"], ["a"]],
        # one success with no tool call and one with: no distribution pair for C_traj_d
        "t2": [[], ["a"]],
        "t3": [["a"]],  # one success: skipped
    }
    jsd_ab_a = js_divergence(["a", "b"], ["a"])
    d = trajectory_consistency_distribution(successes)
    assert d.value == pytest.approx(1 - (0 + 2 * jsd_ab_a) / 3)
    assert (d.defined, d.total) == (1, 3)
    s = trajectory_consistency_sequence(successes)
    t1 = (1 + 0.5 + 0.5) / 3  # ab/ab = 1, ab/a = 1 − 1/2
    t2 = 0.0  # [] against [a]: 1 − 1/1
    assert s.value == pytest.approx((t1 + t2) / 2)
    assert s.defined == 2


def test_no_task_with_two_successes_is_undefined() -> None:
    value = trajectory_consistency_sequence({"a": [["x"]], "b": []})
    assert value.value is None and value.reason == NO_REPEATED_SUCCESS
    assert trajectory_consistency_distribution({"a": [[], []]}).reason == NO_REPEATED_SUCCESS


def test_run_consistency_reads_passed_and_tool_names() -> None:
    trials = {
        "a": [(True, ["x", "y"]), (True, ["x", "y"]), (False, ["x"])],
        "b": [(False, []), (False, [])],
    }
    figures = run_consistency(trials)
    assert figures.c_out.value == pytest.approx(((2 * 2 - 3) / 3) ** 2 / 2 + 0.5)
    assert figures.flip_rate.value == pytest.approx(0.5)
    assert figures.c_traj_d.value == 1.0 and figures.c_traj_s.value == 1.0
    assert (figures.tasks, figures.tasks_repeated, figures.tasks_with_two_successes) == (2, 2, 1)


def test_the_figures_are_registered() -> None:
    for name in (
        "outcome_consistency",
        "flip_rate",
        "trajectory_consistency_distribution",
        "trajectory_consistency_sequence",
    ):
        assert METRICS[name].summary
