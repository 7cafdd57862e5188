"""Trajectory match and rule violations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from hbeval_core.contract import ExpectedCall
from hbeval_core.metrics import (
    RULE_ARGUMENT_SCHEMA,
    RULE_CALL_BUDGET,
    RULE_FORBIDDEN_TOOL,
    RULE_ORDER,
    RULE_REQUIRED_TOOL,
    RULES,
    Call,
    rule_violations,
    trajectory_match,
)
from hbeval_core.vocab import NO_EXPECTED_CALLS, NO_STEPS


@dataclass(frozen=True)
class Called:
    tool: str
    args: dict[str, Any]


def test_exact_trajectory() -> None:
    expected = [ExpectedCall("search", {"q": "x"}), ExpectedCall("book", {"id": 1})]
    actual = [Called("search", {"q": "x"}), Called("book", {"id": 1})]
    result = trajectory_match(expected, actual)
    assert (result.exact, result.in_order, result.any_order) == (True, True, True)
    assert (result.same_calls, result.no_extras) == (True, True)
    assert (result.precision, result.recall) == (1.0, 1.0)


def test_reordered_and_extra_calls() -> None:
    expected = [("a", None), ("b", None)]
    swapped = trajectory_match(expected, [("b", {}), ("a", {})])
    assert not swapped.exact and not swapped.in_order
    assert swapped.any_order and swapped.same_calls and swapped.no_extras
    extra = trajectory_match(expected, [("a", {}), ("x", {}), ("b", {})])
    assert extra.in_order and extra.any_order
    assert not extra.same_calls and not extra.no_extras
    assert extra.precision == pytest.approx(2 / 3) and extra.recall == 1.0


def test_missing_call() -> None:
    result = trajectory_match(["a", "b", "c"], ["a", "c"])
    assert not result.in_order and not result.any_order and result.no_extras
    assert result.recall == pytest.approx(2 / 3) and result.precision == 1.0


def test_multiset_counts_repeats() -> None:
    result = trajectory_match(["a", "a"], ["a"])
    assert not result.any_order and result.no_extras and result.matched == 1


@pytest.mark.parametrize(
    ("mode", "matches"),
    [("exact", False), ("subset", True), ("ignore", True)],
)
def test_args_modes(mode: str, matches: bool) -> None:
    result = trajectory_match([("search", {"q": "x"})], [("search", {"q": "x", "limit": 5})], mode)
    assert result.exact is matches
    wrong = trajectory_match([("search", {"q": "x"})], [("search", {"q": "y"})], mode)
    assert wrong.exact is (mode == "ignore")


def test_expected_args_none_matches_any_arguments() -> None:
    result = trajectory_match([ExpectedCall("search")], [("search", {"q": "anything"})])
    assert result.exact


def test_matching_finds_the_best_pairing_not_the_first() -> None:
    # Greedy pairing would give the wildcard the only call the specific one can take.
    expected = [("s", None), ("s", {"q": 1})]
    actual = [("s", {"q": 1}), ("s", {"q": 2})]
    result = trajectory_match(expected, actual)
    assert result.same_calls and result.matched == 2


def test_empty_sides_give_undefined_ratios() -> None:
    no_actual = trajectory_match(["a"], [])
    assert no_actual.precision is None and no_actual.undefined["precision"] == NO_STEPS
    assert no_actual.recall == 0.0
    no_expected = trajectory_match([], ["a"])
    assert no_expected.recall is None and no_expected.undefined["recall"] == NO_EXPECTED_CALLS
    assert no_expected.in_order and not no_expected.no_extras
    both = trajectory_match([], [])
    assert both.exact and both.same_calls and both.precision is None and both.recall is None


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="args_mode"):
        trajectory_match([], [], "fuzzy")
    with pytest.raises(ValueError, match=r"actual\[0\]"):
        trajectory_match([], [42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="args"):
        trajectory_match([("a", "not a mapping")], [])  # type: ignore[list-item]


def test_rule_violations_all_rules() -> None:
    calls: list[Call] = [("b", {}), ("a", {"x": "1"}), ("rm", {}), ("a", {"x": 2})]
    result = rule_violations(
        calls,
        forbidden=["rm"],
        required=["c", "a"],
        order=[("a", "b"), ("b", "rm")],
        call_budget=3,
        arg_schemas={"a": {"x": int}},
    )
    assert dict(result.counts) == {
        RULE_FORBIDDEN_TOOL: 1,
        RULE_REQUIRED_TOOL: 1,
        RULE_ORDER: 1,
        RULE_CALL_BUDGET: 1,
        RULE_ARGUMENT_SCHEMA: 1,
    }
    assert result.total == 5 and result.violated
    by_rule = {v.rule: v for v in result.details}
    assert by_rule[RULE_ORDER].tool == "b" and by_rule[RULE_ORDER].index == 0
    assert by_rule[RULE_REQUIRED_TOOL].tool == "c" and by_rule[RULE_REQUIRED_TOOL].index is None
    assert by_rule[RULE_ARGUMENT_SCHEMA].index == 1
    assert by_rule[RULE_CALL_BUDGET].index == 3


def test_clean_trajectory_lists_every_rule_at_zero() -> None:
    result = rule_violations([("a", {"x": 1})], required=["a"], arg_schemas={"a": {"x": int}})
    assert tuple(result.counts) == RULES
    assert result.total == 0 and not result.violated and result.details == ()


def test_argument_schemas() -> None:
    schemas = {
        "pay": {"amount": float, "to": str},
        "flag": {"on": bool},
        "check": lambda args: args.get("n", 0) > 0,
    }
    calls = [
        ("pay", {"amount": 10, "to": "x"}),  # int passes for float
        ("pay", {"amount": True, "to": "x"}),  # bool does not
        ("pay", {"amount": 1.5}),  # missing "to"
        ("flag", {"on": False}),
        ("check", {"n": 0}),
        ("check", {"n": 3}),
    ]
    result = rule_violations(calls, arg_schemas=schemas)  # type: ignore[arg-type]
    assert [v.index for v in result.details] == [1, 2, 4]
    assert "'to'" in result.details[1].detail


def test_call_budget_and_order_inputs() -> None:
    assert rule_violations(["a", "b"], call_budget=2).total == 0
    assert rule_violations(["a", "b", "c"], call_budget=0).counts[RULE_CALL_BUDGET] == 3
    with pytest.raises(ValueError, match="call_budget"):
        rule_violations(["a"], call_budget=-1)
    with pytest.raises(ValueError, match="order"):
        rule_violations(["a"], order=[("a",)])  # type: ignore[list-item]


def test_calls_as_stored_json_mappings() -> None:
    stored: list[Call] = [{"tool": "search", "args": {"q": "x"}}, {"name": "book", "args": None}]
    result = trajectory_match([("search", {"q": "x"}), "book"], stored)
    assert result.exact
