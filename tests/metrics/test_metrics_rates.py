"""Severity, state matches, recovery, per-success costs, latency percentiles, macro averages."""

from __future__ import annotations

import pytest

from hbeval_core.metrics import (
    cost_per_success,
    latency_percentiles,
    macro_average,
    per_success,
    recovery_success,
    severity_histogram,
    severity_weighted_failure_rate,
    state_match_rate,
)
from hbeval_core.vocab import (
    NO_DEFINED_VALUE,
    NO_ERROR,
    NO_PRICE_TABLE,
    NO_SUCCESS,
    NO_TRIALS,
    NOT_MEASURED,
    SEVERITY_WEIGHTS,
)


def test_severity_weighted_rate() -> None:
    failures = ["privacy_or_security_breach", None, "minor_wrong_answer", None, "cosmetic"]
    # (5 + 2 + 1) / 5 weight units over 10 trials.
    assert severity_weighted_failure_rate(failures, 10) == pytest.approx(8 / 5 / 10)
    assert severity_weighted_failure_rate([None, None], 2) == 0.0  # measured: nothing failed
    assert severity_weighted_failure_rate([], 0) is None


def test_every_class_weight_is_value_over_five() -> None:
    for name, weight in SEVERITY_WEIGHTS.items():
        assert severity_weighted_failure_rate([name], 1) == pytest.approx(weight / 5)


def test_severity_unknown_class_names_it_and_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="catastrophic") as info:
        severity_weighted_failure_rate(["catastrophic"], 3)
    assert "workflow_blocked" in str(info.value)
    with pytest.raises(ValueError, match="catastrophic"):
        severity_histogram(["catastrophic"])


def test_severity_more_failures_than_trials_is_an_error() -> None:
    with pytest.raises(ValueError, match="total"):
        severity_weighted_failure_rate(["cosmetic", "cosmetic"], 1)


def test_severity_histogram_lists_every_class_worst_first() -> None:
    histogram = severity_histogram(["cosmetic", None, "cosmetic", "workflow_blocked"])
    assert list(histogram) == sorted(SEVERITY_WEIGHTS, key=lambda s: -SEVERITY_WEIGHTS[s])
    assert histogram["cosmetic"] == 2 and histogram["workflow_blocked"] == 1
    assert histogram["privacy_or_security_breach"] == 0


def test_state_match_rate() -> None:
    result = state_match_rate([True, False, True, True])
    assert result.value == pytest.approx(0.75) and result.defined == 4
    empty = state_match_rate([])
    assert empty.value is None and empty.reason == NO_TRIALS


def test_recovery_success() -> None:
    assert recovery_success(4, 3).value == pytest.approx(0.75)
    none_seen = recovery_success(0, 0)
    assert none_seen.value is None and none_seen.reason == NO_ERROR
    with pytest.raises(ValueError, match="recovered"):
        recovery_success(2, 3)


def test_per_success_counts_failed_trials_in_the_numerator() -> None:
    # 10 trials used 50 tool calls in total, 4 succeeded: 12.5 calls per success.
    assert per_success(50, 4).value == pytest.approx(12.5)
    assert per_success(0.0, 3).value == 0.0
    no_success = per_success(50, 0)
    assert no_success.value is None and no_success.reason == NO_SUCCESS
    unmeasured = per_success(None, 4)
    assert unmeasured.value is None and unmeasured.reason == NOT_MEASURED
    with pytest.raises(ValueError, match="total"):
        per_success(-1.0, 2)
    with pytest.raises(ValueError, match="successes"):
        per_success(1.0, -2)


def test_cost_per_success() -> None:
    prices = {"input": 3.0, "output": 15.0}  # USD per million tokens
    result = cost_per_success(1_000_000, 200_000, prices, 2)
    assert result.value == pytest.approx((3.0 + 3.0) / 2)
    assert cost_per_success(10, 10, None, 2).reason == NO_PRICE_TABLE
    assert cost_per_success(None, 10, prices, 2).reason == NOT_MEASURED
    assert cost_per_success(10, 10, prices, 0).reason == NO_SUCCESS
    with pytest.raises(ValueError, match="output"):
        cost_per_success(10, 10, {"input": 1.0}, 1)
    with pytest.raises(ValueError, match="input"):
        cost_per_success(10, 10, {"input": -1.0, "output": 1.0}, 1)


def test_latency_percentiles_linear_interpolation() -> None:
    values = [4.0, 1.0, 3.0, 2.0, 10.0]
    result = latency_percentiles(values, (50, 95, 0, 100, 25))
    assert result is not None
    # Sorted 1, 2, 3, 4, 10; rank = p/100·4.
    assert result[50] == 3.0
    assert result[95] == pytest.approx(4.0 + 0.8 * 6.0)
    assert (result[0], result[100], result[25]) == (1.0, 10.0, 2.0)
    assert latency_percentiles([7.0]) == {50: 7.0, 95: 7.0}
    assert latency_percentiles([]) is None
    with pytest.raises(ValueError, match="percentiles"):
        latency_percentiles([1.0], (101,))


def test_macro_average_equal_and_fixed_weights() -> None:
    values = {"a": 0.9, "b": 0.5, "c": None}
    equal = macro_average(values)
    assert equal.value == pytest.approx(0.7)
    assert (equal.defined, equal.total) == (2, 3)
    weighted = macro_average(values, {"a": 3.0, "b": 1.0, "c": 5.0, "unused": 1.0})
    assert weighted.value == pytest.approx((0.9 * 3 + 0.5) / 4)


def test_macro_average_undefined_cases() -> None:
    assert macro_average({}).reason == NO_TRIALS
    all_undefined = macro_average({"a": None, "b": None})
    assert all_undefined.value is None and all_undefined.reason == NO_DEFINED_VALUE
    assert (all_undefined.defined, all_undefined.total) == (0, 2)
    zero_weight = macro_average({"a": 0.4, "b": None}, {"a": 0.0, "b": 1.0})
    assert zero_weight.value is None


def test_macro_average_weight_validation() -> None:
    with pytest.raises(ValueError, match="'b'"):
        macro_average({"a": 0.5, "b": 0.5}, {"a": 1.0})
    with pytest.raises(ValueError, match="weights"):
        macro_average({"a": 0.5}, {"a": -1.0})
    with pytest.raises(ValueError, match="zero"):
        macro_average({"a": 0.5}, {"a": 0.0})
