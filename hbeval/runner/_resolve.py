"""What a battery runs on, resolved the same way for ``hbeval.run_battery``, pytest and the CLI.

* ``resolve_target(target, tasks)``: an agent, a factory or a ``path.py:attr`` / ``module:attr``
  reference, and its tasks (a list of ``Task``, a task file, a reference, or by default the
  ``tasks`` beside the target);
* ``resolve_battery(battery, ...)``: ``None`` (the built-in ``hbeval`` battery), a built-in's
  name, a battery file (``.yaml``, ``.yml``, ``.json``) or a ``Battery`` already built.

Each refusal is a ``ValueError`` naming the argument as the caller spells it (``battery`` for
Python, ``--battery`` for the command line: ``names``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hbeval_core.vocab import DEFAULT_SCENARIOS, DEFAULT_SEED

__all__ = ["ResolvedTarget", "resolve_battery", "resolve_target"]

_PYTHON_NAMES: Mapping[str, str] = {
    "battery": "battery",
    "fault_types": "fault_types",
    "domains": "domains",
    "scenarios": "scenarios",
    "perturb": "perturb",
}


@dataclass(frozen=True)
class ResolvedTarget:
    """A target and its tasks as a run needs them, with the references a manifest records."""

    target: Any
    tasks: Any
    """A list of ``Task``, or a task file / ``module:attr`` for ``load_tasks``."""
    target_ref: str | None
    tasks_ref: str | None
    name: str
    """The target's own name: the default agent id."""


def _agent_name(target: Any) -> str:
    name = getattr(target, "__name__", None)
    if isinstance(name, str) and name and name != "<lambda>":
        return name
    return type(target).__name__


def resolve_target(target: Any, tasks: Any = None) -> ResolvedTarget:
    """The object behind ``target`` and where its tasks come from (rules: module docstring)."""
    from .loader import TargetError, load_object, split_reference

    if isinstance(target, (str, Path)):
        ref = str(target)
        try:
            module_part, attr = split_reference(ref)
            obj = load_object(ref)
        except TargetError as exc:
            raise ValueError(f"target: {exc}") from None
        source = tasks if tasks is not None else f"{module_part}:tasks"
        tasks_ref = source if isinstance(source, (str, Path)) else None
        return ResolvedTarget(
            obj, source, ref, None if tasks_ref is None else str(tasks_ref), attr.split(".")[-1]
        )
    if target is None:
        raise ValueError("target is missing: give an agent, a factory or 'path.py:attr'")
    if tasks is None:
        module = inspect.getmodule(target)
        found = getattr(module, "tasks", None) if module is not None else None
        if found is None:
            raise ValueError(
                "tasks is missing: pass tasks=[Task(...)] (or a task file / module:attr); "
                f"{_agent_name(target)}'s module defines no 'tasks'"
            )
        tasks = found
    tasks_ref = str(tasks) if isinstance(tasks, (str, Path)) else None
    return ResolvedTarget(target, tasks, None, tasks_ref, _agent_name(target))


def _refuse_perturb_with_file(perturb: Sequence[str] | None, names: Mapping[str, str]) -> None:
    if perturb:
        raise ValueError(
            f"{names.get('perturb', 'perturb')}: a battery file names its own perturbation "
            "families; add 'perturb: [context]' to the file instead"
        )


def resolve_battery(
    battery: Any = None,
    *,
    scenarios: int | None = None,
    seed: int = DEFAULT_SEED,
    fault_types: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    names: Mapping[str, str] = _PYTHON_NAMES,
    perturb: Sequence[str] | None = None,
) -> Any:
    """The battery ``battery`` names, built with ``seed``; a ``Battery`` is returned as given.

    ``scenarios``, ``fault_types`` and ``domains`` shape a built-in battery; a battery file names
    its own scenarios, so giving them with one is refused.
    """
    from hbeval_core.faults import BATTERY_HBEVAL, BATTERY_KINDS, DOMAINS, FAULT_TYPES, Battery
    from hbeval_core.faults.compat import MAX_SCENARIOS, MIN_SCENARIOS
    from hbeval_core.faults.perturb import check_perturb
    from hbeval_core.faults.userbattery import BatteryFileError, is_battery_file, load_battery_file

    if battery is None:
        battery = BATTERY_HBEVAL
    if isinstance(battery, Path):
        battery = str(battery)
    if not isinstance(battery, str):
        return battery
    if is_battery_file(battery):
        _refuse_perturb_with_file(perturb, names)
        given = [
            field
            for field, value in (
                ("fault_types", fault_types),
                ("domains", domains),
                ("scenarios", scenarios),
            )
            if value
        ]
        if given:
            flag = names[given[0]]
            raise ValueError(f"{flag}: a battery file names its own scenarios; remove {flag}")
        try:
            return load_battery_file(battery, seed=seed)
        except BatteryFileError as exc:
            raise ValueError(str(exc).replace("--battery", names["battery"], 1)) from None
    if battery not in BATTERY_KINDS:
        raise ValueError(
            f"{names['battery']} must be one of {', '.join(BATTERY_KINDS)} or a battery file "
            f"(.yaml, .yml, .json) (got {battery!r})"
        )
    count = DEFAULT_SCENARIOS if scenarios is None else scenarios
    families = check_perturb(perturb, names.get("perturb", "perturb"))
    if battery == BATTERY_HBEVAL:
        # The compat battery keeps the reference's silent fallbacks and clamping on purpose.
        bad = [f for f in fault_types or () if f not in FAULT_TYPES]
        if bad:
            raise ValueError(
                f"{names['fault_types']} {bad[0]!r} is unknown; valid: {', '.join(FAULT_TYPES)}"
            )
        bad = [d for d in domains or () if d not in DOMAINS]
        if bad:
            raise ValueError(
                f"{names['domains']} {bad[0]!r} is unknown; valid: {', '.join(DOMAINS)}"
            )
        if not MIN_SCENARIOS <= count <= MAX_SCENARIOS:
            raise ValueError(
                f"{names['scenarios']} must be {MIN_SCENARIOS} to {MAX_SCENARIOS} (got {count})"
            )
    try:
        return Battery.build(
            battery,
            count,
            seed,
            list(fault_types) if fault_types else None,
            list(domains) if domains else None,
            list(families) or None,
        )
    except ValueError as exc:
        raise ValueError(f"{names['battery']}: {exc}") from None
