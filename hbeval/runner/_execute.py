"""Running a run's pending trials: serially, on threads, or as Ray tasks.

Every executor asks ``may_start()`` before it starts a trial (a Ray trial: before it is
submitted), so a run's cost budget stops new trials the same way everywhere. Trials already
started always finish and are recorded.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from ._attempts import _Done, _Job, _Runner

__all__ = ["always", "run_parallel", "run_serial"]


def run_serial(
    runner: _Runner,
    jobs: Sequence[_Job],
    finish: Callable[[_Done], None],
    may_start: Callable[[], bool],
) -> None:
    """Run ``jobs`` one after another while ``may_start()`` allows: on this thread without a
    timeout, else on a trial thread this one watches (``runner._watch``)."""
    if runner.timeout is not None:
        from ._watch import run_watched

        run_watched(runner, jobs, finish, may_start)
        return
    for job in jobs:
        if not may_start():
            return
        finish(runner.run_trial(job))


def run_parallel(
    runner: _Runner,
    jobs: Sequence[_Job],
    workers: int,
    finish: Callable[[_Done], None],
    may_start: Callable[[], bool],
) -> None:
    """Run ``jobs`` on ``workers`` threads; results are recorded from this thread as they finish.

    With a budget (``may_start`` is not ``always``) at most ``workers`` trials are handed to the
    pool at a time, so a trial starts only once ``may_start()`` allowed it with every earlier
    result counted; without one every trial is queued at once.
    """
    window = len(jobs) if may_start is always else workers
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hbeval-trial")
    queue: Iterator[_Job] = iter(jobs)
    running: set[Future[_Done]] = set()
    recorded: set[Future[_Done]] = set()
    seen: list[Future[_Done]] = []

    def top_up() -> None:
        while len(running) < window and may_start():
            job = next(queue, None)
            if job is None:
                return
            fut = executor.submit(runner.run_trial, job)
            running.add(fut)
            seen.append(fut)

    try:
        top_up()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                running.discard(fut)
                finish(fut.result())
                recorded.add(fut)
            top_up()
    except KeyboardInterrupt:
        # Record what already finished, so an interruption loses no completed trial.
        for fut in seen:
            if fut not in recorded and fut.done() and not fut.cancelled():
                if fut.exception() is None:
                    finish(fut.result())
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def always() -> bool:
    """``may_start`` of a run without a budget."""
    return True


@contextmanager
def _interrupt_watch() -> Iterator[None]:
    """Tell Ctrl-C on hbeval apart from a ``KeyboardInterrupt`` the agent raises itself."""
    from hbeval_core.contract._trial import _note_user_interrupt, _reset_user_interrupt

    _reset_user_interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: Any) -> None:
        if previous is signal.SIG_IGN:
            return
        _note_user_interrupt()
        if callable(previous):
            previous(signum, frame)
        else:
            raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, on_sigint)
    except (ValueError, OSError):  # not settable here: agents' own interrupts stop the run
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _reset_user_interrupt()
