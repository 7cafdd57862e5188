"""Battery runs: tasks, targets and adapters, trials, isolation, outcomes, budgets and resume.

- ``run_battery(adapter, target, tasks, battery, ...)`` runs a battery and returns the report;
  ``await arun_battery(...)`` does the same from inside an event loop without blocking it.
- ``Task`` / ``load_tasks`` define the work; ``RunManifest`` / ``load_manifest`` pin a run.
- ``PlainAdapter`` runs ``agent(question) -> str | dict`` with ``@tool``, ``think`` and
  ``model_input`` making its faults and reasoning visible and ``precedents()`` handing it
  what memory recalled; ``register_adapter`` lets framework adapters add their own target
  kinds.
- ``Outcome`` is what a task's verifier reads, the same on every framework.
- ``current_trial()`` gives any adapter the trial in progress (ids, injector, budgets).

Names load on first use, so importing one submodule does not import the rest.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Adapter": "protocol",
    "TrialResult": "protocol",
    "Message": "outcome",
    "Outcome": "outcome",
    "ToolCall": "outcome",
    "Task": "task",
    "ExpectedCall": "task",
    "Budgets": "context",
    "BudgetExceeded": "context",
    "InfraError": "context",
    "TrialCancelled": "context",
    "TrialContext": "context",
    "TrialStop": "context",
    "current_trial": "context",
    "TargetError": "loader",
    "TaskFileError": "loader",
    "load_object": "loader",
    "load_tasks": "loader",
    "ManifestError": "manifest",
    "ManifestMismatchError": "manifest",
    "RunManifest": "manifest",
    "load_manifest": "manifest",
    "PlainAdapter": "plain",
    "ToolCallError": "plain",
    "claim": "plain",
    "model_input": "plain",
    "precedents": "plain",
    "replan": "plain",
    "think": "plain",
    "tool": "plain",
    "TargetKindError": "registry",
    "detect_target_kind": "registry",
    "register_adapter": "registry",
    "resolve_target": "registry",
    "ProgressUpdate": "run",
    "VirtualClock": "run",
    "run_battery": "run",
    "arun_battery": "_async",
    "run_demo": "demo",
}

__all__ = [
    "Adapter",
    "BudgetExceeded",
    "Budgets",
    "ExpectedCall",
    "InfraError",
    "ManifestError",
    "ManifestMismatchError",
    "Message",
    "Outcome",
    "PlainAdapter",
    "ProgressUpdate",
    "RunManifest",
    "TargetError",
    "TargetKindError",
    "Task",
    "TaskFileError",
    "ToolCall",
    "ToolCallError",
    "TrialCancelled",
    "TrialContext",
    "TrialResult",
    "TrialStop",
    "VirtualClock",
    "arun_battery",
    "claim",
    "current_trial",
    "detect_target_kind",
    "load_manifest",
    "load_object",
    "load_tasks",
    "model_input",
    "precedents",
    "register_adapter",
    "replan",
    "resolve_target",
    "run_battery",
    "run_demo",
    "think",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hbeval_core.runner' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from ._async import arun_battery
    from .context import (
        BudgetExceeded,
        Budgets,
        InfraError,
        TrialCancelled,
        TrialContext,
        TrialStop,
        current_trial,
    )
    from .demo import run_demo
    from .loader import TargetError, TaskFileError, load_object, load_tasks
    from .manifest import ManifestError, ManifestMismatchError, RunManifest, load_manifest
    from .outcome import Message, Outcome, ToolCall
    from .plain import (
        PlainAdapter,
        ToolCallError,
        claim,
        model_input,
        precedents,
        replan,
        think,
        tool,
    )
    from .protocol import Adapter, TrialResult
    from .registry import TargetKindError, detect_target_kind, register_adapter, resolve_target
    from .run import ProgressUpdate, VirtualClock, run_battery
    from .task import ExpectedCall, Task
