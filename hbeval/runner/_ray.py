"""Trials as Ray tasks: ``run_battery(..., executor="ray")`` and ``battery run --executor ray``.

The driver (the process that called ``run_battery``) plans the run as usual, then sends each
pending trial to the cluster as one Ray task. What travels is small and plain: once per run a
:class:`RayPlan` (the target's reference ``path.py:attr`` or ``module:attr``, the task list, the
battery, the runner's settings and the store's URL), and per trial its scenario index, trial
index and first attempt number. Each worker process loads the target by its reference, builds
the runner once, and per trial rebuilds the trial's fault plan from the run seed, exactly as the
driver would: so the verdicts are those of a local run with the same seed.

Memory: the run's recall view (an EDM's pre-run snapshot) travels pickled in the plan and is
hooked into each worker's adapter; workers only recall. Their trials' episodes come back with
the results and the driver admits them after the last trial, in trial order, as a local run does.

Results: with a PostgreSQL store the worker writes the trial bundle itself (one transaction) and
returns only the trial's summary; with any other store (SQLite is one file on the driver's
machine) it returns the bundle and the driver writes it. Either way the driver counts and
reports trials as they finish.

Failures of the system itself:

- A worker process or node that dies takes its running trials with it; nothing of them was
  written (a bundle is one transaction), and Ray runs those tasks again elsewhere
  (``max_retries``). A retried task first looks in the store: a trial already recorded is not
  run again. Two deliveries of one trial cannot both be stored: trial and attempt keys are
  unique and a clash is refused; the worker that loses reports the trial as recorded and the
  driver reads the stored one. So every (scenario, trial) ends with exactly one final attempt.
- A driver that dies leaves the run ``running`` in the store: running the same command again
  resumes it (the default run id finds the unfinished run), skipping recorded trials.
- A task that still fails after Ray's retries fails the run (``failed``); rerun to resume.

Shared limits: the run's rate limiter is one named actor on the driver's node
(``runner._ray_control``), which every worker's trials consult before each model call, so a
429 seen on one node pauses all of them. A cost budget is checked by the driver: with one,
trials are submitted only as cluster slots free up, each after the budget allowed it.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hbeval_core.faults import task_for
from hbeval_core.faults.battery import plan_for_trial

from ..store import DuplicateRecordError, PostgresStore, open_store
from .loader import load_object
from .manifest import RunManifest
from .registry import resolve_target

log = logging.getLogger("hbeval.runner")

MAX_TASK_RETRIES = 3
"""Times Ray reruns a trial whose worker process or node died."""


@dataclass(frozen=True)
class RayPlan:
    """What every worker needs to run any trial of one run (sent once, by reference)."""

    key: str
    """Unique per ``run_battery`` call: the workers' cache key for the built runner."""
    target_ref: str
    adapter_kind: str
    payload: bytes
    """The tasks, the battery and the runner's settings (run id, seed, timeout, ...), pickled:
    unpickled on the worker only after the target's module is loaded, since a task's verifier
    may live in it."""
    run_id: str
    store_url: str | None
    """Where workers write their trials (PostgreSQL); None: they return them to the driver."""
    sys_path: tuple[str, ...]
    cwd: str
    address: str | None = None
    cpus: float = 0.25
    limiter_name: str = ""
    """The run's limiter actor (``runner._ray_control``)."""
    rpm: float | None = None
    max_pause: float = 120.0
    memory: bytes | None = None
    """What the trials recall from (the memory's pre-run snapshot, ``_admission._recall_view``),
    pickled; None without memory. Admission stays with the driver."""

    @classmethod
    def for_run(
        cls,
        runner: Any,
        target: Any,
        manifest: RunManifest,
        store: Any,
        *,
        address: str | None,
        cpus: float,
        memory: Any = None,
    ) -> RayPlan:
        """The plan of a run, checking on the driver that a worker can load the target."""
        _ray()
        ref = manifest.target
        if not ref or _loaded(ref) is not target:
            raise ValueError(
                "executor='ray' needs a target a worker can import by reference "
                f"(path.py:attr or module:attr); {ref!r} does not load the target given"
            )
        if not isinstance(cpus, (int, float)) or isinstance(cpus, bool) or not 0 < cpus <= 64:
            raise ValueError(f"ray_cpus_per_trial must be a number in (0, 64]; got {cpus!r}")
        settings = {
            "run_id": runner.run_id,
            "agent_id": runner.agent_id,
            "trials": runner.trials,
            "seed": runner.seed,
            "timeout": runner.timeout,
            "budgets": runner.budgets,
            "clock": runner.clock,
            "methodology": runner.methodology,
            "judge": runner.judge,
            "max_infra_retries": runner.max_infra_retries,
            "redactor": runner.redactor,
            "memory_run": runner.memory_run,
        }
        import ray.cloudpickle

        from ._ray_control import RayLimiter

        key = f"{runner.run_id}/{uuid.uuid4().hex}"
        limiter_name = f"hbeval-limits-{uuid.uuid4().hex}"
        settings["limiter"] = RayLimiter(limiter_name)
        dumps: Callable[[Any], bytes] = ray.cloudpickle.dumps
        payload = dumps({"tasks": list(runner.tasks), "battery": runner.battery, **settings})
        local = runner.limiter
        try:
            recall = None if memory is None else dumps(memory)
        except Exception as exc:
            raise ValueError(
                "memory= must pickle to travel to Ray workers (an EDM travels as its snapshot); "
                f"{type(memory).__name__} does not: {type(exc).__name__}: {exc}"
            ) from exc
        return cls(
            key=key,
            target_ref=ref,
            adapter_kind=runner.resolved.adapter_kind,
            payload=payload,
            run_id=runner.run_id,
            store_url=store.url if isinstance(store, PostgresStore) else None,
            sys_path=tuple(p for p in sys.path if p),
            cwd=os.getcwd(),
            address=address,
            cpus=float(cpus),
            limiter_name=limiter_name,
            rpm=getattr(local, "rpm", None),
            max_pause=float(getattr(local, "max_pause", 120.0)),
            memory=recall,
        )


def _loaded(ref: str) -> Any:
    try:
        return load_object(ref)
    except ValueError:
        return None


@dataclass
class TrialOutput:
    """What a worker hands back for one trial."""

    key: str
    node: str
    outcome: str
    trial: dict[str, Any] | None
    """The trial's dict for the report; None when the stored trial must be read back."""
    bundle: Any = None
    """The trial's records when the driver writes them (``run.TrialBundle``)."""
    episode: Any = None
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- the worker side
_WORKER_LOCK = threading.Lock()
_WORKER_STATE: dict[str, tuple[Any, Any]] = {}


def _worker_state(plan: RayPlan) -> tuple[Any, Any]:
    """This worker process's runner (and store) for the plan, built on first use."""
    from ._admission import _set_memory_hook
    from ._attempts import _Runner

    with _WORKER_LOCK:
        state = _WORKER_STATE.get(plan.key)
        if state is not None:
            return state
        for entry in reversed(plan.sys_path):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        target = load_object(plan.target_ref, base_dir=Path(plan.cwd))
        resolved = resolve_target(target, target_kind=plan.adapter_kind)
        runner = _Runner(resolved=resolved, **pickle.loads(plan.payload))
        runner.adapter.instrument()  # for the life of this worker process
        if plan.memory is not None:  # recall only: the driver admits after the last trial
            _set_memory_hook(runner.adapter, pickle.loads(plan.memory))
        store = open_store(plan.store_url) if plan.store_url is not None else None
        _WORKER_STATE.clear()  # one run at a time per worker process
        _WORKER_STATE[plan.key] = (runner, store)
        return runner, store


def node_name() -> str:
    """``host/node-id`` of the Ray node running this code (the node id tells nodes apart)."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    return f"{socket.gethostname()}/{node[:12]}"


def run_trial_task(plan: RayPlan, spec: tuple[str, int, int, int]) -> TrialOutput:
    """The body of one Ray task: run (or find already recorded) one trial."""
    from ._attempts import _Job
    from ._resume import trial_bundle

    key, scenario_index, trial_index, first_attempt = spec
    runner, store = _worker_state(plan)
    node = node_name()
    run_id = runner.run_id
    if store is not None and key in store.completed_trial_keys(run_id):
        return TrialOutput(key, node, "", None, notes=["already recorded"])
    scenario = next(s for s in runner.battery.scenarios if s.index == scenario_index)
    task = task_for(scenario, runner.tasks)
    fault_plan = plan_for_trial(scenario, runner.seed, trial_index)
    job = _Job(key, scenario, task, trial_index, fault_plan, first_attempt)
    done = runner.run_trial(job)
    bundle = trial_bundle(run_id, done)
    if store is None:
        return TrialOutput(key, node, done.outcome, done.trial, bundle, done.episode)
    try:
        store.record_trial_bundle(*bundle.args, **bundle.kwargs)
    except DuplicateRecordError:
        # Another delivery of this trial was stored first (a retried task); that one stands.
        return TrialOutput(key, node, "", None, notes=["recorded by another delivery"])
    return TrialOutput(key, node, done.outcome, done.trial, None, done.episode)


# ----------------------------------------------------------------------------- the driver side
def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ValueError("executor='ray' needs Ray: pip install 'hbeval[ray]'") from None
    return ray


def run_on_ray(
    plan: RayPlan,
    jobs: Sequence[Any],
    store: Any,
    finished: Callable[[str, dict[str, Any] | None, str, Any], None],
    may_start: Callable[[], bool] | None = None,
    limits: dict[str, Any] | None = None,
) -> list[str]:
    """Run ``jobs`` as Ray tasks, recording each as it finishes; returns the nodes that ran any.

    Connects to ``plan.address`` (``auto``, ``host:port``), or starts a local Ray when it is
    None, unless this process is already connected; a Ray started here is shut down at the end.
    ``may_start`` (a cost budget) is asked before each submission; with it, trials are
    submitted only as the cluster's slots free up. ``limits`` receives the rate limiter's
    figures at the end.
    """
    # Long because: connect, start the limiter, submit within the window, collect, and tear
    # down in order; the steps share the pending map and the actor, easier to follow together.
    ray = _ray()
    started_here = False
    if not ray.is_initialized():
        ray.init(
            address=plan.address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=False,
        )
        started_here = True
    nodes: set[str] = set()
    from ._ray_control import start_limiter

    actor: Any = None
    try:
        actor = start_limiter(ray, plan.limiter_name, plan.rpm, plan.max_pause)
        remote = ray.remote(
            num_cpus=plan.cpus,
            max_retries=MAX_TASK_RETRIES,
            retry_exceptions=False,
            scheduling_strategy="SPREAD",  # trials wait on models: use every node
        )(run_trial_task)
        plan_ref = ray.put(plan)
        queue = iter(jobs)
        window = len(jobs) if may_start is None else _slots(ray, plan.cpus)
        pending: dict[Any, Any] = {}

        def top_up() -> None:
            while len(pending) < window and (may_start is None or may_start()):
                job = next(queue, None)
                if job is None:
                    return
                spec = (job.key, job.scenario.index, job.trial_index, job.first_attempt)
                pending[remote.remote(plan_ref, spec)] = job

        try:
            top_up()
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    pending.pop(ref)
                    _collect(_result(ray, ref), store, plan.run_id, finished, nodes)
                top_up()
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        if limits is not None:
            limits.update(ray.get(actor.stats.remote()))
    finally:
        if actor is not None:
            ray.kill(actor)
        if started_here:
            ray.shutdown()
    return sorted(nodes)


def _slots(ray: Any, cpus: float) -> int:
    """Trials the cluster runs at once (its CPUs over each trial's share), at least one."""
    total = float(ray.cluster_resources().get("CPU", 1.0))
    return max(1, int(total / cpus + 1e-9))


def _result(ray: Any, ref: Any) -> TrialOutput:
    """A task's output; a worker's ``RateLimitTooLong`` is raised as itself, not Ray's wrapper."""
    from hbeval_core.contract import RateLimitTooLong

    try:
        out: TrialOutput = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, RateLimitTooLong):
            raise RateLimitTooLong(cause.asked, cause.cap) from None
        raise
    return out


def ray_finished(
    runner: Any,
    jobs: Sequence[Any],
    store: Any,
    finished: Callable[[str, dict[str, Any] | None, str, Any], None],
    with_memory: bool,
) -> Callable[[str, dict[str, Any] | None, str, Any], None]:
    """``finished``, except that with memory a trial recorded by another delivery (a retried
    task) is read back from the store with its episode, so it is offered for admission as the
    local executor would offer it."""
    if not with_memory:
        return finished
    from ..store.protocol import final_attempts
    from ._resume import _resumed_trial

    by_key = {job.key: job for job in jobs}

    def on_trial(key: str, trial: dict[str, Any] | None, outcome: str, episode: Any) -> None:
        if trial is None:
            record = next(t for t in store.list_trials(runner.run_id) if t.trial_key == key)
            final = final_attempts(store, runner.run_id).get(key)
            trial, episode = _resumed_trial(runner, by_key[key], store, record, final)
            outcome = record.outcome
        finished(key, trial, outcome, episode)

    return on_trial


def _collect(
    out: TrialOutput,
    store: Any,
    run_id: str,
    finished: Callable[[str, dict[str, Any] | None, str, Any], None],
    nodes: set[str],
) -> None:
    """Record (when the worker did not) and count one trial's output."""
    if out.trial is None:  # recorded in the store, by this task or another delivery
        stored = {t.trial_key: t for t in store.list_trials(run_id)}
        record = stored.get(out.key)
        outcome = record.outcome if record is not None else out.outcome
        finished(out.key, None, outcome, None)
        return
    nodes.add(out.node)
    if out.bundle is not None:
        store.record_trial_bundle(*out.bundle.args, **out.bundle.kwargs)
    finished(out.key, out.trial, out.outcome, out.episode)
