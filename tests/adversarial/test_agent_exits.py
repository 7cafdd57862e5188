"""Finding 6: an agent calling ``sys.exit`` (or raising ``KeyboardInterrupt``) ends only its trial.

On main ``sys.exit(3)`` inside an agent ended hbeval with the agent's exit code, no report, and
most trials never ran. Ctrl-C sent to hbeval itself must still stop the run, keeping every
completed trial.
"""

from __future__ import annotations

import signal
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli._battery import battery_app
from hbeval.runner.run import run_battery
from hbeval.store import RUN_COMPLETED, RUN_INTERRUPTED, InMemoryStore, open_store

from ._agents import TASK, battery


def _factory(exc: BaseException, every: int = 2) -> Any:
    count = {"n": 0}
    lock = threading.Lock()

    def factory() -> Any:
        def agent(question: str) -> str:
            with lock:
                count["n"] += 1
                n = count["n"]
            if n % every == 0:
                raise exc
            return "done"

        return agent

    return factory


@pytest.mark.parametrize("timeout", [None, 30.0], ids=["no-timeout", "timeout-thread"])
@pytest.mark.parametrize(
    "exc", [SystemExit(3), SystemExit("bye"), KeyboardInterrupt()], ids=["exit3", "exit-text", "ki"]
)
def test_agent_exit_ends_its_trial_as_an_error(exc: BaseException, timeout: float | None) -> None:
    store = InMemoryStore()
    report = run_battery(
        None, _factory(exc), [TASK], battery(), trials=1, store=store, run_id="x", timeout=timeout
    )
    assert store.get_run("x").status == RUN_COMPLETED  # type: ignore[union-attr]
    assert report.run.trial_count == 6
    failed = [t for t in report.trials if t.outcome == "fail"]
    assert len(failed) == 3  # every second agent call raised
    assert all(t.outcome == "pass" for t in report.trials if t not in failed)
    attempts = [a for a in store.list_attempts("x") if a.error_type == type(exc).__name__]
    assert len(attempts) == 3 and all(not a.infra for a in attempts)
    assert f"the agent raised {type(exc).__name__}" in (attempts[0].error or "")


def test_sys_exit_from_the_cli_still_writes_the_report(tmp_path: Path) -> None:
    agent = tmp_path / "exiting_agent.py"
    agent.write_text(
        textwrap.dedent(
            """
            import sys
            from hbeval_core.contract import Task

            calls = []

            def agent(question):
                calls.append(question)
                if len(calls) == 2:
                    sys.exit(7)
                return "done"

            tasks = [Task(id="t1", question="q", verify=lambda s, t: True)]
            """
        )
    )
    out = tmp_path / "report.json"
    res = CliRunner().invoke(
        battery_app,
        [
            "run",
            f"{agent}:agent",
            "--scenarios",
            "6",
            "--trials",
            "1",
            "--db",
            str(tmp_path / "hb.db"),
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert out.exists()
    with open_store(str(tmp_path / "hb.db")) as store:
        (run,) = store.list_runs()
        assert run.status == RUN_COMPLETED
        assert len(store.list_trials(run.run_id)) == 6


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("timeout", [None, 30.0], ids=["no-timeout", "timeout-thread"])
def test_ctrl_c_on_hbeval_still_stops_the_run(timeout: float | None) -> None:
    count = {"n": 0}

    def agent(question: str) -> str:
        count["n"] += 1
        if count["n"] == 3:
            signal.raise_signal(signal.SIGINT)  # the user presses Ctrl-C during trial 3
            time.sleep(0.2)
        return "done"

    store = InMemoryStore()
    with pytest.raises(KeyboardInterrupt):
        run_battery(
            None, agent, [TASK], battery(), trials=1, store=store, run_id="c", timeout=timeout
        )
    assert store.get_run("c").status == RUN_INTERRUPTED  # type: ignore[union-attr]
    assert len(store.completed_trial_keys("c")) == 2
    # After the run, an agent's own KeyboardInterrupt is an error again, not an interrupt.
    report = run_battery(
        None, _factory(KeyboardInterrupt()), [TASK], battery(), trials=1, timeout=timeout
    )
    assert report.run.trial_count == 6
