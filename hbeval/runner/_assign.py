"""Scenarios meet the tasks that use their tools: checked before a run starts.

A scenario runs the task it is pinned to (a battery file's ``tasks:``, or ``--matrix``), else
task ``index mod len(tasks)``. Before the first trial:

* a pinned task id the tasks do not hold is refused, naming the scenario and the tasks;
* when every task a fault scenario meets declares its tools (``tools:`` in the task file), and
  none of them calls a tool the scenario targets, the scenario could never deliver its fault:
  it is refused, naming the scenario, its tools and each task's tools, with the fix.

Tasks that do not declare their tools are not checked here; a fault that never reached the agent
is then reported after the run (``_delivery``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hbeval_core.faults import task_for
from hbeval_core.faults.plans import target_matches

__all__ = ["check_assignment"]


def _tasks_of(battery: Any, tasks: Sequence[Any]) -> dict[str, tuple[tuple[str, ...], list[Any]]]:
    """Each fault scenario label's targets and the tasks its scenarios run (in order)."""
    groups: dict[str, tuple[tuple[str, ...], list[Any]]] = {}
    for scenario in battery.scenarios:
        targets = tuple(getattr(scenario, "targets", ()) or ())
        task = task_for(scenario, tasks)  # raises for a pin the tasks do not hold
        if not targets:
            continue
        _, met = groups.setdefault(str(scenario.fault_type), (targets, []))
        if task not in met:
            met.append(task)
    return groups


def check_assignment(battery: Any, tasks: Sequence[Any]) -> None:
    """Raise ValueError for a pin to an unknown task, or a scenario no task can meet."""
    for label, (targets, met) in _tasks_of(battery, tasks).items():
        declared = [getattr(t, "tools", None) for t in met]
        if any(d is None for d in declared):
            continue  # some task does not say which tools it calls: nothing to check
        called = [tool for d in declared for tool in d or ()]
        if any(target_matches(target, tool) for tool in called for target in targets):
            continue
        calls = "; ".join(
            f"task {t.id} calls {', '.join(t.tools) if t.tools else 'no tool'}" for t in met
        )
        raise ValueError(
            f"scenario {label!r}: none of its tasks calls {', '.join(repr(x) for x in targets)} "
            f"({calls}), so its fault could never reach the agent; pin it to a task that calls "
            "the tool (tasks: [...] in the battery file), run the scenario x task matrix "
            "(--matrix), or target a tool these tasks call"
        )
