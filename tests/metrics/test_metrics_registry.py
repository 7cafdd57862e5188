"""The metric registry, the public surface and import cost of hbeval_core.metrics."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hbeval_core.metrics as metrics
from hbeval_core.metrics import METRICS, MetricValue, get_metric, metric
from hbeval_core.vocab import CSI, METRIC_VERSIONS, NO_TRIALS, UNDEFINED_REASONS

REGISTERED = {
    "pass_at_k",
    "pass_hat_k",
    "wilson_interval",
    "two_proportion_z",
    "cohens_h",
    "beta_tail_probability",
    "reliability_gap",
    "severity_weighted_failure_rate",
    "state_match_rate",
    "recovery_success",
    "csi",
    "per_success",
    "cost_per_success",
    "latency_percentiles",
    "macro_average",
    "trajectory_match",
    "rule_violations",
    "paired_comparison",
    "pei_paper",
    "frr_paper",
    "irs_paper_v1",
    "uas",
}


def test_every_public_metric_is_registered_with_a_summary() -> None:
    assert set(METRICS) >= REGISTERED
    for name in REGISTERED:
        spec = METRICS[name]
        assert spec.func is getattr(metrics, name)
        assert spec.summary and not spec.summary.startswith(" ")


def test_record_says_which_metric_ran_with_which_parameters() -> None:
    spec = get_metric("pass_hat_k")
    assert spec.record(k=3) == {"metric": "pass_hat_k", "version": "1", "params": {"k": 3}}
    assert get_metric("csi").version == METRIC_VERSIONS[CSI]


def test_unknown_metric_lists_known_ones() -> None:
    with pytest.raises(KeyError, match="pass_at_k"):
        get_metric("nope")


def test_a_name_cannot_be_taken_twice() -> None:
    with pytest.raises(ValueError, match="pass_at_k"):

        @metric("pass_at_k")
        def impostor() -> None:
            """Not the real pass@k."""


def test_all_is_explicit_and_importable() -> None:
    assert len(metrics.__all__) == len(set(metrics.__all__))
    for name in metrics.__all__:
        assert hasattr(metrics, name), name


def test_metric_value_requires_a_reason_exactly_when_undefined() -> None:
    assert MetricValue.undefined(NO_TRIALS).reason in UNDEFINED_REASONS
    with pytest.raises(ValueError):
        MetricValue(None)
    with pytest.raises(ValueError):
        MetricValue(0.5, NO_TRIALS)


def test_importing_metrics_pulls_in_no_heavy_module() -> None:
    code = (
        "import sys, hbeval_core.metrics\n"
        "heavy = [m for m in ('numpy', 'statistics', 'scipy', 'fractions') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
