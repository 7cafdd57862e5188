"""Finding 8: a hanging agent never hangs the battery.

On main there was no default per-trial timeout: an agent that blocked forever blocked the run
forever. Now every trial has one (``DEFAULT_TIMEOUT``, overridable with ``--timeout S``, off with
``--timeout 0``); a timed-out trial is recorded as ``timeout``, the synchronous agent's thread is
abandoned as a daemon thread and reported, and the run goes on.
"""

from __future__ import annotations

import inspect
import textwrap
import threading
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hbeval.cli._battery import battery_app
from hbeval.runner.run import DEFAULT_TIMEOUT, abandoned_threads, run_battery
from hbeval.store import RUN_COMPLETED, InMemoryStore, open_store

from ._agents import TASK, battery

ROOT = Path(__file__).resolve().parents[2]


def test_run_battery_has_a_default_timeout() -> None:
    default = inspect.signature(run_battery).parameters["timeout"].default
    assert default == DEFAULT_TIMEOUT and 0 < DEFAULT_TIMEOUT < float("inf")


def test_a_hanging_agent_is_cut_abandoned_and_reported() -> None:
    release = threading.Event()
    calls = {"n": 0}

    def agent(question: str) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            release.wait()  # hangs (no tool call, so it can never be told to stop)
        return "done"

    store = InMemoryStore()
    try:
        report = run_battery(
            None, agent, [TASK], battery(), trials=1, store=store, run_id="h", timeout=0.3
        )
        assert any(name.startswith("hbeval-s001-t0") for name in abandoned_threads())
    finally:
        release.set()
    assert store.get_run("h").status == RUN_COMPLETED  # type: ignore[union-attr]
    outcomes = [t.outcome for t in report.trials]
    assert outcomes.count("timeout") == 1 and outcomes[1] == "timeout"
    (attempt,) = [a for a in store.list_attempts("h") if a.trial_key == "s001-t0"]
    assert attempt.error_type == "TrialTimeout" and "abandoned" in (attempt.error or "")


def test_attempt_threads_end_with_the_run() -> None:
    """Timed attempts run off the caller's thread, and no idle thread outlives the run."""
    seen: set[threading.Thread] = set()

    def agent(question: str) -> str:
        seen.add(threading.current_thread())
        return "done"

    report = run_battery(
        None, agent, [TASK], battery(), trials=2, store=InMemoryStore(), run_id="w", timeout=30
    )
    assert len(report.trials) > 2
    assert seen and threading.current_thread() not in seen
    for thread in seen:
        thread.join(10)
    assert not any(t.is_alive() for t in seen)


def test_a_cut_attempt_thread_ends_when_its_agent_returns() -> None:
    release = threading.Event()
    hung: list[threading.Thread] = []

    def agent(question: str) -> str:
        if not hung:
            hung.append(threading.current_thread())
            release.wait()
        return "done"

    try:
        report = run_battery(
            None, agent, [TASK], battery(), trials=1, store=InMemoryStore(), run_id="c", timeout=0.3
        )
    finally:
        release.set()
    assert report.trials[0].outcome == "timeout"
    hung[0].join(10)
    assert not hung[0].is_alive()
    assert not any(name.startswith("hbeval-s000-t0") for name in abandoned_threads())


def _write_agent(tmp_path: Path, hang: float) -> Path:
    path = tmp_path / "hanging_agent.py"
    path.write_text(
        textwrap.dedent(
            """
            import time
            from hbeval_core.contract import Task

            calls = []
            HANG = {hang}

            def agent(question):
                calls.append(question)
                if len(calls) == 1:
                    time.sleep(HANG)
                return "done"

            tasks = [Task(id="t1", question="q", verify=lambda s, t: True)]
            """
        ).format(hang=hang)
    )
    return path


def _run(tmp_path: Path, *extra: str, hang: float = 0.5) -> Any:
    agent = _write_agent(tmp_path, hang)
    db = tmp_path / "hb.db"
    args = ["run", f"{agent}:agent", "--scenarios", "6", "--trials", "1", "--db", str(db)]
    return CliRunner().invoke(battery_app, [*args, *extra]), db


def test_cli_timeout_flag_cuts_and_reports(tmp_path: Path) -> None:
    res, db = _run(tmp_path, "--timeout", "0.3", hang=4.0)
    assert res.exit_code == 0, res.output
    assert "timeout 1" in res.output
    assert "abandoned daemon threads" in res.output
    with open_store(str(db)) as store:
        (run,) = store.list_runs()
        assert run.config["manifest"]["timeout"] == 0.3


def test_cli_default_timeout_is_recorded_and_zero_turns_it_off(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    res, db = _run(tmp_path / "a", "--timeout", "0")
    assert res.exit_code == 0, res.output  # main refused --timeout 0
    assert "outcomes: pass 6" in res.output  # no limit: the slow trial ran to its end
    with open_store(str(db)) as store:
        assert store.list_runs()[0].config["manifest"]["timeout"] is None
    res, db = _run(tmp_path / "b")
    assert res.exit_code == 0, res.output
    with open_store(str(db)) as store:
        assert store.list_runs()[0].config["manifest"]["timeout"] == DEFAULT_TIMEOUT


def test_negative_timeout_is_refused_naming_the_flag(tmp_path: Path) -> None:
    res, _ = _run(tmp_path, "--timeout", "-1")
    assert res.exit_code == 2 and "--timeout" in res.output
