"""``hbeval battery run`` progress: rich's live display on a terminal, plain lines otherwise."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from hbeval.cli._progress import BatteryProgress, demo_progress
from hbeval.runner.run import ProgressUpdate

AGENT = "hbeval_plain.examples:careful"


def updates(total: int, *, failed_every: int = 7, resumed: int = 0) -> list[ProgressUpdate]:
    return [
        ProgressUpdate(
            run_id="r1", done=d, total=total, failed=d // failed_every, resumed=min(d, resumed)
        )
        for d in range(resumed, total + 1)
    ]


def test_plain_lines_at_each_tenth_and_at_the_end() -> None:
    out = io.StringIO()
    progress = BatteryProgress(live=False, stream=out)
    for u in updates(30):
        progress(u)
    lines = out.getvalue().splitlines()
    # done = 0, 3, 6, ..., 30: the first update of each tenth (11 tenths, the last at 30/30)
    assert len(lines) == 11
    assert lines[0] == "[hbeval] run r1: 0/30 trials, 0 not passed"
    assert lines[1] == "[hbeval] run r1: 3/30 trials, 0 not passed"
    assert lines[-1] == "[hbeval] run r1: 30/30 trials, 4 not passed"
    assert progress.run_id == "r1"


def test_plain_lines_name_resumed_trials() -> None:
    out = io.StringIO()
    progress = BatteryProgress(live=False, stream=out)
    for u in updates(10, resumed=4):
        progress(u)
    assert out.getvalue().splitlines()[-1] == (
        "[hbeval] run r1: 10/10 trials, 1 not passed (4 resumed)"
    )


def test_live_display_draws_a_bar_and_stops_at_the_end() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120, color_system=None)
    progress = BatteryProgress(live=True, console=console)
    for u in updates(12):
        progress(u)
    text = screen.getvalue()
    assert "[hbeval] run r1" in text
    assert "12/12" in text and "trials" in text and "1 not passed" in text
    assert "━" in text  # rich's bar, not the plain line
    assert "[hbeval] run r1: " not in text
    assert progress._display is not None and progress._display._progress is None  # stopped
    progress.close()  # idempotent


def test_demo_progress_is_plain_off_a_terminal_and_one_bar_per_agent_on_one() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120, color_system=None)
    live = demo_progress(live=True, console=console)
    for name in ("careful", "naive"):
        for u in updates(5):
            live(name, u)
    live.close()  # type: ignore[attr-defined]
    text = screen.getvalue()
    assert "[hbeval] careful" in text and "[hbeval] naive" in text and "5/5" in text
    assert not hasattr(demo_progress(live=False), "close")


def cli_args(tmp_path: Path) -> list[str]:
    return [
        sys.executable, "-m", "hbeval.cli", "battery", "run", AGENT,
        "--trials", "1", "--scenarios", "6", "--db", str(tmp_path / "s.db"),
    ]  # fmt: skip


def test_battery_run_writes_plain_lines_when_not_a_terminal(tmp_path: Path) -> None:
    proc = subprocess.run(cli_args(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[hbeval] run ")]
    assert lines, proc.stderr
    assert lines[-1].split(": ", 1)[1].startswith("6/6 trials, ")
    assert "\x1b[" not in proc.stderr and "\r" not in proc.stderr


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_battery_run_shows_rich_progress_on_a_terminal(tmp_path: Path) -> None:
    controller, terminal = os.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    proc = subprocess.Popen(
        cli_args(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([controller], [], [], 300)
        if not ready:
            proc.kill()
            pytest.fail("no output from battery run on a terminal")
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert proc.wait(timeout=60) == 0
    text = b"".join(chunks).decode("utf-8", "replace")
    assert "━" in text and "6/6" in text, text[-2000:]
    assert "[hbeval] run " in text and ": 6/6 trials" not in text  # the bar, not a line
    assert "verdict" in text  # the summary follows the display
