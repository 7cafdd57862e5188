"""An agent that raises on every trial: the report and the terminal say what it raised.

A foreign agent that hbeval cannot run (or that is broken) must not look like an agent that
merely answered wrong: each trial carries its final error (bounded, control characters removed)
and the battery's summary counts them, also after a resumed run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hbeval.report.terminal import verdict_lines
from hbeval.runner.run import ProgressUpdate, run_battery
from hbeval.scoring import report_error
from hbeval.scoring._report_model import validate_report
from hbeval.scoring._trial_model import ERROR_CHARS
from hbeval.store import open_store
from hbeval_core.contract import Task
from hbeval_core.faults import Battery

TASKS = [Task(id="t1", question="What is 2 + 3?", required=("5",))]


def broken(question: str) -> str:
    raise TypeError('No synchronous function provided to "work".\nUse the async API.')


def test_each_trial_carries_its_error_and_the_summary_counts_them() -> None:
    result = run_battery(None, broken, TASKS, Battery.hbeval(n_scenarios=6, seed=42), trials=1)
    report = result.to_dict()
    validate_report(report)
    errors = [t.get("error") for t in report["trials"]]
    assert len(errors) == 6
    assert all(e and e.startswith("TypeError: No synchronous function") for e in errors), errors
    lines = verdict_lines(result)
    assert "  6 of 6 trials ended with an error" in "\n".join(lines)
    assert '    6 x TypeError: No synchronous function provided to "work".' in lines


def test_a_passing_agent_has_no_error_key_and_no_error_lines() -> None:
    result = run_battery(
        None, lambda q: "5", TASKS, Battery.hbeval(n_scenarios=6, seed=42), trials=1
    )
    report = result.to_dict()
    assert all("error" not in t for t in report["trials"])
    assert not any("ended with an error" in line for line in verdict_lines(result))


def test_a_resumed_run_reports_the_same_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")

    def stop_after_two(update: ProgressUpdate) -> None:
        if update.done == 2:
            raise KeyboardInterrupt

    battery = Battery.hbeval(n_scenarios=6, seed=42)
    with open_store(db) as store, pytest.raises(KeyboardInterrupt):
        run_battery(
            None, broken, TASKS, battery, trials=1, store=store, run_id="r", progress=stop_after_two
        )
    with open_store(db) as store:
        report = run_battery(
            None, broken, TASKS, battery, trials=1, store=store, run_id="r"
        ).to_dict()
    assert [bool(t.get("error")) for t in report["trials"]] == [True] * 6


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain", "plain"),
        ("a\x00b\x1bc\nd\te", "a b c\nd\te"),
        ("x" * (ERROR_CHARS + 50), "x" * (ERROR_CHARS - 1) + "…"),
    ],
)
def test_report_error_removes_control_characters_and_bounds_the_text(
    raw: str, expected: str
) -> None:
    assert report_error(raw) == expected


def test_a_report_with_an_overlong_error_is_refused(tmp_path: Path) -> None:
    report: dict[str, Any] = run_battery(
        None, broken, TASKS, Battery.hbeval(n_scenarios=6, seed=42), trials=1
    ).to_dict()
    report["trials"][0]["error"] = "y" * (ERROR_CHARS + 1)
    with pytest.raises(Exception, match="error"):
        validate_report(report)


def test_the_html_tail_shows_a_trial_error_escaped() -> None:
    from hbeval.report.html import render_html

    def hostile(question: str) -> str:
        raise RuntimeError("<script>alert(1)</script> upstream said no")

    report = run_battery(None, hostile, TASKS, Battery.hbeval(n_scenarios=6, seed=42), trials=1)
    page = render_html({"hostile": report})
    assert (
        "<b>Error:</b> <code>RuntimeError: &lt;script&gt;alert(1)&lt;/script&gt; upstream" in page
    )
    assert "<script>alert(1)" not in page
