"""Terminal output: the battery progress line (done of total, time left, failures) and the
report summary table, where undefined reads "undefined (reason)"."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from hbeval.report.terminal import (
    ProgressPrinter,
    demo_progress,
    format_duration,
    print_summary,
)
from hbeval.runner import ProgressUpdate, run_battery
from hbeval.scoring import Report
from tests.intervals import clustered_wilson, faulted_groups
from tests.report.test_report_fixtures import demo, empty_report


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Update:
    run_id: str
    done: int
    total: int
    failed: int
    resumed: int
    last: Any = None


def test_format_duration() -> None:
    assert [format_duration(s) for s in (None, 0, 44.6, 185, 3720)] == [
        "?",
        "0s",
        "45s",
        "3m 05s",
        "1h 02m",
    ]


def test_progress_on_a_terminal_redraws_one_line() -> None:
    out, clock = io.StringIO(), Clock()
    progress = ProgressPrinter(out, tty=True, clock=clock)
    progress(Update("r", 0, 10, 0, 0))
    clock.now += 4
    progress(Update("r", 2, 10, 1, 0))
    clock.now += 16
    progress(Update("r", 10, 10, 3, 0))
    frames = out.getvalue().split("\r")[1:]
    assert (
        frames[0]
        == "[hbeval] [........................] 0/10 trials, time left: estimating, 0 not passed"
    )
    # 2 trials in 4 s: 8 left take about 16 s
    assert frames[1] == "[hbeval] [####....................] 2/10 trials, ~16s left, 1 not passed"
    assert frames[2] == "[hbeval] [########################] 10/10 trials, took 20s, 3 not passed\n"
    assert progress.run_id == "r"


def test_progress_in_a_log_writes_each_tenth_and_leaves_resumed_trials_out_of_the_estimate() -> (
    None
):
    out, clock = io.StringIO(), Clock()
    progress = ProgressPrinter(out, tty=False, clock=clock, label="naive")
    progress(Update("r", 50, 100, 5, 50))  # 50 resumed from the store: they took no time
    for done in range(51, 101):
        clock.now += 1
        progress(Update("r", done, 100, 5, 50))
    lines = out.getvalue().splitlines()
    assert len(lines) == 6  # the start, then 60%, 70%, 80%, 90% and 100%
    assert lines[0].startswith("[hbeval] naive: [############............] 50/100 trials")
    assert lines[1] == (
        "[hbeval] naive: [##############..........] 60/100 trials, ~40s left, 5 not passed, "
        "50 resumed"
    )
    assert "took 50s" in lines[-1]


def test_progress_matches_run_battery_updates() -> None:
    from hbeval_core.faults import Battery
    from hbeval_plain.examples import careful, tasks

    out = io.StringIO()
    progress = ProgressPrinter(out, tty=False)
    seen: list[ProgressUpdate] = []

    def both(update: ProgressUpdate) -> None:
        seen.append(update)
        progress(update)

    run_battery(
        None, careful, tasks, Battery.hbeval(n_scenarios=6, seed=42), trials=1, progress=both
    )
    assert seen[-1].done == seen[-1].total == 6
    assert (
        out.getvalue()
        .splitlines()[-1]
        .startswith("[hbeval] [########################] 6/6 trials, took")
    )


def test_demo_progress_labels_each_agent() -> None:
    out = io.StringIO()
    progress = demo_progress(out, tty=False)
    progress("careful", Update("a", 1, 1, 0, 0))
    progress("naive", Update("b", 1, 1, 1, 0))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[hbeval] careful: ") and lines[1].startswith("[hbeval] naive: ")


def render(report: Report) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_summary(report, console)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_summary_table_shows_undefined_with_reasons() -> None:
    text = render(demo().naive)
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    assert "undefined (single_run)" in rows["CSI"]
    # 13/39 over 13 scenarios, each all alike: the interval is Wilson at the 13 scenarios.
    low, high = clustered_wilson(faulted_groups(demo().naive.to_dict()))
    assert "0.333" in rows["FRR"] and f"[{low:.3f}, {high:.3f}]" in rows["FRR"]
    assert "[0.143, 0.600]" in rows["FRR"] and "BELOW" in rows["FRR"]
    assert "effective n 13.0 of 39 trials in 13 scenario(s), design effect 3.00" in rows["FRR"]
    assert "5.000" in rows["TI (0–5)"]  # every call links to the reply that issued it
    # ... but no reply said why: a measured zero is a zero, with the reason in words.
    trace = demo().naive.traceability
    assert trace is not None
    calls = trace.calls
    assert "0.000" in rows["explained share"] and f"0/{calls} calls" in rows["explained share"]
    assert "came from a model message that stated no reason" in text
    assert "undefined (no_price_table)" in rows["cost per success usd"]
    assert "failed" in rows["security gate"]
    assert "49" in rows["capability (0–100)"]
    assert "UNSAFE" in text and "measurement fingerprint" in text


def test_summary_of_an_empty_report_never_prints_zero_for_a_gap() -> None:
    text = render(empty_report())
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    for name in ("PEI", "FRR", "IRS", "TI (0–5)", "CSI", "pass rate", "reliability gap"):
        assert "undefined (" in rows[name], rows[name]
    assert "undefined (no_trials)" in rows["capability (0–100)"]
