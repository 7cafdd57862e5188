"""One trial, start to finish: attempts, timeouts, retries of infra errors, scoring.

``_Runner.run_trial(job) -> _Done`` is the per-trial function every executor calls (threads in
``runner.run``, Ray tasks in ``runner._ray``): it needs only the runner's settings and the job,
touches no store, and returns everything the caller records.

**Rate limits.** Every attempt's model calls wait on the run's limiter (``TrialContext.limiter``,
a ``RateLimiter`` here or a Ray actor's proxy). An attempt the agent ended on an HTTP 429 is kept
as an infra attempt; the run pauses for the wait the provider asked (every trial's next model
call waits too), then the attempt runs again, up to ``MAX_RATE_LIMITED_ATTEMPTS`` times, not
counted against ``max_infra_retries``. Time spent waiting is neither the trial's latency nor
its timeout.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import operator
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from hbeval_core.contract import (
    Adapter,
    Budgets,
    Task,
    TrialContext,
    TrialResult,
    VirtualClock,
    trial_context,
    user_interrupted,
)
from hbeval_core.events import EventBase, RunEnd
from hbeval_core.faults import (
    FaultInjector,
)
from hbeval_core.faults.model import ModelFaultPlan
from hbeval_core.vocab import (
    DIRECTIVE,
    HALT,
    MODEL_END,
    OUTCOME_FAIL,
    OUTCOME_INFRA_ERROR,
    OUTCOME_PASS,
    OUTCOME_SKIPPED,
    OUTCOME_TIMEOUT,
)

from ..scoring import score_trial
from ..store import (
    Redactor,
    sanitise_value,
    storable_events,
    storable_text,
)
from ..store._json import dumps
from ..store._sanitise import change_kind, sanitised_json
from ._model_desk import ScriptedModelFaults
from .registry import ResolvedTarget

log = logging.getLogger("hbeval.runner")


MAX_RATE_LIMITED_ATTEMPTS: Final = 10
"""Attempts of one trial that may end on a 429 before the trial is an infra error."""
_PAUSE_POLL: Final = 0.05
"""Seconds between looks at a run's pause while waiting it out between attempts."""

_NOT_OFFERED: Final = (OUTCOME_INFRA_ERROR, OUTCOME_SKIPPED)
"""Outcomes whose trials are never offered to memory: the harness failed, not the agent."""


def trial_run_id(run_id: str, trial_key: str, attempt: int) -> str:
    """The id the events of one attempt carry: ``<run>/<trial>``, ``<run>/<trial>/a<n>`` for retries."""
    return f"{run_id}/{trial_key}" if attempt == 0 else f"{run_id}/{trial_key}/a{attempt}"


# ---------------------------------------------------------------------- attempt threads
class _Worker:
    """A daemon thread that runs a caller's timed attempts one after another.

    An attempt with a timeout runs off the caller's thread so the caller can stop waiting for
    it. Starting a thread per attempt cost more than a small trial itself, so each calling
    thread keeps one worker and hands it each attempt in turn; a worker whose attempt timed out
    is retired (abandoned with the agent still running in it) and the next attempt gets a new
    one.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.retired = False
        self.thread = threading.Thread(target=self._loop, name="hbeval-worker", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.retired:
            job = self._jobs.get()
            if job is None:
                return
            job()

    def submit(self, job: Callable[[], None], name: str) -> None:
        """Run ``job`` on this thread, which takes ``name`` (the attempt it runs)."""
        self.thread.name = name
        self._jobs.put(job)

    def stop(self) -> None:
        """Let the thread end once idle (a retired one ends when its agent returns)."""
        self.retired = True
        self._jobs.put(None)


# ---------------------------------------------------------------------- one trial
@dataclass
class _Attempt:
    number: int
    result: TrialResult
    infra: bool
    started_at: float
    ended_at: float
    latency_ms: float
    rate_limited: float | None = None
    """The wait an HTTP 429 that ended this attempt asked for (None: no 429)."""


@dataclass
class _Flight:
    """An attempt whose agent is running on a watched loop's thread (``runner._watch``)."""

    job: _Job
    earlier: list[_Attempt]
    """The trial's attempts before this one."""
    ctx: TrialContext
    started: float
    t0: float
    index: int = 0
    """The job's place in the loop's jobs (set by the loop)."""
    thread: threading.Thread | None = None


@dataclass
class _Job:
    key: str
    scenario: Any
    task: Task
    trial_index: int
    plan: Any
    first_attempt: int = 0


@dataclass
class _Done:
    job: _Job
    attempts: list[_Attempt]
    outcome: str
    verdict: dict[str, Any] | None
    trial: dict[str, Any]
    scoring_error: str | None = None
    episode: dict[str, Any] | str | None = None
    """The episode offered to memory once the run ends (see ``_Runner.episode``)."""
    verdict_json: str | None = None
    """The JSON text of ``verdict`` as the store writes it, when known (written once)."""


def _event_counts(events: Sequence[EventBase]) -> tuple[int, int]:
    """Model calls and interventions (budget halts, directives) in a trial's events."""
    try:
        kinds = list(map(_kind_of, events))
    except AttributeError:  # not an event: it counts as neither
        kinds = [getattr(e, "kind", None) for e in events]
    return kinds.count(MODEL_END), kinds.count(HALT) + kinds.count(DIRECTIVE)


_kind_of: Final = operator.attrgetter("kind")


def _usage(
    verdict: Mapping[str, Any] | None,
    events: Sequence[EventBase],
    counts: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Tokens, tool calls, model calls and interventions of a trial (None where not measured).

    ``counts`` is ``_event_counts(events)`` when already known (the events are not needed).
    """
    base = verdict.get("usage") if isinstance(verdict, Mapping) else None
    usage: dict[str, Any] = {
        "input_tokens": None,
        "output_tokens": None,
        "tool_calls": None,
    }
    if isinstance(base, Mapping):
        usage.update({k: base.get(k) for k in usage})
    # Interventions: times hbeval stopped or redirected the agent (budget halts, directives).
    usage["model_calls"], usage["interventions"] = (
        _event_counts(events) if counts is None else counts
    )
    return usage


def _outcome(result: TrialResult, infra: bool, verdict: Mapping[str, Any] | None) -> str:
    if result.status == "timeout":
        return OUTCOME_TIMEOUT
    if infra or verdict is None:
        return OUTCOME_INFRA_ERROR
    # A trial stopped by a budget or a Safe Halt did not finish its task: it cannot pass.
    if verdict.get("passed") is True and result.status not in ("halted", "cancelled", "error"):
        return OUTCOME_PASS
    return OUTCOME_FAIL


class _Runner:
    """The state of one ``run_battery`` call (kept out of the public signature)."""

    def __init__(
        self,
        *,
        resolved: ResolvedTarget,
        tasks: Sequence[Task],
        battery: Any,
        run_id: str,
        agent_id: str,
        trials: int,
        seed: int,
        timeout: float | None,
        budgets: Budgets,
        clock: Any,
        methodology: str,
        judge: Any,
        max_infra_retries: int,
        memory_run: Mapping[str, Any] | None = None,
        redactor: Redactor | None = None,
        native_async: bool = False,
        limiter: Any = None,
    ) -> None:
        self.resolved = resolved
        self.limiter = limiter
        """The run's rate limiter (``RunLimiter``), shared by every trial; None: no limits."""
        self.native_async = native_async
        """Trials are awaited (``arun_battery``): adapters use their native async entry points."""
        self.adapter: Adapter = resolved.adapter
        self.tasks = tasks
        self.battery = battery
        self.run_id = run_id
        self.agent_id = agent_id
        self.trials = trials
        self.seed = seed
        self.timeout = timeout
        self.budgets = budgets
        self.clock = clock
        self.methodology = methodology
        self.judge = judge
        self.max_infra_retries = max_infra_retries
        self.memory_run = memory_run
        self.redactor = redactor if redactor is not None else Redactor()
        """Secrets and oversized results are rewritten with this before scoring and storage."""
        """Run ids and fingerprints for episodes; None when no memory is attached."""
        # A shared agent is one object: trials on it must not overlap, even after a timeout
        # left one running (documented: its background run may still touch the object).
        self._agent_lock = threading.Lock()
        self._local = threading.local()
        self._workers: list[_Worker] = []
        self._workers_lock = threading.Lock()

    def _worker(self) -> _Worker:
        """The calling thread's worker for timed attempts (started on first use)."""
        worker: _Worker | None = getattr(self._local, "worker", None)
        if worker is None or worker.retired:
            worker = _Worker()
            self._local.worker = worker
            with self._workers_lock:
                self._workers.append(worker)
        return worker

    def close(self) -> None:
        """End the idle attempt threads (a run's last step; timed-out ones stay abandoned)."""
        with self._workers_lock:
            workers, self._workers = self._workers, []
        for worker in workers:
            if not worker.retired:
                worker.stop()

    # -- attempts ----------------------------------------------------------------------------------
    def _context(self, job: _Job, number: int) -> TrialContext:
        run_key = trial_run_id(self.run_id, job.key, number)
        clock = self.clock if self.clock is not None else VirtualClock()
        forbidden = job.task.forbidden_tools[0] if job.task.forbidden_tools else None
        injector = model_faults = None
        if isinstance(job.plan, ModelFaultPlan):  # the proxy or a scripted model plants them
            if getattr(self.adapter, "scripted_model_faults", False):
                model_faults = ScriptedModelFaults(job.plan, run_id=run_key, clock=clock)
        elif job.plan is not None:
            injector = FaultInjector(
                job.plan, run_id=run_key, clock=clock, forbidden_tool=forbidden, enabled=True
            )
        return TrialContext(
            run_id=self.run_id,
            trial_run_id=run_key,
            trial_key=job.key,
            agent_id=self.agent_id,
            task_id=job.task.id,
            scenario_index=job.scenario.index,
            trial_index=job.trial_index,
            attempt=number,
            injector=injector,
            model_faults=model_faults,
            clock=clock,
            budgets=self.budgets,
            forbidden_tool=forbidden,
            native_async=self.native_async,
            limiter=self.limiter,
        )

    def _call_adapter(self, agent: Any, job: _Job, ctx: TrialContext) -> tuple[TrialResult, bool]:
        """Run the adapter inside the trial's context; an exception from it is infra."""
        with trial_context(ctx):
            try:
                self.adapter.fault_hook(ctx.injector)
                try:
                    result = self.adapter.run_trial(agent, job.task, job.scenario, job.plan)
                finally:
                    self.adapter.fault_hook(None)
            except Exception as exc:  # the adapter promised not to raise: this is the harness
                log.warning("adapter %s raised on %s: %r", self.adapter.name, job.key, exc)
                return _infra_result(ctx, f"adapter raised {type(exc).__name__}: {exc}", exc), True
            except (SystemExit, KeyboardInterrupt) as exc:
                if isinstance(exc, KeyboardInterrupt) and user_interrupted():
                    raise  # Ctrl-C on hbeval itself: the run stops, completed trials are kept
                # The agent called sys.exit() or raised KeyboardInterrupt itself: its trial
                # ends in an error, the run goes on.
                log.warning("the agent raised %r on %s: trial ended", exc, job.key)
                return _agent_exit_result(ctx, exc), False
        return result, bool(result.infra)

    def _wait_out_pause(self) -> None:
        """Wait while the run is paused by a 429 (before an attempt starts: not its time)."""
        limiter = self.limiter
        if limiter is None:
            return
        left = limiter.pause_left()
        while left > 0:
            time.sleep(min(left, 1.0) if left > _PAUSE_POLL else left)
            left = limiter.pause_left()

    def _attempt(self, job: _Job, number: int, earlier: list[_Attempt]) -> _Attempt:
        """Attempt ``number`` of ``job`` (``earlier``: its attempts so far)."""
        self._wait_out_pause()
        ctx = self._context(job, number)
        started = time.time()
        t0 = time.perf_counter()
        try:
            agent = self.resolved.agent(job.task)
        except Exception as exc:
            result, infra = (
                _infra_result(ctx, f"the target factory raised {type(exc).__name__}: {exc}", exc),
                True,
            )
        else:
            if self.timeout is None:
                if self.resolved.isolated:
                    result, infra = self._call_adapter(agent, job, ctx)
                else:
                    with self._agent_lock:
                        result, infra = self._call_adapter(agent, job, ctx)
            elif self.resolved.isolated or self._agent_lock.acquire(timeout=self.timeout):
                # The thread running the agent releases the lock when it returns, however late.
                owns = not self.resolved.isolated
                watch = getattr(self._local, "watch", None)
                if watch is None:
                    result, infra = self._with_timeout(agent, job, ctx, owns_lock=owns)
                else:  # a watched serial loop: the agent runs on this thread (runner._watch)
                    flight = _Flight(job, earlier, ctx, started, t0)
                    result, infra = watch.call(agent, flight, owns_lock=owns)
            else:
                message = (
                    "skipped: the shared agent is still running a trial that timed out, so "
                    "this trial could not start (use a factory target for isolated trials)"
                )
                result = TrialResult(
                    final_state=None, status="skipped", error=message, error_type="AgentBusy"
                )
                infra = False
        return self.attempt_record(ctx, result, infra, started, t0)

    def attempt_record(
        self, ctx: TrialContext, result: TrialResult, infra: bool, started: float, t0: float
    ) -> _Attempt:
        """The attempt as ended now (``started``: wall clock, ``t0``: ``perf_counter`` at its
        start); an attempt the agent ended on an HTTP 429 is an infra attempt."""
        # Waits on the run's rate limit are not the trial's time.
        latency = (time.perf_counter() - t0 - ctx.paused) * 1000.0
        if ctx.model_faults is not None:
            result = dataclasses.replace(result, events=ctx.model_faults.settle(result.events))
        limited = ctx.rate_limited if result.status == "error" else None
        if limited is not None:
            result = dataclasses.replace(
                result,
                infra=True,
                error=f"rate limited (HTTP 429, asked to wait {limited:g} s): {result.error}",
            )
            infra = True
        return _Attempt(ctx.attempt, result, infra, started, time.time(), latency, limited)

    def timed_out(self, ctx: TrialContext, *, began: bool = True) -> TrialResult:
        """The result of an attempt cut by its timeout: its events up to now, then ``run_end``
        (``began=False``: the time ran out before the agent was called)."""
        events = ctx.cut()
        if began:
            message = (
                f"trial exceeded its timeout of {self.timeout:g} s; the agent's thread was "
                "abandoned as a daemon thread (it may still be running) and its events after "
                "the cut are discarded"
            )
        else:
            message = (
                f"trial exceeded its timeout of {self.timeout:g} s before its agent was called "
                "(building the agent, or waiting for the shared agent, took that long); the "
                "agent was not run"
            )
        return _ended_result(ctx, events, "timeout", message, "TrialTimeout")

    def _with_timeout(
        self, agent: Any, job: _Job, ctx: TrialContext, *, owns_lock: bool
    ) -> tuple[TrialResult, bool]:
        box: dict[str, Any] = {}
        # Held until the attempt ends: a bare lock is the cheapest wake-up (an Event's
        # condition allocates a lock and a waiter list per wait).
        done = threading.Lock()
        done.acquire()

        def work() -> None:
            try:
                box["value"] = self._call_adapter(agent, job, ctx)
            except BaseException as exc:  # reported to the waiting runner, never printed
                box["error"] = exc
            finally:
                if owns_lock:
                    self._agent_lock.release()
                done.release()

        # The caller's context variables reach the agent, as they do without a timeout.
        variables = contextvars.copy_context()
        worker = self._worker()
        worker.submit(partial(variables.run, work), f"hbeval-{job.key}-a{ctx.attempt}")
        assert self.timeout is not None
        if _wait_active(done, ctx, self.timeout):
            if "error" in box:
                return _harness_failed(ctx, box["error"])
            value: tuple[TrialResult, bool] = box["value"]
            return value
        result = self.timed_out(ctx)
        worker.stop()  # it ends when the agent returns; the next attempt gets a new worker
        _abandon(worker.thread)
        return result, False

    # -- a whole trial ------------------------------------------------------------------------------
    def run_trial(self, job: _Job) -> _Done:
        return self.conclude(job, self._attempts(job))

    def _attempts(self, job: _Job) -> list[_Attempt]:
        """The trial's attempts: an infra attempt runs again (``max_infra_retries``), one ended
        on an HTTP 429 after the run's pause."""
        attempts: list[_Attempt] = []
        retries = limited = 0
        while True:
            attempt = self._attempt(job, job.first_attempt + len(attempts), attempts)
            attempts.append(attempt)
            if attempt.rate_limited is not None and limited < MAX_RATE_LIMITED_ATTEMPTS - 1:
                limited += 1
                if self.limiter is not None:
                    self.limiter.hit(attempt.rate_limited)  # raises over the cap on one pause
                continue  # the next attempt waits the pause out before it starts
            if not attempt.infra or retries >= self.max_infra_retries:
                return attempts
            retries += 1

    def conclude(self, job: _Job, attempts: list[_Attempt]) -> _Done:
        """The trial after its last attempt: stored forms, the verdict, the trial dict, the
        episode (an attempt cut by its timeout is always the last)."""
        for att in attempts:
            att.result = _storable_result(att.result, job.key, self.redactor)
        final = attempts[-1]
        if final.result.status == "skipped":
            trial = self.trial_dict(
                job,
                outcome=OUTCOME_SKIPPED,
                verdict=None,
                attempts=len(attempts),
                latency_ms=final.latency_ms,
                events=(),
            )
            return _Done(job, attempts, OUTCOME_SKIPPED, None, trial)
        verdict: dict[str, Any] | None = None
        scoring_error: str | None = None
        try:
            verdict = score_trial(
                job.task,
                job.scenario,
                final.result,
                methodology=self.methodology,
                judge=self.judge,
            ).as_dict()
        except Exception as exc:  # a scoring bug is the harness's failure, not the agent's
            scoring_error = storable_text(f"scoring failed: {type(exc).__name__}: {exc}")
            log.error("scoring %s failed: %r", job.key, exc)
        verdict_json: str | None = None
        if verdict is not None:
            verdict, verdict_json = _storable_verdict(verdict, job.key, self.redactor)
        outcome = _outcome(final.result, final.infra, verdict)
        trial = self.trial_dict(
            job,
            outcome=outcome,
            verdict=verdict,
            attempts=len(attempts),
            latency_ms=final.latency_ms,
            events=final.result.events,
            # As the store's final attempt records it (a scoring error takes the agent's place).
            error=scoring_error if scoring_error is not None else final.result.error,
        )
        episode = self.episode(job, trial, final.result.events, final.result.response_text)
        return _Done(job, attempts, outcome, verdict, trial, scoring_error, episode, verdict_json)

    def episode(
        self,
        job: _Job,
        trial: Mapping[str, Any],
        events: Sequence[EventBase],
        final_text: str | None = None,
    ) -> dict[str, Any] | str | None:
        """The trial's episode for memory; None when there is none to offer, the error text when
        it could not be built (no memory, not scored or not the agent's failure give None)."""
        if self.memory_run is None or trial.get("verdict") is None:
            return None
        if trial.get("outcome") in _NOT_OFFERED:
            return None
        try:
            from ..memory._from_trial import episode_from_trial

            return episode_from_trial(
                job.task, job.scenario, trial, self.memory_run, events=events, final_text=final_text
            )
        except Exception as exc:  # memory never breaks the run
            log.warning("could not build the episode of %s: %r", job.key, exc)
            return f"episode could not be built: {type(exc).__name__}: {exc}"

    def trial_dict(
        self,
        job: _Job,
        *,
        outcome: str,
        verdict: dict[str, Any] | None,
        attempts: int,
        latency_ms: float | None,
        events: Sequence[EventBase],
        error: str | None = None,
        counts: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        """The per-trial dict ``build_report`` reads (the same for run and resumed trials).

        ``error`` is the final attempt's error as stored (redacted); ``build_report`` bounds it
        for the report, so a reader sees why a run failed without opening the store.
        ``counts`` (model calls, interventions) stands in for ``events`` when already known.
        """
        scenario = job.scenario
        extra: dict[str, Any] = {} if error is None else {"error": error}
        perturbation = getattr(scenario, "perturbation", None)
        if perturbation is not None:  # a prompt perturbation, reported apart from faults
            extra["perturbation"] = perturbation
        targets = _fault_targets(job.plan)
        if targets:
            extra["fault_targets"] = targets
        return {
            "trial_key": job.key,
            "task_id": job.task.id,
            "category": job.task.category,
            "scenario_index": scenario.index,
            "trial_index": job.trial_index,
            "domain": scenario.domain,
            "fault_type": scenario.fault_type,
            "is_nominal": scenario.is_nominal,
            "planned_faults": _planned_faults(job.plan),
            "outcome": outcome,
            "attempts": attempts,
            "latency_ms": latency_ms,
            "verdict": verdict,
            "usage": _usage(verdict, events, counts),
            "isolated": self.resolved.isolated,
            **extra,
        }


def _wait_active(done: threading.Lock, ctx: TrialContext, timeout: float) -> bool:
    """Wait for the worker to release ``done`` until the attempt has been active ``timeout``
    seconds; waits on the run's rate limit do not count. True when it was released in time."""
    while True:
        left = timeout - ctx.active_seconds()
        if left <= 0:
            return done.acquire(blocking=False)
        if done.acquire(timeout=left):
            return True


def _planned_faults(plan: Any) -> int:
    """Faults a trial's plan holds: one per fault spec or cascade stage (0 without a plan)."""
    if plan is None:
        return 0
    return len(getattr(plan, "faults", ()) or ()) + len(getattr(plan, "stages", ()) or ())


def _fault_targets(plan: Any) -> list[str]:
    """The tools a trial's plan faults (names or glob patterns), sorted and distinct."""
    if plan is None:
        return []
    specs = [*(getattr(plan, "faults", ()) or ()), *(getattr(plan, "stages", ()) or ())]
    return sorted({t for s in specs if isinstance(t := getattr(s, "target", None), str)})


def _ended_result(
    ctx: TrialContext,
    events: list[EventBase],
    status: str,
    message: str,
    error_type: str,
    *,
    infra: bool = False,
) -> TrialResult:
    """A trial the runner ended itself: its events so far, closed by a ``run_end`` unless the
    capture closed the run already (an adapter records the run's end as the exception leaves
    the agent's framework: a trace holds one ``run_end``; ``message`` stays the attempt's error)."""
    run_id = ctx.trial_run_id
    if not any(isinstance(e, RunEnd) and e.run_id == run_id for e in events):
        seq = max((e.seq for e in events if e.seq is not None), default=-1) + 1
        events.append(
            RunEnd(run_id=run_id, seq=seq, ts=time.time(), status=status, error=message)  # type: ignore[arg-type]
        )
    return TrialResult(
        final_state=None,
        events=events,
        status=status,
        error=message,
        error_type=error_type,
        infra=infra,
    )


def _infra_result(ctx: TrialContext, message: str, exc: BaseException) -> TrialResult:
    return _ended_result(ctx, list(ctx.events), "error", message, type(exc).__name__, infra=True)


def _harness_failed(ctx: TrialContext, exc: BaseException) -> tuple[TrialResult, bool]:
    """An exception that escaped ``_call_adapter`` (the harness around the adapter failed): an
    infra attempt; anything not an ``Exception`` (Ctrl-C) is raised again."""
    if isinstance(exc, Exception):
        return _infra_result(ctx, f"harness error {type(exc).__name__}: {exc}", exc), True
    raise exc


def _agent_exit_result(ctx: TrialContext, exc: BaseException) -> TrialResult:
    """The trial of an agent that raised ``SystemExit`` or ``KeyboardInterrupt``: an error."""
    message = f"the agent raised {type(exc).__name__}({_exit_arg(exc)}); its trial ended there"
    return _ended_result(ctx, list(ctx.events), "error", message, type(exc).__name__)


def _exit_arg(exc: BaseException) -> str:
    try:
        return ", ".join(repr(a) for a in exc.args)[:200]
    except Exception:
        return "..."


_ABANDONED: list[threading.Thread] = []


_ABANDONED_LOCK = threading.Lock()


def _abandon(thread: threading.Thread) -> None:
    with _ABANDONED_LOCK:
        _ABANDONED[:] = [t for t in _ABANDONED if t.is_alive()]
        _ABANDONED.append(thread)


def abandoned_threads() -> list[str]:
    """Names of the agent threads cut by a timeout that are still running (daemon threads)."""
    with _ABANDONED_LOCK:
        _ABANDONED[:] = [t for t in _ABANDONED if t.is_alive()]
        return [t.name for t in _ABANDONED]


def _storable_result(
    result: TrialResult, key: str, redactor: Redactor | None = None
) -> TrialResult:
    """``result`` with its secrets redacted, its tool results capped and every value the store
    cannot hold replaced (the rebuilt events say what changed)."""
    events, notes = storable_events(result.events, redactor=redactor)
    error, text = result.error, result.response_text

    def clean(value: str | None) -> str | None:
        if not isinstance(value, str):
            return value
        value = storable_text(value)
        return redactor.redact_text(value)[0] if redactor is not None else value

    clean_error, clean_text = clean(error), clean(text)
    changed = [n for n in notes if change_kind(n) == "replaced"]
    if changed:
        log.warning(
            "trial %s: %d value(s) could not be stored as they were and were replaced (%s%s)",
            key,
            len(changed),
            changed[0],
            ", ..." if len(changed) > 1 else "",
        )
    if not notes and clean_error == error and clean_text == text:
        # The same events, now carrying the rows they were encoded to (the store writes those).
        return dataclasses.replace(result, events=events)
    return dataclasses.replace(result, events=events, error=clean_error, response_text=clean_text)


def _storable_verdict(
    verdict: dict[str, Any], key: str, redactor: Redactor | None = None
) -> tuple[dict[str, Any], str | None]:
    """The verdict as it can be stored (redacted, and with unstorable values replaced), and the
    JSON text the store writes for it when that was written on the way (None otherwise)."""
    if redactor is None:
        try:
            text = dumps(verdict, utf8=True)
        except Exception:
            pass
        else:
            return verdict, text
        clean, notes = sanitise_value(verdict, "verdict")
        if notes:
            log.warning("trial %s: verdict values replaced to be stored: %s", key, notes[0])
        return dict(clean), None
    clean, _, known = sanitised_json(verdict, "verdict", redactor)
    return dict(clean), known
