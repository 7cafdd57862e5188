"""A serial run with a timeout: the trials run on one thread, the caller's thread watches it.

Cutting an attempt at its timeout needs the agent off the caller's thread (a thread cannot be
stopped, only abandoned). Handing each attempt to a worker thread and waiting for it costs two
thread wake-ups per attempt, which on a small trial is a large part of what the runner adds.
Here the whole loop (attempts, scoring, recording, progress) runs on one *trial thread* and the
caller's thread only wakes when an attempt could have run out of time:

* the trial thread registers each attempt as it calls the agent (a ``_Flight``) and clears it
  when the agent returns, under one lock;
* the caller's thread sleeps until the attempt in flight would reach its timeout (its active
  seconds: waits on the run's rate limit do not count, as before), at most ``_POLL`` seconds at
  a time so a signal sent to another thread still reaches it promptly. An attempt over its time
  is cut there: its trace up to now becomes the ``timeout`` result, the trial thread is
  abandoned with the agent still in it (listed by ``abandoned_threads``), and a new trial
  thread concludes that trial and goes on with the next job;
* Ctrl-C (or any error on the caller's thread) stops the loop: a trial being recorded is
  recorded in full first, an attempt in flight is cut (not recorded), nothing else starts.

Everything the trial thread does runs in a copy of the caller's context variables, and each
attempt in a fresh copy of them, as each attempt did on a worker thread. An error raised on the
trial thread (a store that refuses a write, a progress callback that raises) is raised again on
the caller's thread.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

from hbeval_core.contract import TrialResult

from ._attempts import _abandon, _Attempt, _Done, _Flight, _harness_failed, _Job, _Runner

__all__ = ["run_watched"]

_POLL: Final = 0.05
"""Longest sleep of the watching thread: a signal the OS handed to a trial thread (``raise``
from an agent) is handled by the main thread only once it wakes."""


class _Abandoned(BaseException):
    """Ends a trial thread whose attempt was cut, or whose run stopped, without a word."""


class _Watch:
    def __init__(
        self,
        runner: _Runner,
        jobs: Sequence[_Job],
        finish: Callable[[_Done], None],
        may_start: Callable[[], bool],
    ) -> None:
        assert runner.timeout is not None
        self.runner = runner
        self.jobs = jobs
        self.finish = finish
        self.may_start = may_start
        self.timeout: float = runner.timeout
        self.lock = threading.Lock()
        """Guards ``flight``, ``generation`` and ``stopped``; held while a trial is recorded."""
        self.ended = threading.Lock()
        self.ended.acquire()
        self.flight: _Flight | None = None
        self.generation = 0
        """The live trial thread's number: any other trial thread was abandoned."""
        self.stopped = False
        self.error: BaseException | None = None
        self.index = 0
        """The job the live trial thread is on."""
        self.context = contextvars.copy_context()

    # -- the caller's thread ---------------------------------------------------------------
    def run(self) -> None:
        try:
            self._start(0, None)
            while not self.ended.acquire(timeout=self._left()):
                self._check()
        except BaseException:
            # Seen by the trial thread at once: it calls no agent and starts no trial from
            # here on (it would win the lock back for a while: it holds the interpreter).
            self.stopped = True
            with self.lock:  # waits for a trial being recorded
                self.generation += 1
                flight, self.flight = self.flight, None
            if flight is not None:  # told to stop at its next tool call; it ends with the run
                flight.ctx.cut()
            raise
        if self.error is not None:
            raise self.error

    def _left(self) -> float:
        """Seconds to sleep before the attempt in flight could be over its time."""
        flight = self.flight
        if flight is None:
            return _POLL
        return min(max(self.timeout - flight.ctx.active_seconds(), 0.0), _POLL)

    def _check(self) -> None:
        """Cut the attempt in flight if it is over its time; a new trial thread goes on."""
        with self.lock:
            flight = self.flight
            if flight is None or flight.ctx.active_seconds() < self.timeout:
                return
            self.flight = None
            self.generation += 1
            result = self.runner.timed_out(flight.ctx)
            attempt = self.runner.attempt_record(
                flight.ctx, result, False, flight.started, flight.t0
            )
            if flight.thread is not None:
                _abandon(flight.thread)
            self._start(flight.index + 1, (flight.job, [*flight.earlier, attempt]))

    def _start(self, index: int, carried: tuple[_Job, list[_Attempt]] | None) -> None:
        thread = threading.Thread(
            target=self.context.copy().run,
            args=(self._loop, self.generation, index, carried),
            name="hbeval-trials",
            daemon=True,
        )
        thread.start()

    # -- the trial thread ------------------------------------------------------------------
    def _loop(
        self, generation: int, index: int, carried: tuple[_Job, list[_Attempt]] | None
    ) -> None:
        runner = self.runner
        runner._local.watch = self
        runner._local.generation = generation
        error: BaseException | None = None
        try:
            if carried is not None:
                self._deliver(generation, runner.conclude(*carried))
            jobs = self.jobs
            while index < len(jobs) and not self.stopped and self.may_start():
                self.index = index
                self._deliver(generation, runner.run_trial(jobs[index]))
                index += 1
        except _Abandoned:
            return
        except BaseException as exc:  # raised again on the caller's thread
            error = exc
        with self.lock:
            if self.generation != generation:
                return
            self.error = error
            self.generation += 1
        self.ended.release()

    def _deliver(self, generation: int, done: _Done) -> None:
        with self.lock:
            if self.generation != generation:
                raise _Abandoned
            self.finish(done)

    def call(self, agent: Any, flight: _Flight, *, owns_lock: bool) -> tuple[TrialResult, bool]:
        """Run the attempt's agent on this thread, registered for the watching thread to cut
        (``owns_lock``: release the shared agent's lock when the agent returns)."""
        runner = self.runner
        generation = runner._local.generation
        ctx = flight.ctx
        flight.index = self.index
        flight.thread = thread = threading.current_thread()
        with self.lock:
            live = self.generation == generation and not self.stopped
            overdue = ctx.active_seconds() >= self.timeout
            if live and not overdue:
                self.flight = flight
        if not live or overdue:
            if owns_lock:
                runner._agent_lock.release()
            if not live:
                raise _Abandoned
            return runner.timed_out(ctx, began=False), False
        thread.name = f"hbeval-{flight.job.key}-a{ctx.attempt}"
        try:
            value = self.context.copy().run(runner._call_adapter, agent, flight.job, ctx)
        except BaseException as exc:
            with self.lock:
                if self.generation != generation:
                    raise _Abandoned from None
                self.flight = None
            return _harness_failed(ctx, exc)
        finally:
            if owns_lock:
                runner._agent_lock.release()
            thread.name = "hbeval-trials"
        with self.lock:
            if self.generation != generation:
                raise _Abandoned
            self.flight = None
        return value


def run_watched(
    runner: _Runner,
    jobs: Sequence[_Job],
    finish: Callable[[_Done], None],
    may_start: Callable[[], bool],
) -> None:
    """``run_serial`` for a runner with a timeout: ``jobs`` on a trial thread this one watches."""
    if jobs:
        _Watch(runner, jobs, finish, may_start).run()
