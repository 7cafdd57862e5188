"""CSI across runs (spec §7.2): reference vectors, both slope forms, undefined cases, bands."""

from __future__ import annotations

import statistics

import pytest

from hbeval_core.metrics import SLOPE_SIGN, csi, csi_status
from hbeval_core.vocab import INSUFFICIENT_RUNS, SINGLE_RUN

DOCS_PEI = [0.92, 0.45, 0.88, 0.41, 0.85]
DOCS_IRS = [0.88, 0.31, 0.90, 0.28, 0.91]
DOCS_OUTCOMES = [1, 1, 1, 0, 0]


def test_docs_example_vector() -> None:
    result = csi(DOCS_PEI, DOCS_IRS, DOCS_OUTCOMES)
    assert result.sigma_pei == pytest.approx(0.2499, abs=5e-5)
    assert result.sigma_irs == pytest.approx(0.3299, abs=5e-5)
    # Independent: the standard library's sample standard deviation.
    assert result.sigma_pei == pytest.approx(statistics.stdev(DOCS_PEI), rel=1e-12)
    assert result.sigma_irs == pytest.approx(statistics.stdev(DOCS_IRS), rel=1e-12)
    # Failures 0,0,0,1,1 against 0..4: slope 3/10, ρ = 0.3 / 0.5.
    assert result.beta == pytest.approx(0.3)
    assert result.rho == pytest.approx(0.6)
    assert result.value == pytest.approx(0.0, abs=5e-5)
    assert result.valid and result.reason is None
    assert (result.runs_used, result.pei_defined, result.irs_defined) == (5, 5, 5)


def test_one_late_failure_in_a_hundred_stable_runs() -> None:
    outcomes = [1] * 99 + [0]
    result = csi([0.9] * 100, [0.8] * 100, outcomes)
    # Last 20 outcomes: one failure at index 19; slope = 9.5 / 665, ρ = slope / 0.5.
    assert result.beta == pytest.approx(9.5 / 665)
    assert result.rho == pytest.approx(0.0286, abs=5e-5)
    assert result.value == pytest.approx(0.9714, abs=5e-5)
    assert result.value == pytest.approx(1 - 9.5 / 665 / 0.5, rel=1e-12)  # not rounded
    assert result.outcomes_used == 20
    sign = csi([0.9] * 100, [0.8] * 100, outcomes, slope=SLOPE_SIGN)
    assert sign.rho == 1.0
    assert sign.value == 0.0


def test_improving_trend_costs_nothing() -> None:
    result = csi([0.9] * 10, [0.8] * 10, [0] + [1] * 9)
    assert result.rho == 0.0
    assert result.value == pytest.approx(1.0)


def test_single_run_is_undefined() -> None:
    result = csi([0.9], [0.8], [1])
    assert result.value is None
    assert result.reason == SINGLE_RUN
    assert not result.valid
    assert result.status is None


def test_no_runs_is_undefined() -> None:
    result = csi([], [], [])
    assert result.value is None and result.reason == INSUFFICIENT_RUNS


def test_none_entries_are_skipped_and_counted() -> None:
    result = csi([0.9, None, 0.9, 0.9], [None, None, 0.8, 0.8], [1, 1, 1, 1])
    assert (result.runs_used, result.pei_defined, result.irs_defined) == (4, 3, 2)
    assert result.value == pytest.approx(1.0)


def test_too_few_defined_values_is_undefined_with_parts() -> None:
    result = csi([0.9, 0.7, 0.8], [None, None, 0.8], [1, 1, 1])
    assert result.value is None
    assert result.reason == INSUFFICIENT_RUNS
    assert result.sigma_pei is not None  # what could be computed is still reported
    assert result.sigma_irs is None and result.irs_defined == 1


def test_window_keeps_only_recent_runs() -> None:
    # Wild early runs fall outside a window of 3.
    result = csi([0.0, 1.0, 0.9, 0.9, 0.9], [1.0, 0.0, 0.8, 0.8, 0.8], [1] * 5, window_runs=3)
    assert result.runs_used == 3
    assert result.sigma_pei == 0.0 and result.value == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"c": 0.0}, "c"),
        ({"slope": "steep"}, "slope"),
        ({"window_runs": 1}, "window_runs"),
        ({"window_outcomes": 0}, "window_outcomes"),
    ],
)
def test_bad_parameters_are_errors(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        csi(DOCS_PEI, DOCS_IRS, DOCS_OUTCOMES, **kwargs)  # type: ignore[arg-type]


def test_mismatched_lengths_and_bad_outcomes_are_errors() -> None:
    with pytest.raises(ValueError, match="irs"):
        csi([0.9, 0.9], [0.8], [1, 1])
    with pytest.raises(ValueError, match="outcomes"):
        csi([0.9, 0.9], [0.8, 0.8], [1, 2])


@pytest.mark.parametrize(
    ("value", "band"),
    [
        (0.95, "STABLE"),
        (0.80, "STABLE"),
        (0.79, "ACCEPTABLE"),
        (0.70, "ACCEPTABLE"),
        (0.50, "MARGINAL"),
        (0.49, "UNSTABLE"),
        (0.0, "UNSTABLE"),
        (None, None),
    ],
)
def test_status_bands(value: float | None, band: str | None) -> None:
    assert csi_status(value) == band
