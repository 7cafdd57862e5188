"""``hbeval compare`` that survives noise: Benjamini–Hochberg across fault types, inconclusive
when the paired interval spans zero, effect words only for significant changes, and runs whose
measurements differ only in the seed paired by (task, fault type)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from hbeval.report.compare import CompareRefused, compare_reports
from hbeval.runner.run import run_battery
from hbeval_core.faults import Battery
from hbeval_core.metrics._compare import benjamini_hochberg


def test_benjamini_hochberg_by_hand() -> None:
    # m = 5 defined p-values, sorted 0.005 (1), 0.01 (2), 0.03 (3), 0.04 (4), 0.5 (5):
    # m·p/rank = 0.025, 0.025, 0.05, 0.05, 0.5; the running minimum from the top keeps them.
    q = benjamini_hochberg({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5, "e": 0.005, "f": None})
    assert q["e"] == pytest.approx(0.025) and q["a"] == pytest.approx(0.025)
    assert q["c"] == pytest.approx(0.05) and q["b"] == pytest.approx(0.05)
    assert q["d"] == pytest.approx(0.5) and q["f"] is None
    # A later small p pulls earlier ones down: 0.02 (1), 0.021 (2): 2·0.02/1 = 0.04 > 0.021.
    assert benjamini_hochberg({"x": 0.02, "y": 0.021}) == pytest.approx({"x": 0.021, "y": 0.021})


@cache
def _run(agent: str, seed: int, trials: int = 2) -> Any:
    from hbeval_plain import examples

    battery = Battery.hbeval(seed=seed)
    factory = getattr(examples, agent)
    return run_battery(None, factory, examples.tasks, battery, trials=trials, seed=seed)


def _by_pair(report: Any) -> dict[tuple[str, str], float]:
    outcomes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for t in report.trials:
        if t.outcome in ("pass", "fail", "timeout"):
            outcomes[(t.task_id, t.fault_type)].append(t.outcome == "pass")
    return {k: sum(v) / len(v) for k, v in outcomes.items()}


def _h(p1: float, p2: float) -> float:
    return 2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2))


def test_runs_differing_only_in_the_seed_are_paired_by_task_and_fault_type() -> None:
    a, b = _run("careful", 42), _run("careful", 7)
    assert a.fingerprints.measurement != b.fingerprints.measurement
    result = compare_reports(a, b)
    assert result["pairing"] == "task_fault_type"
    rates_a, rates_b = _by_pair(a), _by_pair(b)
    shared = sorted(set(rates_a) & set(rates_b))
    assert result["overall"]["tasks"] == len(shared)
    by_hand = sum(rates_b[k] - rates_a[k] for k in shared) / len(shared)
    assert result["overall"]["mean_task_change"] == pytest.approx(by_hand)
    assert "paired by (task, fault type)" in result["summary"]
    # The same agent on another seed: nothing is better or worse, and no size gets a word.
    for row in [result["overall"], *result["fault_types"].values()]:
        assert row["conclusion"] in (None, "inconclusive")
        assert row["effect"] is None


def test_other_trials_are_still_refused() -> None:
    with pytest.raises(CompareRefused, match="except runs that differ only in the seed"):
        compare_reports(_run("careful", 42), _run("careful", 7, trials=1))


def _big(agent: str, seed: int) -> Any:
    from hbeval_plain import examples

    battery = Battery.hbeval(n_scenarios=60, seed=seed)
    factory = getattr(examples, agent)
    return run_battery(None, factory, examples.tasks, battery, trials=1, seed=seed)


def test_a_real_drop_is_worse_with_a_word_and_a_narrow_sample_is_inconclusive() -> None:
    # 60 scenarios: enough (task, fault type) pairs for the paired test to decide.
    result = compare_reports(_big("careful", 7), _big("naive", 42))
    overall = result["overall"]
    assert overall["tasks"] >= 6
    assert overall["interval"][1] < 0 and overall["p_paired"] < 0.05
    assert overall["conclusion"] == "worse"
    h = _h(overall["rate_b"], overall["rate_a"])
    assert overall["cohens_h"] == pytest.approx(abs(h)) and abs(h) >= 0.8
    assert overall["effect"] == "large"
    # 18 scenarios, 3 trials: the bootstrap interval excludes zero, but over these 6 pairs the
    # exact sign-flip p is above 0.05, so the change is inconclusive and gets no size word.
    small = compare_reports(_run("careful", 7, 3), _run("naive", 42, 3))["overall"]
    assert small["interval"][1] < 0 and small["p_paired"] >= 0.05
    assert small["conclusion"] == "inconclusive" and small["effect"] is None


def test_fault_type_rows_are_concluded_on_their_benjamini_hochberg_p() -> None:
    from hbeval.report.compare import _adjusted

    def row(p: float | None, ci: tuple[float, float] | None, h: float) -> dict[str, Any]:
        return {
            "p_paired": p,
            "interval": None if ci is None else list(ci),
            "cohens_h": h,
            "undefined": {} if p is not None else {"p_paired": "insufficient_tasks"},
        }

    rows = {
        "tool_failure": row(0.004, (-0.6, -0.2), -0.9),  # q 0.016: worse, large
        "cascade": row(0.03, (0.05, 0.4), 0.3),  # raw 0.03 < 0.05, q 0.0533
        "adversarial": row(0.04, (0.01, 0.3), 0.6),  # raw 0.04 < 0.05, q 0.0533
        "stochastic": row(0.2, (-0.1, 0.3), 0.1),  # spans zero: inconclusive (q 0.2)
        "combined": row(None, None, 0.0),  # too few tasks: undefined, not in the family
    }
    out = _adjusted(rows, 0.05)
    # m = 4 defined: sorted 0.004 (1), 0.03 (2), 0.04 (3), 0.2 (4) → 0.016, 0.06, 0.0533, 0.2,
    # running minimum from the top: 0.016, 0.0533, 0.0533, 0.2.
    assert out["tool_failure"]["p_adjusted"] == pytest.approx(0.016)
    assert out["cascade"]["p_adjusted"] == pytest.approx(4 * 0.04 / 3)
    assert out["adversarial"]["p_adjusted"] == pytest.approx(4 * 0.04 / 3)
    assert out["stochastic"]["p_adjusted"] == pytest.approx(0.2)
    assert (out["tool_failure"]["conclusion"], out["tool_failure"]["effect"]) == ("worse", "large")
    # 0.0533 is not below 0.05 after correction, though 0.03 and 0.04 were before it.
    for name in ("cascade", "adversarial", "stochastic"):
        assert (out[name]["conclusion"], out[name]["effect"]) == ("inconclusive", None)
    assert out["combined"]["p_adjusted"] is None and out["combined"]["conclusion"] is None
    assert out["combined"]["undefined"]["p_adjusted"] == "insufficient_tasks"


def test_compare_on_the_command_line_says_which_pairing(tmp_path: Path) -> None:
    files = []
    for seed in (42, 7):
        path = tmp_path / f"s{seed}.json"
        path.write_text(json.dumps(_run("careful", seed).to_dict()))
        files.append(str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", "compare", *files],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pairing: by (task, fault type)" in proc.stdout
    assert "conclusion" in proc.stdout
