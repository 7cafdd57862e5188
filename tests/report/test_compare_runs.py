"""Comparing two runs: only under one measurement fingerprint, paired per task, with the change in
pass rate, its interval and test, Cohen's h and per-fault-type changes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hbeval.report.compare import CompareRefused, compare_reports, outcomes_by_task
from hbeval.scoring import Report
from hbeval.scoring._report_model import validate_report
from hbeval_core.metrics import cohens_h, paired_comparison
from tests.report.test_report_fixtures import demo, hb, rebound, write_json


def _with_measurement(report: Report, fingerprint: str | None) -> Report:
    """``report`` with its measurement fingerprint replaced (a hand-edited report)."""
    edited = report.to_dict()
    edited["fingerprints"]["measurement"] = fingerprint
    return validate_report(rebound(edited))


def test_careful_vs_naive_paired_per_task() -> None:
    run = demo()
    result = compare_reports(run.careful, run.naive, labels=("careful", "naive"))
    assert result["format"] == "hbeval-compare/1"
    assert result["measurement_fingerprint"] == run.careful.fingerprints.measurement
    overall = result["overall"]
    assert overall["rate_a"] == pytest.approx(52 / 54)
    assert overall["rate_b"] == pytest.approx(25 / 54)
    assert overall["change"] == pytest.approx(25 / 54 - 52 / 54)
    # the same numbers as the metric itself, task by task
    expected = paired_comparison(outcomes_by_task(run.careful), outcomes_by_task(run.naive))
    assert overall["mean_task_change"] == pytest.approx(expected.mean_change)
    # five shared tasks: the exact paired test cannot reach p < 0.05, so no interval, and the
    # summary says so rather than quoting one
    assert expected.interval is None and overall["interval"] is None
    assert overall["undefined"]["interval"] == "insufficient_tasks"
    assert (
        "insufficient data: 5 shared task(s), a paired test needs at least 6" in result["summary"]
    )
    assert overall["cohens_h"] == pytest.approx(cohens_h(25 / 54, 52 / 54))
    assert overall["z"] < 0 and overall["p"] < 0.001
    assert len(result["tasks"]) == overall["tasks"] == 5
    assert sum(t["n_a"] for t in result["tasks"]) == 54
    assert result["summary"].startswith("naive vs careful: pass rate 96.3% -> 46.3% (-50.0 points)")
    # No paired interval, so no conclusion: the size is a number, never a word.
    assert "Cohen's h 1.26" in result["summary"] and "(large)" not in result["summary"]
    assert overall["conclusion"] is None and overall["effect"] is None


def test_per_fault_type_and_metric_changes() -> None:
    run = demo()
    result = compare_reports(run.careful, run.naive)
    adversarial = result["fault_types"]["adversarial"]
    assert (adversarial["rate_a"], adversarial["rate_b"], adversarial["change"]) == (1.0, 0.0, -1.0)
    assert adversarial["cohens_h"] == pytest.approx(math.pi)
    one_task = result["fault_types"]["context_corruption"]
    assert one_task["interval"] is None
    assert one_task["undefined"] == {
        "sd_task_change": "single_task",
        "interval": "single_task",
        "p_paired": "single_task",
        "p_adjusted": "single_task",
    }
    assert one_task["conclusion"] is None and one_task["effect"] is None
    assert set(result["fault_types"]) == set(run.careful.breakdowns.fault_type)
    assert set(result["domains"]) == set(run.careful.breakdowns.domain)
    csi = result["metrics"]["csi"]
    assert csi == {
        "a": None,
        "b": None,
        "change": None,
        "undefined": {"a": "single_run", "b": "single_run", "change": "single_run"},
    }
    frr = result["metrics"]["frr"]
    naive_frr, careful_frr = run.naive.metrics.frr, run.careful.metrics.frr
    assert naive_frr is not None and careful_frr is not None
    assert frr["change"] == pytest.approx(naive_frr - careful_frr)


def test_different_measurement_fingerprints_are_refused() -> None:
    run = demo()
    other = _with_measurement(run.naive, "ffffffffffffffff")
    with pytest.raises(CompareRefused, match="never compared"):
        compare_reports(run.careful, other)
    other = _with_measurement(run.naive, None)
    with pytest.raises(CompareRefused, match="no measurement fingerprint"):
        compare_reports(run.careful, other)


def test_cli(tmp_path: Path) -> None:
    run = demo()
    both = write_json(tmp_path / "both.json", run.reports)
    other = _with_measurement(run.naive, "ffffffffffffffff")
    other_file = write_json(tmp_path / "other.json", other)

    text = hb("compare", f"{both}#careful", f"{both}#naive")
    assert text.exit_code == 0, text.stderr
    assert "naive vs careful: pass rate 96.3% -> 46.3%" in text.stdout
    assert "undefined (single_run)" in text.stdout  # CSI, never 0

    as_json = hb("compare", f"{both}#careful", f"{both}#naive", "--json")
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout)["overall"]["rate_b"] == pytest.approx(25 / 54)

    by_run_id = hb(
        "compare", str(run.careful.run_id), str(run.naive.run_id), "--db", str(run.db), "--json"
    )
    assert by_run_id.exit_code == 0, by_run_id.stderr
    assert json.loads(by_run_id.stdout)["b"]["run_id"] == run.naive.run_id

    refused = hb("compare", f"{both}#careful", str(other_file))
    assert refused.exit_code == 2
    assert "measurement fingerprints differ" in refused.stderr
    assert hb("compare", str(both), f"{both}#naive").exit_code == 2  # ambiguous file
    assert hb("compare", "no-such-run", "x", "--db", str(run.db)).exit_code == 2
