"""Battery runs: targets and adapters, trials, isolation, outcomes, budgets and resume.

- ``run_battery(adapter, target, tasks, battery, ...)`` runs a battery and returns the typed
  ``Report``; ``await arun_battery(...)`` does the same from inside an event loop without
  blocking it. (``hbeval.run_battery(target, ...)`` is the verb with defaults for everything.)
- ``load_tasks`` reads a task file or a ``module:attr``; ``RunManifest`` / ``load_manifest`` pin
  a run.
- ``register_adapter`` lets a framework adapter add its own target kind; ``detect_target_kind``
  and ``resolve_target`` say which adapter runs a target.

Names load on first use, so importing one submodule does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "TargetError": ".loader",
    "TaskFileError": ".loader",
    "load_object": ".loader",
    "load_tasks": ".loader",
    "ManifestError": ".manifest",
    "ManifestMismatchError": ".manifest",
    "RunManifest": ".manifest",
    "load_manifest": ".manifest",
    "TargetKindError": ".registry",
    "detect_target_kind": ".registry",
    "register_adapter": ".registry",
    "resolve_target": ".registry",
    "ProgressUpdate": ".run",
    "run_battery": ".run",
    "arun_battery": "._async",
}

__all__ = [
    "ManifestError",
    "ManifestMismatchError",
    "ProgressUpdate",
    "RunManifest",
    "TargetError",
    "TargetKindError",
    "TaskFileError",
    "arun_battery",
    "detect_target_kind",
    "load_manifest",
    "load_object",
    "load_tasks",
    "register_adapter",
    "resolve_target",
    "run_battery",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from ._async import arun_battery
    from .loader import TargetError, TaskFileError, load_object, load_tasks
    from .manifest import ManifestError, ManifestMismatchError, RunManifest, load_manifest
    from .registry import TargetKindError, detect_target_kind, register_adapter, resolve_target
    from .run import ProgressUpdate, run_battery
