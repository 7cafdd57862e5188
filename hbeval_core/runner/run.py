"""Run a fault battery against an agent: every scenario x trial, recorded, scored and reported.

``run_battery(adapter, target, tasks, battery, ...)`` is the whole job. Scenario ``i`` runs
``tasks[i mod len(tasks)]``; each scenario x trial index is one trial with key ``s003-t1``.

**Ids.** A trial's events carry ``<run_id>/<trial_key>`` (``.../a<n>`` for retry attempts), so
ids derive from the run id, scenario and trial only. Without ``run_id`` the run id is
``<agent_id>-<measurement fingerprint>``: an unfinished run with that id and the same identity
is resumed; a finished one is never reopened by default, and the next free ``-2``, ``-3``... is
used instead, because a finished measurement repeated is a new run (CSI needs repeated runs,
and a changed agent must not silently inherit old results). Pass ``run_id`` to resume one run
on purpose.

**Outcomes.** pass / fail (the verdict decides; an agent that raises, is halted by a budget or
crashes under a fault fails) / timeout / infra_error (the harness or environment failed: the
adapter raised, the factory could not build an agent, the agent raised ``InfraError``, or
scoring failed) / skipped (a shared agent object was still busy with a timed-out trial, so the
trial could not start; it is not scored). Infra errors are retried up to
``max_infra_retries`` times; every attempt is kept in the store.

**Timeouts.** Every attempt has a timeout (``DEFAULT_TIMEOUT``, 300 s, unless ``timeout`` says
otherwise; ``timeout=0`` or None turns it off). Each attempt then runs in its own daemon thread
and the runner waits that long. A thread cannot be killed: a timed-out agent runs on in the
background, is told to stop at its next tool call (``TrialCancelled``), and everything it does
after the cut is discarded; the thread is abandoned (it never keeps the process alive) and
reported (``abandoned_threads()``, a warning at the end of the run). The trace up to the cut is
kept and scored, and the trial's outcome is ``timeout``.

**The agent cannot end the run.** ``SystemExit`` (``sys.exit`` in the agent) and a
``KeyboardInterrupt`` the agent raises itself end that trial as an error (outcome fail); only an
interrupt sent to the process (Ctrl-C, SIGINT) stops the run, as described below.

**Values that cannot be stored** (a lone surrogate, an integer over 4,300 digits, an object
whose ``__str__`` raises, a list nested thousands deep) are replaced before scoring and
recording (``hbeval_core.store.storable_events``); each rebuilt event says what was changed in
``attrs["sanitised"]``, so one odd value never takes the battery down.

**Isolation and concurrency.** A factory target gives each trial a fresh agent and trials run
on up to ``concurrency`` threads. A shared agent object runs every trial serially on the same
object, and the report says "not isolated".

**Recording.** Every attempt, its events, the trial, its metrics and the report go through the
store's ``Recorder``, one trial at a time from the calling thread. The trial record is written
last, so a trial is either complete in the store or re-run on resume (attempts already stored
are kept and numbering continues after them). Ctrl-C marks the run interrupted and loses no
trial that was already recorded.

**Faults and time.** Fault injection is enabled inside battery runs. Time-based faults wait on
a virtual clock unless ``clock`` is given: the agent sees the same timeout error without the
runner sleeping for it (the manifest records ``clock: virtual``).

**Memory.** With ``memory`` (an ``hbeval_core.memory.EDM``, or anything with ``admit(episode)``
and ``recall(context, agent_id)``) the adapter gets ``memory_hook(memory)`` before the first
trial and ``memory_hook(None)`` after the last, so it can put the agent's qualified precedents
in front of the model. Once every trial is recorded, each scored trial becomes an episode
(``hbeval_core.memory.episode_from_trial``) and is offered to ``memory.admit``, in trial order.
Admission waits for the end of the run on purpose: trials of one run stay independent (none
recalls another trial of the same run, whatever the concurrency), so a run's verdicts depend
only on the memory as it stood when the run began, and admission never changes a verdict.
Infra errors and skipped trials are not offered (the harness failed, not the agent). A memory
that raises is logged and recorded as that trial's ``error``; the run goes on. Each decision
is handed to ``on_admission`` and kept on the runner's trial dict as ``memory``; the run's
stored config records which memory was attached.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from ..contract import (
    Adapter,
    Budgets,
    Task,
    TrialContext,
    TrialResult,
    VirtualClock,
    trial_context,
    user_interrupted,
)
from ..events import EventBase, RunEnd
from ..faults import (
    Battery,
    FaultInjector,
    derive_trial_seed,
    measurement_fingerprint,
    task_for,
)
from ..scoring import build_report, judge_identity, report_error, score_trial
from ..store import (
    DEFAULT_MAX_RESULT_BYTES,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_INTERRUPTED,
    AttemptRecord,
    MemoryStore,
    Redactor,
    RunRecord,
    TrialRecord,
    make_trial_key,
    sanitise_value,
    storable_events,
    storable_text,
)
from ..vocab import (
    DERIVE_VERSION,
    DIRECTIVE,
    HALT,
    METHODOLOGY_A,
    METHODOLOGY_B,
    METHODOLOGY_C,
    MODEL_END,
    OUTCOME_FAIL,
    OUTCOME_INFRA_ERROR,
    OUTCOME_PASS,
    OUTCOME_SKIPPED,
    OUTCOME_TIMEOUT,
    SCORING_VERSION,
)
from .manifest import (
    RunManifest,
    check_expected_hashes,
    environment_fingerprint,
    loaded_reference_module,
    package_versions,
    source_digests,
)
from .registry import ResolvedTarget, resolve_target

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TRIALS",
    "ProgressUpdate",
    "VirtualClock",
    "abandoned_threads",
    "default_run_id",
    "reusable_report",
    "run_battery",
    "trial_run_id",
]

log = logging.getLogger("hbeval.runner")

DEFAULT_TRIALS: Final = 3
DEFAULT_SEED: Final = 42
DEFAULT_TIMEOUT: Final = 300.0
"""Seconds an attempt may run before it is cut and recorded as ``timeout`` (0 or None: no limit)."""
EXECUTOR_LOCAL: Final = "local"
"""Trials run in this process: serially, or on ``concurrency`` threads."""
EXECUTOR_ASYNC: Final = "async"
"""``await arun_battery(...)``: trials on ``concurrency`` threads, off the caller's event loop."""
EXECUTOR_RAY: Final = "ray"
"""Each trial is a Ray task on a cluster (``runner._ray``)."""
EXECUTORS: Final = (EXECUTOR_LOCAL, EXECUTOR_ASYNC, EXECUTOR_RAY)
DEFAULT_RAY_CPUS: Final = 0.25
"""CPUs a Ray trial reserves: trials wait on models, so one CPU runs several at once."""
_METHODOLOGIES: Final = (METHODOLOGY_A, METHODOLOGY_B, METHODOLOGY_C)
_NOT_OFFERED: Final = (OUTCOME_INFRA_ERROR, OUTCOME_SKIPPED)
"""Outcomes whose trials are never offered to memory: the harness failed, not the agent."""


@dataclass(frozen=True)
class ProgressUpdate:
    """Where a run stands, after each recorded trial."""

    run_id: str
    done: int
    """Trials finished, resumed ones included."""
    total: int
    failed: int
    """Trials whose outcome is not pass (resumed ones included)."""
    resumed: int
    """Trials taken from the store instead of being run."""
    last: Mapping[str, Any] | None = None
    """The trial just recorded (None for the first update, sent before any trial runs)."""


def trial_run_id(run_id: str, trial_key: str, attempt: int) -> str:
    """The id the events of one attempt carry: ``<run>/<trial>``, ``<run>/<trial>/a<n>`` for retries."""
    return f"{run_id}/{trial_key}" if attempt == 0 else f"{run_id}/{trial_key}/a{attempt}"


def default_run_id(store: Any, agent_id: str, fingerprint: str, identity: Mapping[str, Any]) -> str:
    """``<agent>-<fingerprint>``, or the first ``-N`` suffix that is new or resumable.

    A stored run is resumable when it did not complete and has the same identity (agent,
    battery, measurement fingerprint, manifest hash); otherwise the next suffix is tried.
    """
    base = f"{agent_id}-{fingerprint}"
    n = 1
    while True:
        candidate = base if n == 1 else f"{base}-{n}"
        stored = store.get_run(candidate)
        if stored is None:
            return candidate
        same = all(getattr(stored, k) == v for k, v in identity.items())
        if same and stored.status != RUN_COMPLETED:
            return candidate
        n += 1


def reusable_report(store: Any, identity: Mapping[str, Any]) -> dict[str, Any] | None:
    """The report of the newest completed run with exactly this identity, or None.

    ``identity`` holds ``agent_id``, ``battery``, ``measurement_fingerprint`` and
    ``manifest_hash``; a run differing in any of them is never reused.
    """
    for stored in store.list_runs(agent_id=identity["agent_id"]):
        if stored.status != RUN_COMPLETED:
            continue
        if all(getattr(stored, k) == v for k, v in identity.items()):
            report = store.get_report(stored.run_id)
            if report is not None:
                return dict(report)
    return None


# ---------------------------------------------------------------------- one trial
@dataclass
class _Attempt:
    number: int
    result: TrialResult
    infra: bool
    started_at: float
    ended_at: float
    latency_ms: float


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


def _usage(verdict: Mapping[str, Any] | None, events: Sequence[EventBase]) -> dict[str, Any]:
    """Tokens, tool calls, model calls and interventions of a trial (None where not measured)."""
    base = verdict.get("usage") if isinstance(verdict, Mapping) else None
    usage: dict[str, Any] = {
        "input_tokens": None,
        "output_tokens": None,
        "tool_calls": None,
    }
    if isinstance(base, Mapping):
        usage.update({k: base.get(k) for k in usage})
    kinds = [getattr(e, "kind", None) for e in events]
    usage["model_calls"] = kinds.count(MODEL_END)
    # Interventions: times hbeval stopped or redirected the agent (budget halts, directives).
    usage["interventions"] = kinds.count(HALT) + kinds.count(DIRECTIVE)
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
    ) -> None:
        self.resolved = resolved
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

    # -- attempts ----------------------------------------------------------------------------------
    def _context(self, job: _Job, number: int) -> TrialContext:
        run_key = trial_run_id(self.run_id, job.key, number)
        clock = self.clock if self.clock is not None else VirtualClock()
        forbidden = job.task.forbidden_tools[0] if job.task.forbidden_tools else None
        injector = None
        if job.plan is not None:
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
            clock=clock,
            budgets=self.budgets,
            forbidden_tool=forbidden,
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

    def _attempt(self, job: _Job, number: int) -> _Attempt:
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
            elif self.resolved.isolated:
                result, infra = self._with_timeout(agent, job, ctx, owns_lock=False)
            elif self._agent_lock.acquire(timeout=self.timeout):
                # The worker thread releases the lock when the agent returns, however late.
                result, infra = self._with_timeout(agent, job, ctx, owns_lock=True)
            else:
                message = (
                    "skipped: the shared agent is still running a trial that timed out, so "
                    "this trial could not start (use a factory target for isolated trials)"
                )
                result = TrialResult(
                    final_state=None, status="skipped", error=message, error_type="AgentBusy"
                )
                infra = False
        latency = (time.perf_counter() - t0) * 1000.0
        return _Attempt(number, result, infra, started, time.time(), latency)

    def _with_timeout(
        self, agent: Any, job: _Job, ctx: TrialContext, *, owns_lock: bool
    ) -> tuple[TrialResult, bool]:
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["value"] = self._call_adapter(agent, job, ctx)
            except BaseException as exc:  # reported to the waiting runner, never printed
                box["error"] = exc
            finally:
                if owns_lock:
                    self._agent_lock.release()
                done.set()

        # The caller's context variables reach the agent, as they do without a timeout.
        thread = threading.Thread(
            target=contextvars.copy_context().run,
            args=(work,),
            name=f"hbeval-{job.key}-a{ctx.attempt}",
            daemon=True,
        )
        thread.start()
        assert self.timeout is not None
        if done.wait(self.timeout):
            if "error" in box:
                exc = box["error"]
                if isinstance(exc, Exception):
                    return _infra_result(
                        ctx, f"harness error {type(exc).__name__}: {exc}", exc
                    ), True
                raise exc
            value: tuple[TrialResult, bool] = box["value"]
            return value
        events = ctx.cut()
        _abandon(thread)
        message = (
            f"trial exceeded its timeout of {self.timeout:g} s; the agent's thread was "
            "abandoned as a daemon thread (it may still be running) and its events after the "
            "cut are discarded"
        )
        return _ended_result(ctx, events, "timeout", message, "TrialTimeout"), False

    # -- a whole trial ------------------------------------------------------------------------------
    def run_trial(self, job: _Job) -> _Done:
        attempts: list[_Attempt] = []
        for n in range(self.max_infra_retries + 1):
            attempt = self._attempt(job, job.first_attempt + n)
            attempts.append(attempt)
            if not attempt.infra:
                break
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
        if verdict is not None:
            verdict = _storable_verdict(verdict, job.key, self.redactor)
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
        return _Done(job, attempts, outcome, verdict, trial, scoring_error, episode)

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
            from ..memory._adapters import episode_from_trial

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
    ) -> dict[str, Any]:
        """The per-trial dict ``build_report`` reads (the same for run and resumed trials).

        ``error`` is the final attempt's error as stored (redacted); the report carries it,
        bounded, so a reader sees why a run failed without opening the store.
        """
        scenario = job.scenario
        extra = {} if error is None else {"error": report_error(error)}
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
            "usage": _usage(verdict, events),
            "isolated": self.resolved.isolated,
            **extra,
        }


def _planned_faults(plan: Any) -> int:
    """Faults a trial's plan holds: one per fault spec or cascade stage (0 without a plan)."""
    if plan is None:
        return 0
    return len(getattr(plan, "faults", ()) or ()) + len(getattr(plan, "stages", ()) or ())


def _ended_result(
    ctx: TrialContext,
    events: list[EventBase],
    status: str,
    message: str,
    error_type: str,
    *,
    infra: bool = False,
) -> TrialResult:
    """A trial the runner ended itself: its events so far, closed by a ``run_end``."""
    seq = max((e.seq for e in events if e.seq is not None), default=-1) + 1
    events.append(
        RunEnd(run_id=ctx.trial_run_id, seq=seq, ts=time.time(), status=status, error=message)  # type: ignore[arg-type]
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
    changed = [n for n in notes if "redacted" not in n and "cut to the first" not in n]
    if changed:
        log.warning(
            "trial %s: %d value(s) could not be stored as they were and were replaced (%s%s)",
            key,
            len(changed),
            changed[0],
            ", ..." if len(changed) > 1 else "",
        )
    if not notes and clean_error == error and clean_text == text:
        return result
    return dataclasses.replace(result, events=events, error=clean_error, response_text=clean_text)


def _storable_verdict(
    verdict: dict[str, Any], key: str, redactor: Redactor | None = None
) -> dict[str, Any]:
    """The verdict as it can be stored: redacted, and with unstorable values replaced."""
    if redactor is None:
        try:
            json.dumps(verdict, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except Exception:
            pass
        else:
            return verdict
    clean, notes = sanitise_value(verdict, "verdict", redactor=redactor)
    if notes and redactor is None:
        log.warning("trial %s: verdict values replaced to be stored: %s", key, notes[0])
    return dict(clean)


@contextmanager
def _interrupt_watch() -> Iterator[None]:
    """Tell Ctrl-C on hbeval apart from a ``KeyboardInterrupt`` the agent raises itself."""
    from ..contract._trial import _note_user_interrupt, _reset_user_interrupt

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


# ---------------------------------------------------------------------- recording
def _record(store: Any, run_id: str, done: _Done) -> None:
    """Write one finished trial in one transaction: attempts, their events, the trial, its metrics.

    A trial is never half-written: an interruption or a refused record stores none of it.
    """
    bundle = trial_bundle(run_id, done)
    store.record_trial_bundle(*bundle.args, **bundle.kwargs)


@dataclass(frozen=True)
class TrialBundle:
    """A finished trial as the store's ``record_trial_bundle`` takes it (plain, picklable data)."""

    args: tuple[TrialRecord, list[AttemptRecord], dict[int | None, Any]]
    kwargs: dict[str, Any]


def trial_bundle(run_id: str, done: _Done) -> TrialBundle:
    """The records, events and metrics ``_record`` writes for one finished trial."""
    job = done.job
    last = len(done.attempts) - 1
    attempts: list[AttemptRecord] = []
    events_by_attempt: dict[int | None, Any] = {}
    for i, att in enumerate(done.attempts):
        res = att.result
        if att.infra:
            att_outcome = OUTCOME_INFRA_ERROR
        elif res.status == "timeout":
            att_outcome = OUTCOME_TIMEOUT
        elif res.status == "skipped":
            att_outcome = OUTCOME_SKIPPED
        else:
            att_outcome = done.outcome
        error, error_type = res.error, res.error_type
        if i == last and done.scoring_error is not None:
            error, error_type = done.scoring_error, "ScoringError"
        attempts.append(
            AttemptRecord(
                run_id=run_id,
                trial_key=job.key,
                attempt=att.number,
                outcome=att_outcome,
                error=error,
                error_type=error_type,
                infra=att.infra or (i == last and done.scoring_error is not None),
                started_at=att.started_at,
                ended_at=att.ended_at,
            )
        )
        events_by_attempt[att.number] = res.events
    final = done.attempts[-1]
    metrics, undefined = _trial_metrics(done.verdict)
    record = TrialRecord(
        run_id=run_id,
        trial_key=job.key,
        task_id=job.task.id,
        scenario_index=job.scenario.index,
        trial_index=job.trial_index,
        outcome=done.outcome,
        fault_type=job.scenario.fault_type,
        domain=job.scenario.domain,
        verdict=done.verdict,
        started_at=done.attempts[0].started_at,
        ended_at=final.ended_at,
        latency_ms=final.latency_ms,
        attempts=len(done.attempts),
    )
    return TrialBundle(
        (record, attempts, events_by_attempt), {"metrics": metrics, "undefined": undefined}
    )


def _trial_metrics(
    verdict: Mapping[str, Any] | None,
) -> tuple[dict[str, float | None] | None, dict[str, str] | None]:
    """A verdict's live metrics and the reasons of the undefined ones (None when it has none)."""
    if verdict is None:
        return None, None
    metrics = verdict.get("metrics")
    if not isinstance(metrics, Mapping):
        return None, None
    undefined = verdict.get("metrics_undefined") or {}
    return dict(metrics), {k: v for k, v in undefined.items() if metrics.get(k) is None}


def _record_trial_metrics(store: Any, run_id: str, key: str, verdict: Mapping[str, Any]) -> None:
    # Resume path only: a store written before trial bundles may hold a trial without metrics.
    metrics, undefined = _trial_metrics(verdict)
    if metrics is not None:
        store.record_metrics(run_id, key, metrics, undefined)


def _resumed_trial(
    runner: _Runner,
    job: _Job,
    store: Any,
    record: Any,
    last_attempt: Mapping[str, int],
    error: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | str | None]:
    """Rebuild a stored trial's dict (and its episode for memory) from its record and events."""
    final = last_attempt.get(job.key)
    events = (
        list(store.iter_events(runner.run_id, job.key, attempt=final)) if final is not None else []
    )
    verdict = record.verdict
    if verdict is not None and not store.get_metrics(runner.run_id, job.key).values:
        # The run stopped between the trial record and its metrics: write them now.
        _record_trial_metrics(store, runner.run_id, job.key, verdict)
    trial = runner.trial_dict(
        job,
        outcome=record.outcome,
        verdict=verdict,
        attempts=record.attempts,
        latency_ms=record.latency_ms,
        events=events,
        error=error,
    )
    return trial, runner.episode(job, trial, events)


def _reload_trials(
    runner: _Runner,
    jobs: Sequence[_Job],
    store: Any,
    trial_dicts: dict[str, dict[str, Any]],
) -> None:
    """Fill in the trial dicts not held in memory, from the store (as a resumed run does)."""
    missing = [job for job in jobs if trial_dicts.get(job.key) is None]
    if not missing:
        return
    records = {r.trial_key: r for r in store.list_trials(runner.run_id)}
    last_attempt, final_error = _final_attempts(store, runner.run_id)
    for job in missing:
        trial_dicts[job.key], _ = _resumed_trial(
            runner, job, store, records[job.key], last_attempt, final_error.get(job.key)
        )


def _final_attempts(store: Any, run_id: str) -> tuple[dict[str, int], dict[str, str | None]]:
    """Each stored trial's last attempt number, and that attempt's error."""
    last_attempt: dict[str, int] = {}
    final_error: dict[str, str | None] = {}
    for a in store.list_attempts(run_id):
        if a.attempt >= last_attempt.get(a.trial_key, -1):
            last_attempt[a.trial_key] = a.attempt
            final_error[a.trial_key] = a.error
    return last_attempt, final_error


# ---------------------------------------------------------------------- memory
def _check_memory(memory: Any) -> None:
    if memory is None:
        return
    if not callable(getattr(memory, "admit", None)):
        raise ValueError(
            f"memory must provide admit(episode) (and recall(context, agent_id) for precedents), "
            f"such as hbeval_core.memory.EDM; got {type(memory).__name__}"
        )


def _memory_config(memory: Any) -> dict[str, Any]:
    """What the run's stored config says about the attached memory (JSON-ready)."""
    embedder = getattr(memory, "embedder", None)
    name = getattr(embedder, "name", None)
    threshold = getattr(memory, "threshold", None)
    policy = getattr(memory, "policy", None)
    as_dict = getattr(policy, "as_dict", None)
    return {
        "kind": type(memory).__name__,
        "embedder": name if isinstance(name, str) else None,
        "threshold": (
            float(threshold)
            if isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
            else None
        ),
        "policy": as_dict() if callable(as_dict) else None,
    }


def _set_memory_hook(adapter: Any, memory: Any) -> None:
    """``adapter.memory_hook(memory)``; an adapter without one (or one that fails) only loses recall."""
    hook = getattr(adapter, "memory_hook", None)
    if not callable(hook):
        if memory is not None:
            log.warning(
                "adapter %s has no memory_hook: episodes are admitted but no precedents are "
                "recalled during trials",
                getattr(adapter, "name", type(adapter).__name__),
            )
        return
    try:
        hook(memory)
    except Exception as exc:  # memory never breaks the run
        log.warning("memory_hook of adapter %s failed: %r", getattr(adapter, "name", "?"), exc)


def _decision_record(decision: Any) -> dict[str, Any]:
    """An ``AdmissionDecision`` (or any truthy/falsy answer of ``admit``) as a JSON-ready dict."""
    as_dict = getattr(decision, "as_dict", None)
    data = as_dict() if callable(as_dict) else None
    if not isinstance(data, Mapping):
        return {
            "admitted": bool(decision),
            "route": None,
            "reasons": [],
            "episode_id": None,
            "quarantined": False,
        }
    reasons = data.get("reasons") or ()
    return {
        "admitted": bool(data.get("admitted", bool(decision))),
        "route": data.get("route"),
        "reasons": [str(r) for r in reasons],
        "episode_id": data.get("episode_id"),
        "quarantined": bool(data.get("quarantined", False)),
    }


def _admit_run(
    memory: Any,
    jobs: Sequence[_Job],
    trial_dicts: Mapping[str, dict[str, Any]],
    episodes: Mapping[str, dict[str, Any] | str | None],
    on_admission: Callable[[Mapping[str, Any]], Any] | None,
) -> dict[str, int]:
    """Offer every scored trial's episode to ``memory``, in trial order; returns the tallies.

    Each trial dict gets ``memory``: ``{offered, admitted, route, reasons, episode_id,
    quarantined, error}``. An exception from ``memory.admit`` is logged and recorded as
    ``error``; it never stops the run.
    """
    tally = {"admitted": 0, "refused": 0, "quarantined": 0, "not_offered": 0, "errors": 0}
    for job in jobs:
        trial = trial_dicts[job.key]
        episode = episodes.get(job.key)
        record: dict[str, Any] = {
            "offered": isinstance(episode, dict),
            "admitted": False,
            "route": None,
            "reasons": [],
            "episode_id": None,
            "quarantined": False,
            "error": None,
        }
        if episode is None:
            record["reasons"] = [
                f"not offered: outcome {trial.get('outcome')}"
                + (" (no verdict)" if trial.get("verdict") is None else "")
            ]
            tally["not_offered"] += 1
        elif isinstance(episode, str):
            record["error"] = episode
            tally["errors"] += 1
        else:
            try:
                record.update(_decision_record(memory.admit(episode)))
            except Exception as exc:  # memory never breaks the run: log and record it
                log.warning("memory.admit failed for %s: %r", job.key, exc)
                record["error"] = f"{type(exc).__name__}: {exc}"
                tally["errors"] += 1
            else:
                key = (
                    "admitted"
                    if record["admitted"]
                    else ("quarantined" if record["quarantined"] else "refused")
                )
                tally[key] += 1
        trial["memory"] = record
        if on_admission is not None:
            on_admission(
                {
                    "trial_key": job.key,
                    "task_id": job.task.id,
                    "scenario_index": job.scenario.index,
                    "trial_index": job.trial_index,
                    "outcome": trial.get("outcome"),
                    **record,
                }
            )
    log.info(
        "memory: %(admitted)d admitted, %(refused)d refused, %(quarantined)d quarantined, "
        "%(not_offered)d not offered, %(errors)d errors",
        tally,
    )
    return tally


# ---------------------------------------------------------------------- the public entry point
def _check_args(
    tasks: Sequence[Task],
    trials: int,
    seed: int,
    concurrency: int,
    timeout: float | None,
    methodology: str,
    judge: Any,
    max_infra_retries: int,
    agent_id: str,
) -> None:
    def whole(name: str, value: Any, low: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be a whole number >= {low} (got {value!r})")

    whole("trials", trials, 1)
    whole("concurrency", concurrency, 1)
    whole("max_infra_retries", max_infra_retries, 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int so the run can be reproduced (got {seed!r})")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not timeout >= 0
        or timeout == float("inf")
    ):
        raise ValueError(f"timeout must be seconds >= 0 (0 or None: no limit; got {timeout!r})")
    if methodology not in _METHODOLOGIES:
        raise ValueError(
            f"methodology must be one of {', '.join(_METHODOLOGIES)} (got {methodology!r})"
        )
    if judge is not None and methodology != METHODOLOGY_C:
        raise ValueError(
            "an independent judge is methodology C: pass methodology='C' with judge= "
            "(methodology B asks the agent's own judge)"
        )
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise ValueError(f"agent_id must be a non-empty string (got {agent_id!r})")
    if not tasks:
        raise ValueError("tasks must hold at least one Task")
    for i, task in enumerate(tasks):
        if not isinstance(task, Task):
            raise ValueError(f"tasks[{i}] is a {type(task).__name__}, not a Task")


def _judge_identity(judge: Any, label: str | None) -> str | None:
    if judge is None:
        return None
    if label:
        return label
    return str(judge_identity(judge))


def _target_label(target: Any) -> str:
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}:{name}"


def run_battery(
    adapter: Adapter | None,
    target: Any,
    tasks: Sequence[Task],
    battery: Any,
    *,
    trials: int = DEFAULT_TRIALS,
    seed: int = DEFAULT_SEED,
    store: Any = None,
    agent_id: str = "default",
    run_id: str | None = None,
    concurrency: int = 1,
    timeout: float | None = DEFAULT_TIMEOUT,
    manifest: RunManifest | None = None,
    judge: Any = None,
    methodology: str = METHODOLOGY_B,
    progress: Callable[[ProgressUpdate], None] | None = None,
    max_infra_retries: int = 2,
    clock: Any = None,
    target_kind: str | None = None,
    judge_label: str | None = None,
    memory: Any = None,
    on_admission: Callable[[Mapping[str, Any]], Any] | None = None,
    reuse: bool = False,
    redactor: Redactor | None = None,
    executor: str = EXECUTOR_LOCAL,
    ray_address: str | None = None,
    ray_cpus_per_trial: float = DEFAULT_RAY_CPUS,
) -> dict[str, Any]:
    """Run ``battery`` against ``target`` on ``tasks`` and return the ``hbeval-report/1`` dict.

    ``adapter`` None picks one from the target (``registry.resolve_target``); ``target_kind``
    forces ``factory``, ``agent`` or an adapter kind. ``battery`` is a ``Battery`` or its name
    ("hbeval" / "compat", built with ``seed``). ``store`` is a ``Recorder`` (a ``MemoryStore``
    when None). ``manifest`` supplies budgets, a price table and pinned hashes; a pinned hash
    that differs raises ``ManifestMismatchError`` before anything runs. ``memory`` (an EDM)
    recalls the agent's precedents during trials and admits the run's scored trials at its
    end; ``on_admission`` receives each trial's admission record. With ``reuse`` (and no
    ``run_id``), the report of a completed stored run with the same agent id, battery,
    measurement fingerprint and manifest hash is returned instead of running again; the
    manifest hash covers the target's source files and installed package versions, so a
    changed agent or environment always runs anew. Bad arguments raise ``ValueError`` naming
    the argument. The module docstring gives the rules.

    ``executor`` is ``local`` (threads, ``concurrency``) or ``ray``: each trial is a Ray task on
    the cluster at ``ray_address`` (``auto``, ``host:port``; None starts a local Ray), taking
    ``ray_cpus_per_trial`` CPUs (``runner._ray``). ``async`` is what ``arun_battery`` passes:
    trials run as with ``local``, and the report names the executor.
    """
    _check_args(
        tasks, trials, seed, concurrency, timeout, methodology, judge, max_infra_retries, agent_id
    )
    if not timeout:
        timeout = None
    _check_memory(memory)
    tasks = list(tasks)
    if isinstance(battery, str):
        battery = Battery.build(battery, seed=seed)
    if getattr(battery, "seed", seed) != seed:
        raise ValueError(
            f"the battery was built with seed {battery.seed} but seed={seed}; build it with the "
            "run's seed so one seed reproduces the run"
        )
    spec_fp = battery.spec_fingerprint()
    plan_fp = battery.plan_fingerprint()
    mfp = measurement_fingerprint(
        spec_fp, battery.build_version, plan_fp, seed, trials, SCORING_VERSION, DERIVE_VERSION
    )
    check_expected_hashes(
        manifest,
        {
            "measurement_fingerprint": mfp,
            "battery_fingerprint": spec_fp,
            "plan_fingerprint": plan_fp,
        },
    )
    budgets = manifest.budgets if manifest is not None else Budgets()
    if redactor is None:
        redactor = Redactor.from_rules(
            manifest.redact if manifest is not None else (),
            max_result_bytes=(
                manifest.max_result_bytes if manifest is not None else DEFAULT_MAX_RESULT_BYTES
            ),
        )
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; got {executor!r}")
    if executor == EXECUTOR_RAY and memory is not None:
        raise ValueError("memory is not supported with executor='ray'; run with the local executor")
    resolved = resolve_target(target, target_kind=target_kind, adapter=adapter)
    if executor == EXECUTOR_RAY and not resolved.isolated:
        raise ValueError(
            "executor='ray' needs a factory target (each trial builds its agent on a worker); "
            "this target is a shared agent object"
        )
    if not resolved.isolated and concurrency > 1:
        log.warning("the target is a shared agent object: its trials run serially (not isolated)")
    workers = concurrency if resolved.isolated else 1

    manifest = (manifest or RunManifest()).with_updates(
        target=(
            manifest.target if manifest is not None and manifest.target else _target_label(target)
        ),
        target_kind=resolved.kind,
        adapter=resolved.adapter_kind,
        task_ids=tuple(t.id for t in tasks),
        battery=battery.kind,
        n_scenarios=len(battery.scenarios),
        fault_types=tuple(battery.fault_types),
        domains=tuple(battery.domains),
        seed=seed,
        trials=trials,
        agent_id=agent_id,
        methodology=methodology,
        judge=_judge_identity(judge, judge_label),
        concurrency=concurrency,
        timeout=None if timeout is None else float(timeout),
        clock="virtual" if clock is None else type(clock).__name__,
        budgets=budgets,
        versions=package_versions(),
        sources=source_digests(
            target,
            loaded_reference_module(manifest.target if manifest is not None else None),
            *(t.verify for t in tasks if t.verify is not None),
        ),
        environment=environment_fingerprint(),
        redact=tuple(redactor.patterns) + tuple(f"name:{n}" for n in redactor.names),
        max_result_bytes=redactor.max_result_bytes,
    )
    manifest_hash = manifest.manifest_hash()

    if store is None:
        store = MemoryStore()
    identity = {
        "agent_id": agent_id,
        "battery": battery.kind,
        "measurement_fingerprint": mfp,
        "manifest_hash": manifest_hash,
    }
    if reuse and run_id is None:
        stored_report = reusable_report(store, identity)
        if stored_report is not None:
            return stored_report
    if run_id is None:
        run_id = default_run_id(store, agent_id, mfp, identity)
    elif not isinstance(run_id, str) or not run_id.strip():
        raise ValueError(f"run_id must be a non-empty string (got {run_id!r})")
    manifest = manifest.with_updates(run_id=run_id, created_at=time.time())
    started_at = time.time()
    config = {
        "manifest": manifest.to_dict(),
        "isolated": resolved.isolated,
        "spec_fingerprint": spec_fp,
        "plan_fingerprint": plan_fp,
    }
    if memory is not None:
        config["memory"] = _memory_config(memory)
    config["executor"] = executor
    store.start_run(
        RunRecord(
            run_id=run_id,
            agent_id=agent_id,
            battery=battery.kind,
            measurement_fingerprint=mfp,
            manifest_hash=manifest_hash,
            config=config,
            created_at=started_at,
        )
    )

    runner = _Runner(
        resolved=resolved,
        tasks=tasks,
        battery=battery,
        run_id=run_id,
        agent_id=agent_id,
        trials=trials,
        seed=seed,
        timeout=None if timeout is None else float(timeout),
        budgets=budgets,
        clock=clock,
        methodology=methodology,
        judge=judge,
        max_infra_retries=max_infra_retries,
        redactor=redactor,
        memory_run=(
            None
            if memory is None
            else {
                "run_id": run_id,
                "agent_id": agent_id,
                "fingerprints": {"battery_spec": spec_fp, "measurement": mfp},
            }
        ),
    )
    jobs: list[_Job] = []
    for scenario in battery.scenarios:
        task = task_for(scenario, tasks)
        for k in range(trials):
            key = make_trial_key(scenario.index, k)
            plan = scenario.plan(derive_trial_seed(seed, scenario.index, k))
            jobs.append(_Job(key, scenario, task, k, plan))

    stored = {r.trial_key: r for r in store.list_trials(run_id)}
    last_attempt, final_error = _final_attempts(store, run_id)
    trial_dicts: dict[str, dict[str, Any]] = {}
    episodes: dict[str, dict[str, Any] | str | None] = {}
    pending: list[_Job] = []
    for job in jobs:
        record = stored.get(job.key)
        if record is not None:
            trial_dicts[job.key], episodes[job.key] = _resumed_trial(
                runner, job, store, record, last_attempt, final_error.get(job.key)
            )
        else:
            if job.key in last_attempt:  # an interrupted earlier try: keep its attempts
                job.first_attempt = last_attempt[job.key] + 1
            pending.append(job)
    resumed = len(trial_dicts)
    failed = sum(1 for t in trial_dicts.values() if t["outcome"] != OUTCOME_PASS)
    total = len(jobs)
    if progress is not None:
        progress(ProgressUpdate(run_id, resumed, total, failed, resumed, None))

    # A finished trial is in the store: with a store that is not in memory anyway, its dict is
    # read back for the report at the end instead of held, so memory does not grow with trials.
    slim = memory is None and not isinstance(store, MemoryStore)

    def finish(done: _Done) -> None:
        _record(store, run_id, done)
        finished(done.job.key, done.trial, done.outcome, done.episode)

    def finished(
        key: str, trial: dict[str, Any] | None, outcome: str, episode: dict[str, Any] | str | None
    ) -> None:
        """Count a recorded trial; ``trial`` None: read it back from the store at the end."""
        nonlocal failed, slim
        if trial is None:
            slim = True
        trial_dicts[key] = None if slim else trial  # type: ignore[assignment]
        episodes[key] = episode
        if outcome != OUTCOME_PASS:
            failed += 1
        if progress is not None:
            progress(ProgressUpdate(run_id, len(trial_dicts), total, failed, resumed, trial))

    nodes: list[str] = []

    runner.adapter.instrument()
    if memory is not None:
        _set_memory_hook(runner.adapter, memory)
    try:
        with _interrupt_watch():
            if executor == EXECUTOR_RAY:
                from ._ray import RayPlan, run_on_ray

                plan = RayPlan.for_run(
                    runner, target, manifest, store, address=ray_address, cpus=ray_cpus_per_trial
                )
                nodes = run_on_ray(plan, pending, store, finished)
            elif workers == 1:
                for job in pending:
                    finish(runner.run_trial(job))
            else:
                _run_parallel(runner, pending, workers, finish)
        if memory is not None:
            _admit_run(memory, jobs, trial_dicts, episodes, on_admission)
    except KeyboardInterrupt:
        store.finish_run(run_id, RUN_INTERRUPTED)
        raise
    except BaseException:
        store.finish_run(run_id, RUN_FAILED)
        raise
    finally:
        if memory is not None:
            _set_memory_hook(runner.adapter, None)
        runner.adapter.uninstrument()
        still = abandoned_threads()
        if still:
            log.warning(
                "%d agent thread(s) cut by the timeout are still running in the background "
                "(abandoned daemon threads): %s",
                len(still),
                ", ".join(still[:5]) + (", ..." if len(still) > 5 else ""),
            )

    if slim:
        _reload_trials(runner, jobs, store, trial_dicts)
    history = [
        r.report
        for r in store.list_reports(agent_id=agent_id, measurement_fingerprint=mfp)
        if r.run_id != run_id
    ]
    run_info = {
        "run_id": run_id,
        "agent_id": agent_id,
        "battery": battery.kind,
        "seed": seed,
        "trials": trials,
        "methodology": methodology,
        "judge": manifest.judge,
        "fingerprints": {"battery_spec": spec_fp, "plan": plan_fp, "measurement": mfp},
        "manifest_hash": manifest_hash,
        "manifest": manifest.to_dict(),
        "started_at": started_at,
        "ended_at": time.time(),
        "executor": executor,
        "nodes": nodes,
    }
    records = [trial_dicts[j.key] for j in jobs]
    report = build_report(run=run_info, trials=records, history=history).to_dict()
    run_metrics = report.get("metrics")
    if isinstance(run_metrics, Mapping) and not store.get_metrics(run_id).values:
        undefined = report.get("undefined") or {}
        store.record_metrics(
            run_id,
            None,
            dict(run_metrics),
            {k: undefined.get(k, "not_measured") for k, v in run_metrics.items() if v is None},
        )
    store.finish_run(run_id, RUN_COMPLETED, report)
    return report


def _run_parallel(
    runner: _Runner, jobs: list[_Job], workers: int, finish: Callable[[_Done], None]
) -> None:
    """Run ``jobs`` on ``workers`` threads; results are recorded from this thread as they finish."""
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hbeval-trial")
    futures = [executor.submit(runner.run_trial, job) for job in jobs]
    recorded: set[Future[_Done]] = set()
    try:
        remaining = set(futures)
        while remaining:
            done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
            for fut in done:
                finish(fut.result())
                recorded.add(fut)
    except KeyboardInterrupt:
        # Record what already finished, so an interruption loses no completed trial.
        for fut in futures:
            if fut not in recorded and fut.done() and not fut.cancelled():
                if fut.exception() is None:
                    finish(fut.result())
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
