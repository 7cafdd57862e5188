"""The verbs at the top of ``hbeval``: run a battery on a target, read a report back.

``run_battery(target, ...)`` takes the target first and everything else by name, with the
command line's defaults: the built-in ``hbeval`` battery, 18 scenarios, 3 trials, seed 42, an
in-memory store. The adapter is found through the ``hbeval.adapters`` entry points. It returns
the typed ``Report``. ``hbeval.runner.run_battery(adapter, target, tasks, battery, ...)`` is the
engine underneath, for callers that hold each piece already.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hbeval_core.vocab import DEFAULT_SEED, DEFAULT_TRIALS

if TYPE_CHECKING:
    from .runner.run import ProgressUpdate
    from .scoring._report_model import Report

__all__ = ["arun_battery", "load_report", "run_battery"]


def _prepare(
    target: Any,
    tasks: Any,
    battery: Any,
    scenarios: int | None,
    seed: int,
    fault_types: Sequence[str] | None,
    domains: Sequence[str] | None,
    db: str | Path | None,
    store: Any,
    agent_id: str | None,
) -> tuple[Any, list[Any], Any, Any, str, Any, bool]:
    """``(target, tasks, battery, store, agent id, manifest, whether we opened the store)``."""
    from .runner._resolve import resolve_battery, resolve_target
    from .runner.loader import TaskFileError, load_tasks
    from .runner.manifest import RunManifest
    from .store import InMemoryStore, open_store

    resolved = resolve_target(target, tasks)
    try:
        task_list = load_tasks(resolved.tasks)
    except TaskFileError as exc:
        raise ValueError(f"tasks: {exc}") from None
    built = resolve_battery(
        battery, scenarios=scenarios, seed=seed, fault_types=fault_types, domains=domains
    )
    if store is not None and db is not None:
        raise ValueError("give store or db, not both")
    opened = store is None and db is not None
    if store is None:
        store = open_store(db) if db is not None else InMemoryStore()
    manifest = RunManifest(target=resolved.target_ref, tasks=resolved.tasks_ref)
    return (
        resolved.target,
        task_list,
        built,
        store,
        agent_id or "default",
        manifest,
        opened,
    )


def run_battery(
    target: Any,
    *,
    tasks: Any = None,
    battery: Any = None,
    trials: int = DEFAULT_TRIALS,
    scenarios: int | None = None,
    seed: int = DEFAULT_SEED,
    fault_types: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    db: str | Path | None = None,
    store: Any = None,
    agent_id: str | None = None,
    progress: Callable[[ProgressUpdate], None] | None = None,
    **options: Any,
) -> Report:
    """Run the fault battery on ``target`` and return its ``Report``.

    ``target`` is an agent, a factory of agents, or a ``path.py:attr`` / ``module:attr``
    reference; ``tasks`` a list of ``Task``, a task file or a reference (default: the ``tasks``
    beside the target). ``battery`` is None (the built-in ``hbeval`` battery), ``"hbeval"``,
    ``"compat"``, a battery file or a ``Battery``; ``scenarios``, ``fault_types`` and ``domains``
    shape a built-in one. ``db`` (a path or URL) or ``store`` keeps the run (default: in
    memory); ``agent_id`` defaults to ``"default"``. Every other option of
    ``hbeval.runner.run_battery`` (``concurrency``, ``timeout``, ``judge``, ``memory``,
    ``executor``, ``max_cost``, ...) passes through. Bad arguments raise ``ValueError`` naming
    the argument.
    """
    from .runner.run import run_battery as engine

    obj, task_list, built, run_store, agent, manifest, opened = _prepare(
        target, tasks, battery, scenarios, seed, fault_types, domains, db, store, agent_id
    )
    options.setdefault("manifest", manifest)
    try:
        return engine(
            None,
            obj,
            task_list,
            built,
            trials=trials,
            seed=seed,
            store=run_store,
            agent_id=agent,
            progress=progress,
            **options,
        )
    finally:
        if opened:
            run_store.close()


async def arun_battery(
    target: Any,
    *,
    tasks: Any = None,
    battery: Any = None,
    trials: int = DEFAULT_TRIALS,
    scenarios: int | None = None,
    seed: int = DEFAULT_SEED,
    fault_types: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    db: str | Path | None = None,
    store: Any = None,
    agent_id: str | None = None,
    **options: Any,
) -> Report:
    """``run_battery`` from inside an event loop: trials run without blocking it."""
    from .runner._async import arun_battery as engine

    obj, task_list, built, run_store, agent, manifest, opened = _prepare(
        target, tasks, battery, scenarios, seed, fault_types, domains, db, store, agent_id
    )
    options.setdefault("manifest", manifest)
    try:
        return await engine(
            None,
            obj,
            task_list,
            built,
            trials=trials,
            seed=seed,
            store=run_store,
            agent_id=agent,
            **options,
        )
    finally:
        if opened:
            run_store.close()


def load_report(source: str | Path, *, db: str | Path | None = None) -> Report:
    """A report from a JSON file, or the stored report of run ``source`` in the store ``db``.

    Either way it is checked against its own trials first: a report whose figures were changed
    after hbeval built it raises ``ValueError`` naming each figure, as every reader refuses it.
    A file written by an older hbeval still loads.
    """
    from .scoring._recheck import checked_report

    if db is not None:
        from .store import open_store

        store = open_store(db, read_only=True)
        try:
            stored = store.get_report(str(source))
        finally:
            store.close()
        if stored is None:
            raise ValueError(f"no run {str(source)!r} with a report in the store {db}")
        return checked_report(stored, f"run {source}")
    from .scoring._report_model import read_report

    return checked_report(read_report(Path(source)), str(source))
