"""``benchmarks/run_all.py`` prints its one table; the table's intervals and verdicts.

The benchmarks are not timing tests: the smoke mode runs two real benchmarks at tiny sizes to
check the table is produced with its columns and rows; the verdict logic and the bootstrap are
checked on values set by hand.
"""

from __future__ import annotations

import inspect
import json
import statistics
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import _table  # noqa: E402
import run_all  # noqa: E402


def test_smoke_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rows.json"
    assert run_all.main(["--smoke", "--only", "score,runner", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    header = "| " + " | ".join(_table.HEADER) + " |"
    assert header in printed
    lines = printed.splitlines()
    start = lines.index(header)
    body = [line for line in lines[start + 2 :] if line.startswith("| ")]
    rows = json.loads(out.read_text())
    assert len(body) == len(rows) >= 4
    figures = [r["figure"] for r in rows]
    assert "hbeval score" in figures
    assert "runner bookkeeping per trial" in figures
    for line, row in zip(body, rows, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(_table.HEADER)
        assert cells[0] == row["figure"]
        assert cells[-1] == row["met"] in ("yes", "no", "unresolved", "-")
        assert row["low"] <= row["value"] <= row["high"]
    # The goal on the score rows is against the fastest anchor only.
    score_goals = [r for r in rows if r["figure"] == "hbeval score" and r["goal"] is not None]
    assert len(score_goals) == 1 and score_goals[0]["anchor"].endswith("(fastest)")


def test_every_mode_calls_each_headline_with_arguments_it_takes() -> None:
    sys.path.insert(0, str(BENCH))
    import bench_edm
    import bench_runner
    import bench_score
    import bench_store_ingest

    headlines = {
        "score": bench_score.headline,
        "ingest": bench_store_ingest.headline,
        "runner": bench_runner.headline,
        "runner x2": bench_runner.headline,
        "edm": bench_edm.headline,
    }
    names = set(run_all.MODES["default"])
    for mode, table in run_all.MODES.items():
        assert {"langgraph", "score", "ingest", "runner", "edm"} <= set(table), mode
        assert set(table) >= names, mode
        for bench, kwargs in table.items():
            if bench in headlines:
                inspect.signature(headlines[bench]).bind(**kwargs)


def _row(low: float, high: float, goal: float, better: str) -> _table.Row:
    mid = (low + high) / 2
    return _table.Row("f", "a", "i", mid, low, high, "x", goal, better=better)


def test_met_needs_the_whole_interval_on_the_goals_side() -> None:
    assert _row(1.01, 1.04, 1.05, "le").met == "yes"
    assert _row(1.04, 1.06, 1.05, "le").met == "unresolved"
    assert _row(1.06, 1.09, 1.05, "le").met == "no"
    assert _row(20.5, 30.0, 20.0, "ge").met == "yes"
    assert _row(15.0, 25.0, 20.0, "ge").met == "unresolved"
    assert _row(7.0, 16.0, 20.0, "ge").met == "no"
    context = _table.Row("f", "a", "i", 1.0, 0.9, 1.1, "x", None)
    assert context.met == "-"
    assert context.cells()[4] == "(context)"


def test_bootstrap_keeps_pairs_and_is_repeatable() -> None:
    # Every round's ratio is exactly 2, however the anchor drifts: every resample gives 2.
    anchor = [1.0, 3.0, 2.0, 7.0, 5.0]
    ours = [2 * a for a in anchor]
    assert _table.bootstrap([ours, anchor], _table.median_ratio) == (2.0, 2.0, 2.0)
    xs = [float(i) for i in range(50)]
    first = _table.bootstrap([xs], statistics.median)
    assert first == _table.bootstrap([xs], statistics.median)
    point, low, high = first
    assert point == 24.5
    assert low < point < high
    assert 0 < low and high < 49


def test_percentile_is_nearest_rank() -> None:
    xs = [float(i) for i in range(1, 101)]  # 1..100
    assert _table.percentile(xs, 0.99) == 99.0
    assert _table.percentile(xs, 0.5) in (50.0, 51.0)
    assert _table.percentile([3.0], 0.99) == 3.0
