"""Rates over trials: severity-weighted failures, state matches, recovery, cost per success,
latency percentiles and weighted macro averages."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..vocab import (
    NO_DEFINED_VALUE,
    NO_ERROR,
    NO_PRICE_TABLE,
    NO_SUCCESS,
    NO_TRIALS,
    NOT_MEASURED,
    SEVERITY_WEIGHTS,
)
from ._registry import metric
from ._result import MetricValue
from ._validate import check_count, check_real, check_successes

_SEVERITY_MAX = max(SEVERITY_WEIGHTS.values())
"""Top of the seed severity scale (5): a class's weight in rates is its value over this."""


def _severity_weight(severity: str) -> float:
    try:
        return SEVERITY_WEIGHTS[severity] / _SEVERITY_MAX
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown severity class {severity!r}; valid: {', '.join(SEVERITY_WEIGHTS)}"
        ) from None


@metric("severity_weighted_failure_rate")
def severity_weighted_failure_rate(failures: Sequence[str | None], total: int) -> float | None:
    """Failure rate where each failed trial counts by its severity (weight/5), over all trials.

    ``failures`` holds a severity class (vocab.SEVERITY_WEIGHTS) for each trial that failed or
    deviated; None entries stand for clean trials and add nothing. ``total`` is the number of
    trials, failed or not. None when there are no trials.
    """
    size = check_count("total", total)
    weights = [_severity_weight(s) for s in failures if s is not None]
    if len(weights) > size:
        raise ValueError(
            f"total ({size}) is smaller than the number of failed trials ({len(weights)})"
        )
    if size == 0:
        return None
    return math.fsum(weights) / size


def severity_histogram(failures: Sequence[str | None]) -> dict[str, int]:
    """How many failed trials fell in each severity class, every class listed, worst first."""
    counts = dict.fromkeys(sorted(SEVERITY_WEIGHTS, key=lambda s: -SEVERITY_WEIGHTS[s]), 0)
    for severity in failures:
        if severity is None:
            continue
        _severity_weight(severity)  # validates the class name
        counts[severity] += 1
    return counts


@metric("state_match_rate")
def state_match_rate(matches: Sequence[bool]) -> MetricValue:
    """Share of trials whose final state matched the expected state; undefined without trials."""
    if not matches:
        return MetricValue.undefined(NO_TRIALS)
    hits = sum(1 for m in matches if m)
    return MetricValue(hits / len(matches), defined=len(matches), total=len(matches))


@metric("recovery_success")
def recovery_success(errors_seen: int, recovered: int) -> MetricValue:
    """Share of encountered errors the agent recovered from; undefined (no_error) without errors."""
    hits, seen = check_successes(recovered, errors_seen, s_name="recovered", n_name="errors_seen")
    if seen == 0:
        return MetricValue.undefined(NO_ERROR)
    return MetricValue(hits / seen, defined=seen, total=seen)


@metric("per_success")
def per_success(total: float | None, successes: int) -> MetricValue:
    """What one success costs: ``total`` (cost, tokens, tool calls, interventions) / successes.

    ``total`` is summed over ALL trials, failed ones included — failures are part of the price of
    each success. Undefined when the total was not measured (not_measured) or nothing succeeded
    (no_success).
    """
    count = check_count("successes", successes)
    if total is None:
        return MetricValue.undefined(NOT_MEASURED)
    amount = check_real("total", total)
    if amount < 0:
        raise ValueError(f"total must be >= 0, got {total!r}")
    if count == 0:
        return MetricValue.undefined(NO_SUCCESS)
    return MetricValue(amount / count, defined=count, total=count)


PRICE_KEYS = ("input", "output")
"""Keys of a price table: USD per million input and output tokens."""


@metric("cost_per_success")
def cost_per_success(
    tokens_in: int | None,
    tokens_out: int | None,
    price_table: Mapping[str, float] | None,
    successes: int,
) -> MetricValue:
    """Money spent per success, from token counts over all trials and a price table.

    ``price_table`` maps "input" and "output" to USD per million tokens. Undefined without a
    price table (no_price_table), without token counts (not_measured) or without a success
    (no_success).
    """
    count = check_count("successes", successes)
    if price_table is None:
        return MetricValue.undefined(NO_PRICE_TABLE)
    prices = {}
    for key in PRICE_KEYS:
        if key not in price_table:
            raise ValueError(f"price_table lacks {key!r}; expected keys {PRICE_KEYS}")
        prices[key] = check_real(f"price_table[{key!r}]", price_table[key])
        if prices[key] < 0:
            raise ValueError(f"price_table[{key!r}] must be >= 0, got {prices[key]}")
    if tokens_in is None or tokens_out is None:
        return MetricValue.undefined(NOT_MEASURED)
    used_in = check_count("tokens_in", tokens_in)
    used_out = check_count("tokens_out", tokens_out)
    cost = (used_in * prices["input"] + used_out * prices["output"]) / 1_000_000
    return per_success(cost, count)


@metric("latency_percentiles")
def latency_percentiles(
    values: Sequence[float], percentiles: Sequence[float] = (50, 95)
) -> dict[float, float] | None:
    """Latency percentiles by linear interpolation (numpy's default); None without values.

    Keys are the requested percentiles as given, e.g. ``{50: ..., 95: ...}``.
    """
    wanted = [check_real("percentiles", p) for p in percentiles]
    for p in wanted:
        if not 0.0 <= p <= 100.0:
            raise ValueError(f"percentiles must be in [0, 100], got {p}")
    data = sorted(check_real("values", v) for v in values)
    if not data:
        return None
    result: dict[float, float] = {}
    last = len(data) - 1
    for requested, p in zip(percentiles, wanted, strict=True):
        rank = p / 100.0 * last
        low = math.floor(rank)
        high = min(low + 1, last)
        result[requested] = data[low] + (data[high] - data[low]) * (rank - low)
    return result


@metric("macro_average")
def macro_average(
    values_by_category: Mapping[str, float | None],
    weights: Mapping[str, float] | None = None,
) -> MetricValue:
    """Average of per-category values with weights fixed before the run (equal when None).

    Undefined categories (None) are skipped and the result says how many were defined. Weights
    must be non-negative and cover every category (extra keys are allowed: a category may have had
    no trial). Undefined when there are no categories (no_trials) or no defined category carries
    weight (not_measured).
    """
    if weights is not None:
        missing = [c for c in values_by_category if c not in weights]
        if missing:
            raise ValueError(f"weights lack categories: {', '.join(map(repr, missing))}")
        for category, weight in weights.items():
            if check_real(f"weights[{category!r}]", weight) < 0:
                raise ValueError(f"weights[{category!r}] must be >= 0, got {weight!r}")
        if weights and math.fsum(weights.values()) <= 0:
            raise ValueError("weights must not all be zero")
    total = len(values_by_category)
    if total == 0:
        return MetricValue.undefined(NO_TRIALS)
    numerator: list[float] = []
    denominator: list[float] = []
    defined = 0
    for category, value in values_by_category.items():
        if value is None:
            continue
        v = check_real(f"values_by_category[{category!r}]", value)
        w = 1.0 if weights is None else float(weights[category])
        defined += 1
        numerator.append(w * v)
        denominator.append(w)
    weight_sum = math.fsum(denominator)
    if defined == 0 or weight_sum == 0:
        return MetricValue.undefined(NO_DEFINED_VALUE, defined=defined, total=total)
    return MetricValue(math.fsum(numerator) / weight_sum, defined=defined, total=total)
