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
otherwise; ``timeout=0`` or None turns it off). The agent then runs off the thread that
watches the time: a serial run's trials all run on one daemon trial thread (``runner._watch``).
A thread cannot be killed: a timed-out agent runs on in the background, is told to stop at its
next tool call (``TrialCancelled``), and everything it does after the cut is discarded; the
thread is abandoned (it never keeps the process alive) and reported (``abandoned_threads()``, a
warning at the end of the run). The trace up to the cut is kept and scored, and the trial's
outcome is ``timeout``.

**The agent cannot end the run.** ``SystemExit`` (``sys.exit`` in the agent) and a
``KeyboardInterrupt`` the agent raises itself end that trial as an error (outcome fail); only an
interrupt sent to the process (Ctrl-C, SIGINT) stops the run, as described below.

**Values that cannot be stored** (a lone surrogate, an integer over 4,300 digits, an object
whose ``__str__`` raises, a list nested thousands deep) are replaced before scoring and
recording (``hbeval.store.storable_events``); each rebuilt event says what was changed in
``attrs["sanitised"]``, so one odd value never takes the battery down.

**Isolation and concurrency.** A factory target gives each trial a fresh agent and trials run
on up to ``concurrency`` threads. A shared agent object runs every trial serially on the same
object, and the report says "not isolated".

**Recording.** Every attempt, its events, the trial, its metrics and the report go through the
store's ``Recorder``, one trial at a time. The trial record is written last, so a trial is
either complete in the store or re-run on resume (attempts already stored are kept and
numbering continues after them). Ctrl-C marks the run interrupted and loses no trial that was
already recorded (one being written is written in full first).

**Faults and time.** Fault injection is enabled inside battery runs. Time-based faults wait on
a virtual clock unless ``clock`` is given: the agent sees the same timeout error without the
runner sleeping for it (the manifest records ``clock: virtual``).

**Rate limits and cost.** Every trial's model calls wait on one limiter per run
(``contract.RateLimiter``; a Ray actor across a cluster): an HTTP 429 seen by any trial pauses
the whole run for the ``Retry-After`` its provider asked (at most ``MAX_PAUSE`` per pause, else
``RateLimitTooLong`` stops the run, ``interrupted``), and the attempt runs again; ``rate_limit``
(model calls per minute) also spaces the run's model calls. Waits are not the trials' latency
nor their timeout. ``max_cost`` (USD, priced by the manifest's price table) stops new trials
once the run has spent it (``runner._budget``): the run ends ``interrupted``, its report covers
the trials that ran (the others are in no metric) and says why in ``run.budget``; running it
again with a larger budget resumes it.

**Memory.** With ``memory`` (an ``hbeval.memory.EDM``, or anything with ``admit(episode)``
and ``recall(context, agent_id)``) the adapter gets ``memory_hook(view)`` before the first
trial and ``memory_hook(None)`` after the last, so it can put the agent's qualified precedents
in front of the model. ``view`` is an EDM's snapshot of the run agent's episodes taken before
the first trial (``EDM.snapshot``: read-only, picklable; other memories are their own view), so
trials recall the same precedents on every executor: threads here, or Ray workers, which get
the snapshot with the run's plan. Once every trial is recorded, each scored trial becomes an episode
(``hbeval.memory.episode_from_trial``) and is offered to ``memory.admit``, in trial order.
Admission waits for the end of the run on purpose: trials of one run stay independent (none
recalls another trial of the same run, whatever the concurrency), so a run's verdicts depend
only on the memory as it stood when the run began, and admission never changes a verdict.
Infra errors and skipped trials are not offered (the harness failed, not the agent). A memory
that raises is logged and recorded as that trial's ``error``; the run goes on. Each decision
is handed to ``on_admission`` and kept on the runner's trial dict as ``memory``; the run's
stored config records which memory was attached.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hbeval_core.contract import (
    Adapter,
    Budgets,
    RateLimiter,
    RateLimitTooLong,
    Task,
    VirtualClock,
)
from hbeval_core.faults import Battery, measurement_fingerprint, task_for
from hbeval_core.faults.battery import plan_for_trial
from hbeval_core.faults.model import refuse_model_faults
from hbeval_core.vocab import (
    DEFAULT_SEED,
    DEFAULT_TRIALS,
    DERIVE_VERSION,
    METHODOLOGY_A,
    METHODOLOGY_B,
    METHODOLOGY_C,
    OUTCOME_PASS,
    OUTCOME_SKIPPED,
    SCORING_VERSION,
)

from ..scoring import Report, add_consistency, build_report
from ..scoring._binding import bind_report, bound_trials
from ..scoring._csi_runs import select_csi_history, task_digest, with_csi_runs
from ..scoring._text_signals import is_text_signal_judge
from ..scoring._until_decided import (
    STOP_DECIDED,
    WaveDecision,
    sequential_record,
    wave_decision,
)
from ..store import (
    DEFAULT_MAX_RESULT_BYTES,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_INTERRUPTED,
    InMemoryStore,
    Redactor,
    RunRecord,
    make_trial_key,
)
from .manifest import (
    RunManifest,
    check_expected_hashes,
)
from .registry import ResolvedTarget, resolve_target

__all__ = [
    "DEFAULT_TIMEOUT",
    "ProgressUpdate",
    "VirtualClock",
    "abandoned_threads",
    "default_run_id",
    "reusable_report",
    "run_battery",
    "trial_run_id",
]

from hbeval_core.contract._ratelimit import limiter_stats_used

from .._gc import collector_paused
from ..store.protocol import final_attempts
from ._admission import (
    _admit_run,
    _check_memory,
    _memory_config,
    _recall_view,
    _set_memory_hook,
)
from ._assign import check_assignment
from ._attempts import _Done, _Job, _Runner, abandoned_threads, trial_run_id
from ._budget import CostBudget
from ._execute import _interrupt_watch, always, run_parallel, run_serial
from ._provenance import loaded_sources, run_manifest
from ._resume import (
    KeptTrial,
    _record,
    _reload_trials,
    _resumed_trial,
    default_run_id,
    reusable_report,
)
from ._waves import WavesOutcome, check_until_decided, run_in_waves

log = logging.getLogger("hbeval.runner")

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
    if (
        judge is not None
        and methodology != METHODOLOGY_C
        and not (methodology == METHODOLOGY_B and is_text_signal_judge(judge))
    ):
        raise ValueError(
            "an independent judge is methodology C: pass methodology='C' with judge= "
            "(methodology B asks the agent's own judge; a judge with text_signals = True may "
            "answer B's text questions)"
        )
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise ValueError(f"agent_id must be a non-empty string (got {agent_id!r})")
    if not tasks:
        raise ValueError("tasks must hold at least one Task")
    for i, task in enumerate(tasks):
        if not isinstance(task, Task):
            raise ValueError(f"tasks[{i}] is a {type(task).__name__}, not a Task")


def run_battery(
    adapter: Adapter | str | None,
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
    rate_limit: float | None = None,
    max_cost: float | None = None,
    until_decided: float | None = None,
) -> Report:
    """Run ``battery`` against ``target`` on ``tasks`` and return the ``hbeval-report/1`` dict.

    ``adapter`` None picks one from the target (``registry.resolve_target``; a name such as
    ``"langgraph"`` takes that kind); ``target_kind`` forces ``factory``, ``agent`` or an
    adapter kind. ``battery`` is a ``Battery`` or its name ("hbeval" / "compat", built with
    ``seed``). ``store`` is a ``Recorder`` (a ``InMemoryStore`` when None). ``manifest``
    supplies budgets, a price table and pinned hashes; a pinned hash that differs raises
    ``ManifestMismatchError`` before anything runs. ``memory`` (an EDM) recalls the agent's
    precedents during trials and admits the run's scored trials at its end; ``on_admission``
    receives each trial's admission record. With ``reuse`` (and no ``run_id``), the report of
    a completed stored run with the same agent id, battery, measurement fingerprint and
    manifest hash is returned instead of running again; the manifest hash covers the target's
    source files and installed package versions, so a changed agent or environment always
    runs anew. Bad arguments raise ``ValueError`` naming the argument (rules: module docstring).

    ``executor`` is ``local`` (threads, ``concurrency``) or ``ray``: each trial is a Ray task on
    the cluster at ``ray_address`` (``auto``, ``host:port``; None starts a local Ray), taking
    ``ray_cpus_per_trial`` CPUs (``runner._ray``). ``async`` is what ``arun_battery`` passes:
    trials run as with ``local``, and the report names the executor.

    ``rate_limit`` caps the run's model calls per minute (every trial, every worker, together);
    HTTP 429s pause the run whether or not it is given. ``max_cost`` (USD) stops new trials once
    the run has spent it, priced by the manifest's ``price_table`` (refused without one).

    ``until_decided`` (a confidence, e.g. 0.95) runs the trials in waves, one trial of every
    scenario per wave, up to ``trials`` waves, and stops once the verdict is decided at that
    confidence by an always-valid bound clustered by scenario (``runner._waves``); the report's
    ``run.until_decided`` records the waves run, why the run stopped and the bound.
    """
    # Long because: the body is the run's phases in order (check, identify, open or reuse the run,
    # resume, execute, admit, report), each in a helper; what stays here is the state they hand each
    # other, which is easier to follow in one place.
    _check_args(
        tasks, trials, seed, concurrency, timeout, methodology, judge, max_infra_retries, agent_id
    )
    if not timeout:
        timeout = None
    until_decided = check_until_decided(until_decided, executor)
    _check_memory(memory)
    declared = getattr(tasks, "declared", None)  # a task file's inputs: and env:
    tasks = list(tasks)
    battery = _battery_for(battery, seed)
    check_assignment(battery, tasks)
    fps = _Fingerprints.of(battery, seed, trials)
    check_expected_hashes(
        manifest,
        {
            "measurement_fingerprint": fps.measurement,
            "battery_fingerprint": fps.spec,
            "plan_fingerprint": fps.plan,
        },
    )
    budgets = manifest.budgets if manifest is not None else Budgets()
    if redactor is None:
        redactor = _redactor_for(manifest)
    resolved = _resolve(target, target_kind, adapter, executor, concurrency)
    refuse_model_faults(battery, resolved.adapter)
    workers = concurrency if resolved.isolated else 1
    manifest = run_manifest(
        manifest,
        target,
        resolved,
        tasks,
        battery,
        redactor,
        budgets,
        seed=seed,
        trials=trials,
        agent_id=agent_id,
        methodology=methodology,
        judge=judge,
        judge_label=judge_label,
        concurrency=concurrency,
        timeout=timeout,
        clock=clock,
        declared=declared,
    )
    manifest_hash = manifest.manifest_hash()
    budget = CostBudget.for_run(max_cost, manifest.to_dict())
    limiter = RateLimiter(rate_limit)

    if store is None:
        store = InMemoryStore()
    identity = {
        "agent_id": agent_id,
        "battery": battery.kind,
        "measurement_fingerprint": fps.measurement,
        "manifest_hash": manifest_hash,
    }
    if reuse and run_id is None:
        stored_report = reusable_report(store, identity)
        if stored_report is not None:
            return stored_report
    if run_id is None:
        run_id = default_run_id(store, agent_id, fps.measurement, identity)
    elif not isinstance(run_id, str) or not run_id.strip():
        raise ValueError(f"run_id must be a non-empty string (got {run_id!r})")
    manifest = manifest.with_updates(run_id=run_id, created_at=time.time())
    started_at = time.time()
    _start_run(
        store, run_id, agent_id, battery, fps, manifest, manifest_hash, resolved, memory, executor,
        started_at,
    )  # fmt: skip

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
        native_async=executor == EXECUTOR_ASYNC,
        limiter=limiter,
        memory_run=(
            None
            if memory is None
            else {
                "run_id": run_id,
                "agent_id": agent_id,
                "fingerprints": {"battery_spec": fps.spec, "measurement": fps.measurement},
            }
        ),
    )
    jobs = _jobs(battery, tasks, trials, seed)
    tally = _Tally(run_id, len(jobs), progress)
    pending = tally.resume(runner, jobs, store)
    may_start: Callable[[], bool] = always
    if budget is not None:
        for resumed in tally.trials.values():
            budget.add(resumed)
        may_start = budget.allows
    # A finished trial is in the store: with a store that is not in memory anyway, its dict is
    # read back for the report at the end instead of held, so memory does not grow with trials.
    tally.slim = memory is None and not isinstance(store, InMemoryStore) and not until_decided

    def counted(key: str, trial: Any, outcome: str, episode: Any) -> None:
        if budget is not None:
            budget.add(trial if trial is not None else _stored_trial(store, run_id, key))
        tally.finished(key, trial, outcome, episode)

    def finish(done: _Done) -> None:
        _record(store, run_id, done)
        counted(done.job.key, done.trial, done.outcome, done.episode)

    run_info = {
        "run_id": run_id,
        "agent_id": agent_id,
        "battery": battery.kind,
        "seed": seed,
        "trials": trials,
        "methodology": methodology,
        "judge": manifest.judge,
        "task_digest": task_digest(tasks),
        "fingerprints": {
            "battery_spec": fps.spec,
            "plan": fps.plan,
            "measurement": fps.measurement,
        },
        "manifest_hash": manifest_hash,
        "manifest": manifest.to_dict(),
        "started_at": started_at,
        "ended_at": None,
        "executor": executor,
        "nodes": [],
    }

    def decide(waves: int) -> WaveDecision:
        records = [
            tally.trials[j.key] for j in jobs if j.trial_index < waves and j.key in tally.trials
        ]
        partial = build_report(run=run_info, trials=bound_trials(run_id, records), history=[])
        return wave_decision(partial, float(until_decided or 0.95))

    waves: WavesOutcome | None = None
    nodes: list[str] = []
    limits: dict[str, Any] = {}
    view = None if memory is None else _recall_view(memory, agent_id)
    runner.adapter.instrument()
    if memory is not None:
        _set_memory_hook(runner.adapter, view)
    try:
        with _interrupt_watch():
            if executor == EXECUTOR_RAY:
                from ._ray import RayPlan, ray_finished, run_on_ray

                plan = RayPlan.for_run(
                    runner,
                    target,
                    manifest,
                    store,
                    address=ray_address,
                    cpus=ray_cpus_per_trial,
                    memory=view,
                )
                on_trial = ray_finished(runner, jobs, store, counted, memory is not None)
                nodes = run_on_ray(plan, pending, store, on_trial, may_start, limits)
            elif until_decided is not None:

                def execute(wave: list[_Job]) -> None:
                    if workers == 1:
                        run_serial(runner, wave, finish, may_start)
                    else:
                        run_parallel(runner, wave, workers, finish, may_start)

                waves = run_in_waves(pending, trials, execute, may_start, decide)
            elif workers == 1:
                run_serial(runner, pending, finish, may_start)
            else:
                run_parallel(runner, pending, workers, finish, may_start)
        left = [j for j in jobs if j.key not in tally.trials]
        decided = waves is not None and waves.stopped == STOP_DECIDED
        if waves is not None and decided:  # the report covers the waves run, no more
            jobs = [j for j in jobs if j.trial_index < waves.waves_run and j.key in tally.trials]
            left = []
        if memory is not None and not left:
            _admit_run(memory, jobs, tally.trials, tally.episodes, on_admission)
    except (KeyboardInterrupt, RateLimitTooLong):
        store.finish_run(run_id, RUN_INTERRUPTED)
        raise
    except BaseException:
        store.finish_run(run_id, RUN_FAILED)
        raise
    finally:
        if memory is not None:
            _set_memory_hook(runner.adapter, None)
        runner.adapter.uninstrument()
        runner.close()
        _warn_abandoned()

    run_info["nodes"] = nodes
    if waves is not None:
        run_info["until_decided"] = sequential_record(
            waves.decision,
            waves_run=waves.waves_run,
            max_waves=trials,
            stopped=waves.stopped,
            confidence=float(until_decided or 0.95),
            trials_run=sum(1 for j in jobs if j.key in tally.trials),
            trials_planned=len(battery.scenarios) * trials,
        )
    stats = limits or limiter.stats()
    if limiter_stats_used(stats):
        run_info["rate_limit"] = stats
    if budget is not None:
        run_info["budget"] = budget.record(left_trials=bool(left))
    with collector_paused():  # many objects, no cycles (runner._gc)
        return _report_run(store, runner, jobs, tally, run_info, stopped=bool(left))


def _report_run(
    store: Any,
    runner: _Runner,
    jobs: list[_Job],
    tally: _Tally,
    run_info: dict[str, Any],
    *,
    stopped: bool,
) -> Report:
    """The run's report over the trials that ran, stored; ``stopped``: the budget stopped the
    run, which stays open to be resumed. Trial dicts read back from the store live only here."""
    ran = [j for j in jobs if j.key in tally.trials]  # all of them unless the budget stopped it
    trial_dicts = tally.trials
    if tally.slim:
        trial_dicts = dict(trial_dicts)
        _reload_trials(runner, ran, store, trial_dicts, tally.kept)
    run_info["ended_at"] = time.time()
    records = bound_trials(run_info["run_id"], [trial_dicts[j.key] for j in ran])
    if stopped:
        report = _bound(
            add_consistency(build_report(run=run_info, trials=records, history=[]), store)
        )
        store.finish_run(run_info["run_id"], RUN_INTERRUPTED)
        return report
    return _finish_report(store, run_info, records)


def _bound(report: Report) -> Report:
    """The report with the user code its trials loaded (``_provenance``) and its binding."""
    return bind_report(report.model_copy(update={"loaded_sources": loaded_sources()}))


def _stored_trial(store: Any, run_id: str, key: str) -> dict[str, Any] | None:
    """The verdict's usage of a trial another Ray delivery recorded (for the cost budget)."""
    for record in store.list_trials(run_id):
        if record.trial_key == key and isinstance(record.verdict, Mapping):
            return {"usage": record.verdict.get("usage")}
    return None


def _battery_for(battery: Any, seed: int) -> Any:
    """The ``Battery`` (built from its name with ``seed``); refuses one built with another seed."""
    if isinstance(battery, str):
        battery = Battery.build(battery, seed=seed)
    if getattr(battery, "seed", seed) != seed:
        raise ValueError(
            f"the battery was built with seed {battery.seed} but seed={seed}; build it with the "
            "run's seed so one seed reproduces the run"
        )
    return battery


@dataclass(frozen=True)
class _Fingerprints:
    """The battery's spec and plan fingerprints and the measurement fingerprint over them."""

    spec: str
    plan: str
    measurement: str

    @classmethod
    def of(cls, battery: Any, seed: int, trials: int) -> _Fingerprints:
        spec = battery.spec_fingerprint()
        plan = battery.plan_fingerprint()
        measurement = measurement_fingerprint(
            spec, battery.build_version, plan, seed, trials, SCORING_VERSION, DERIVE_VERSION
        )
        return cls(spec, plan, measurement)


def _redactor_for(manifest: RunManifest | None) -> Redactor:
    """The redactor the manifest's rules describe (the defaults without a manifest)."""
    return Redactor.from_rules(
        manifest.redact if manifest is not None else (),
        max_result_bytes=(
            manifest.max_result_bytes if manifest is not None else DEFAULT_MAX_RESULT_BYTES
        ),
    )


def _resolve(
    target: Any,
    target_kind: str | None,
    adapter: Adapter | str | None,
    executor: str,
    concurrency: int,
) -> ResolvedTarget:
    """The target's adapter and kind, checked against the executor."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; got {executor!r}")
    resolved = resolve_target(target, target_kind=target_kind, adapter=adapter)
    if executor == EXECUTOR_RAY and not resolved.isolated:
        raise ValueError(
            "executor='ray' needs a factory target (each trial builds its agent on a worker); "
            "this target is a shared agent object"
        )
    if not resolved.isolated and concurrency > 1:
        log.warning("the target is a shared agent object: its trials run serially (not isolated)")
    return resolved


def _start_run(
    store: Any,
    run_id: str,
    agent_id: str,
    battery: Any,
    fps: _Fingerprints,
    manifest: RunManifest,
    manifest_hash: str,
    resolved: ResolvedTarget,
    memory: Any,
    executor: str,
    started_at: float,
) -> None:
    """Open (or reopen, on resume) the run in the store with its config."""
    config: dict[str, Any] = {
        "manifest": manifest.to_dict(),
        "isolated": resolved.isolated,
        "spec_fingerprint": fps.spec,
        "plan_fingerprint": fps.plan,
    }
    if memory is not None:
        config["memory"] = _memory_config(memory)
    config["executor"] = executor
    store.start_run(
        RunRecord(
            run_id=run_id,
            agent_id=agent_id,
            battery=battery.kind,
            measurement_fingerprint=fps.measurement,
            manifest_hash=manifest_hash,
            config=config,
            created_at=started_at,
        )
    )


def _jobs(battery: Any, tasks: Sequence[Task], trials: int, seed: int) -> list[_Job]:
    """Every scenario x trial index of the run, in report order, each with its fault plan."""
    jobs: list[_Job] = []
    for scenario in battery.scenarios:
        task = task_for(scenario, tasks)
        for k in range(trials):
            key = make_trial_key(scenario.index, k)
            plan = plan_for_trial(scenario, seed, k)
            jobs.append(_Job(key, scenario, task, k, plan))
    return jobs


class _Tally:
    """The run's finished trials (resumed or recorded), with the progress they report."""

    def __init__(
        self, run_id: str, total: int, progress: Callable[[ProgressUpdate], None] | None
    ) -> None:
        self.run_id = run_id
        self.total = total
        self.progress = progress
        self.trials: dict[str, dict[str, Any]] = {}
        self.episodes: dict[str, dict[str, Any] | str | None] = {}
        self.failed = 0
        self.resumed = 0
        self.slim = False
        """True: trial dicts are read back from the store at the end instead of held."""
        self.kept: dict[str, KeptTrial] = {}
        """Model calls, interventions and final error of each trial not held (its attempts and
        events stay in the store)."""

    def resume(self, runner: _Runner, jobs: list[_Job], store: Any) -> list[_Job]:
        """Take the trials the store already holds; returns the jobs still to run."""
        stored = {r.trial_key: r for r in store.list_trials(self.run_id)}
        finals = final_attempts(store, self.run_id)
        pending: list[_Job] = []
        for job in jobs:
            record = stored.get(job.key)
            if record is not None:
                self.trials[job.key], self.episodes[job.key] = _resumed_trial(
                    runner, job, store, record, finals.get(job.key)
                )
            else:
                if job.key in finals:  # an interrupted earlier try: keep its attempts
                    job.first_attempt = finals[job.key].attempt + 1
                pending.append(job)
        self.resumed = len(self.trials)
        self.failed = sum(1 for t in self.trials.values() if t["outcome"] != OUTCOME_PASS)
        if self.progress is not None:
            self.progress(
                ProgressUpdate(
                    self.run_id, self.resumed, self.total, self.failed, self.resumed, None
                )
            )
        return pending

    def finished(
        self,
        key: str,
        trial: dict[str, Any] | None,
        outcome: str,
        episode: dict[str, Any] | str | None,
    ) -> None:
        """Count a recorded trial; ``trial`` None: read it back from the store at the end."""
        if trial is None:
            self.slim = True
        elif self.slim and outcome != OUTCOME_SKIPPED:
            # (A skipped trial's dict has no error while its stored attempt has one: it is
            # read back in full.)
            usage = trial["usage"]
            self.kept[key] = (usage["model_calls"], usage["interventions"], trial.get("error"))
        self.trials[key] = None if self.slim else trial  # type: ignore[assignment]
        self.episodes[key] = episode
        if outcome != OUTCOME_PASS:
            self.failed += 1
        if self.progress is not None:
            self.progress(
                ProgressUpdate(
                    self.run_id, len(self.trials), self.total, self.failed, self.resumed, trial
                )
            )


def _warn_abandoned() -> None:
    still = abandoned_threads()
    if still:
        log.warning(
            "%d agent thread(s) cut by the timeout are still running in the background "
            "(abandoned daemon threads): %s",
            len(still),
            ", ".join(still[:5]) + (", ..." if len(still) > 5 else ""),
        )


def _finish_report(store: Any, run_info: dict[str, Any], records: list[Any]) -> Report:
    """Build the report over the run's trials and its history, store it, and close the run."""
    run_id = run_info["run_id"]
    history, csi_runs = select_csi_history(store, run_info)
    report = add_consistency(build_report(run=run_info, trials=records, history=history), store)
    report = _bound(with_csi_runs(report, csi_runs))
    if not store.get_metrics(run_id).values:
        run_metrics = report.metrics.model_dump(mode="json")
        undefined = report.undefined
        store.record_metrics(
            run_id,
            None,
            run_metrics,
            {k: undefined.get(k, "not_measured") for k, v in run_metrics.items() if v is None},
        )
    store.finish_run(run_id, RUN_COMPLETED, report)
    return report
