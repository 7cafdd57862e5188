"""A serial run with a timeout: trials on one trial thread, the caller's thread watching it.

What a worker thread per attempt guaranteed must still hold: an attempt over its time is cut
and abandoned, the run goes on; the caller's context variables reach each attempt fresh; an
error on the trial thread is raised on the caller's; Ctrl-C keeps every trial recorded and lets
a trial being recorded finish its write.
"""

from __future__ import annotations

import contextvars
import os
import signal
import sys
import threading
import time
from typing import Any

import pytest

from hbeval.runner._attempts import abandoned_threads
from hbeval.runner.run import ProgressUpdate, run_battery
from hbeval.store import RUN_FAILED, RUN_INTERRUPTED, InMemoryStore
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from hbeval_core.vocab import OUTCOME_PASS

TASK = Task(id="t", question="q", required=("done",))


def small() -> Battery:
    return Battery.hbeval(n_scenarios=6, seed=42)


def test_trials_run_on_one_thread_that_also_records_them() -> None:
    agent_threads: list[threading.Thread] = []
    progress_threads: list[tuple[int, threading.Thread]] = []

    def agent(question: str) -> str:
        agent_threads.append(threading.current_thread())
        return "done"

    def progress(update: ProgressUpdate) -> None:
        progress_threads.append((update.done, threading.current_thread()))

    report = run_battery(
        None, agent, [TASK], small(), trials=2, store=InMemoryStore(), timeout=30, progress=progress
    ).to_dict()
    assert report["outcomes"][OUTCOME_PASS] == 12
    assert len(agent_threads) == 12 and len(set(agent_threads)) == 1
    (trial_thread,) = set(agent_threads)
    assert trial_thread is not threading.current_thread() and trial_thread.daemon
    # Each finished trial is reported from the thread that recorded it.
    assert {thread for done, thread in progress_threads if done} == {trial_thread}
    assert [done for done, _ in progress_threads if done] == list(range(1, 13))


def test_after_a_cut_a_new_trial_thread_finishes_the_run() -> None:
    release = threading.Event()
    seen: list[tuple[int, threading.Thread]] = []

    def factory() -> Any:  # a fresh agent per trial: the next trial need not wait for it
        def agent(question: str) -> str:
            seen.append((len(seen), threading.current_thread()))
            if len(seen) == 2:
                release.wait(10)  # the second trial hangs past its timeout
            return "done"

        return agent

    store = InMemoryStore()
    try:
        report = run_battery(
            None, factory, [TASK], small(), trials=1, store=store, run_id="cut", timeout=0.3
        ).to_dict()
        hung = seen[1][1]
        assert hung.is_alive() and hung.name == "hbeval-s001-t0-a0"
        assert "hbeval-s001-t0-a0" in abandoned_threads()
    finally:
        release.set()
    outcomes = [t["outcome"] for t in report["trials"]]
    assert outcomes == ["pass", "timeout", "pass", "pass", "pass", "pass"]
    before = {thread for i, thread in seen if i < 2}
    after = {thread for i, thread in seen if i > 2}
    assert len(before) == 1 and len(after) == 1 and before != after
    assert len(store.list_trials("cut")) == 6
    hung.join(10)
    assert not hung.is_alive()


def test_each_attempt_gets_a_fresh_copy_of_the_callers_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("hbeval_test_var", default="unset")
    seen: list[str] = []

    def agent(question: str) -> str:
        seen.append(var.get())
        var.set("changed by the agent")
        return "done"

    token = var.set("the caller's")
    try:
        run_battery(None, agent, [TASK], small(), trials=1, timeout=30)
    finally:
        var.reset(token)
    assert seen == ["the caller's"] * 6


def test_an_attempt_out_of_time_before_its_agent_starts_is_cut_without_running_it() -> None:
    calls: list[str] = []

    def factory() -> Any:
        time.sleep(0.4)  # building the agent takes longer than the attempt's timeout

        def agent(question: str) -> str:
            calls.append(question)
            return "done"

        return agent

    store = InMemoryStore()
    report = run_battery(
        None, factory, [TASK], small(), trials=1, store=store, run_id="late", timeout=0.2
    ).to_dict()
    # The first trial gets the agent built when the target was resolved, before its attempt.
    assert [t["outcome"] for t in report["trials"]] == ["pass"] + ["timeout"] * 5
    assert len(calls) == 1
    late = store.list_attempts("late")[1:]
    assert {a.error_type for a in late} == {"TrialTimeout"}
    assert all("before its agent was called" in (a.error or "") for a in late)


class _FailingStore(InMemoryStore):
    """Refuses the third trial's write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def record_trial_bundle(self, *args: Any, **kwargs: Any) -> int:
        self.writes += 1
        if self.writes == 3:
            raise RuntimeError("disk full")
        return super().record_trial_bundle(*args, **kwargs)


def test_an_error_on_the_trial_thread_is_raised_on_the_callers() -> None:
    store = _FailingStore()
    with pytest.raises(RuntimeError, match="disk full"):
        run_battery(None, lambda q: "done", [TASK], small(), trials=1, store=store, run_id="f")
    assert store.get_run("f").status == RUN_FAILED  # type: ignore[union-attr]
    assert len(store.list_trials("f")) == 2  # what was recorded stays


class _SlowStore(InMemoryStore):
    """The second trial's write takes a while; Ctrl-C arrives during it."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.writing = threading.Event()

    def record_trial_bundle(self, *args: Any, **kwargs: Any) -> int:
        self.writes += 1
        if self.writes == 2:
            self.writing.set()
            time.sleep(0.5)
        return super().record_trial_bundle(*args, **kwargs)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_write_lets_it_finish_and_starts_nothing_more() -> None:
    store = _SlowStore()
    started: list[str] = []

    def agent(question: str) -> str:
        started.append(question)
        return "done"

    def press_ctrl_c() -> None:
        if store.writing.wait(10):
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_battery(None, agent, [TASK], small(), trials=1, store=store, run_id="w")
    finally:
        presser.join(10)
    time.sleep(0.2)  # a trial thread that went on would have started an agent by now
    assert store.get_run("w").status == RUN_INTERRUPTED  # type: ignore[union-attr]
    trials = store.list_trials("w")
    assert len(trials) == 2  # the write under way when Ctrl-C came finished
    assert store.get_metrics("w", trials[1].trial_key).values
    assert len(started) == 2
