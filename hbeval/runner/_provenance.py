"""What a run was measured on, so that a stored run is reused only for the very same code and tasks.

``run_battery(reuse=True)`` (and ``pytest --hbeval-reuse``) may hand back a stored report
instead of running. That is only honest when nothing the trials depended on has changed, so:

- **Task content.** ``task_content`` fingerprints every field of every task: question,
  keywords, tool rules, expected calls, system prompt, metadata, resume values, and the
  verifier's source text (``inspect.getsource``; its qualified name when there is none).
- **Declared inputs.** A task file may declare ``inputs:`` (files beside it: prompts,
  configs) and ``env:`` (environment variable names: a model id, say). ``declared_inputs``
  digests each file's bytes and each variable's value (never stored in clear).
- **Loaded code.** ``loaded_sources`` is taken when the trials end: every module then in
  ``sys.modules`` whose file is the user's code, so imports inside functions count as much
  as the target's own imports, however deep. Files of the standard library and of installed
  (non-editable) distributions are left out: ``environment`` names every distribution with
  its version. An editable install of the user's package lives outside ``site-packages`` and
  counts as source. hbeval's own packages are left out too: ``versions`` names hbeval's
  version and the fingerprints its scoring version.

The first two are in the manifest hash. Loaded code can only be known after the trials, so
the report keeps it (``loaded_sources``) and ``stale_sources`` compares it with the files as
they are now before a stored report is reused; a file that changed or disappeared, or a report
written before the record existed, is never reused. (A run whose code all comes from installed
distributions records an empty set, and is reused while ``environment`` is unchanged.)
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from hbeval_core.contract import Budgets, Task
from hbeval_core.fingerprint import fingerprint

from .manifest import (
    RunManifest,
    _user_path,
    environment_fingerprint,
    loaded_reference_module,
    package_versions,
    source_digests,
)

if TYPE_CHECKING:
    from ..store import Redactor
    from .registry import ResolvedTarget

__all__ = [
    "TOOL_PACKAGES",
    "declared_inputs",
    "judge_name",
    "loaded_sources",
    "run_manifest",
    "source_key",
    "stale_sources",
    "target_label",
    "task_content",
]

log = logging.getLogger("hbeval.runner")

TOOL_PACKAGES: Final = (
    "hbeval",
    "hbeval_core",
    "hbeval_plain",
    "hbeval_langgraph",
    "hbeval_crewai",
    "hbeval_autogen",
)
"""hbeval's own top-level packages: the measuring instrument, named by its version."""


def _verifier_text(verify: Any) -> str | None:
    if verify is None:
        return None
    name = f"{getattr(verify, '__module__', '?')}:{getattr(verify, '__qualname__', '?')}"
    try:
        return name + "\n" + inspect.getsource(verify)
    except (OSError, TypeError):
        return name


def _plain(value: Any) -> Any:
    """``value`` as JSON the fingerprint takes (anything else by its type and repr)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    try:
        text = repr(value)
    except Exception:
        text = "?"
    return f"{type(value).__qualname__}:{text}"


def task_content(tasks: Sequence[Task]) -> str:
    """Fingerprint over every field of every task, verifier source included."""
    body = []
    for task in tasks:
        body.append(
            {
                "id": task.id,
                "question": task.question,
                "category": task.category,
                "verify": _verifier_text(task.verify),
                "forbidden_tools": list(task.forbidden_tools),
                "irreversible_tools": list(task.irreversible_tools),
                "expected_calls": (
                    None
                    if task.expected_calls is None
                    else [[c.tool, _plain(c.args)] for c in task.expected_calls]
                ),
                "required": list(task.required),
                "system": task.system,
                "metadata": _plain(task.metadata),
                "resume": _plain(list(task.resume)),
                "answer_from": task.answer_from,
            }
        )
    return fingerprint(body)


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def declared_inputs(declared: Mapping[str, Any] | None) -> dict[str, dict[str, str | None]]:
    """``{"inputs": {file: digest}, "env": {name: digest}}`` of what a task file declared.

    ``declared`` holds ``inputs`` (absolute paths) and ``env`` (names), as ``load_tasks``
    keeps them. A missing file or an unset variable digests as None: it is part of the state.
    """
    if not declared:
        return {}
    inputs = {
        source_key(Path(p)): _file_digest(Path(p)) for p in sorted(declared.get("inputs") or ())
    }
    env = {}
    for name in sorted(declared.get("env") or ()):
        value = os.environ.get(name)
        env[name] = None if value is None else fingerprint(["env", name, value])
    return {"inputs": inputs, "env": env}


def source_key(path: Path) -> str:
    """``path`` relative to the working directory when under it, else absolute (POSIX)."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _is_tool_module(name: str) -> bool:
    return name.partition(".")[0] in TOOL_PACKAGES


def loaded_sources() -> dict[str, str]:
    """``{file: sha256[:16]}`` of every user source file loaded in this process now."""
    found: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        if _is_tool_module(name):
            continue
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not file.endswith(".py"):
            continue
        path = _user_path(file)
        if path is None:
            continue
        key = source_key(path)
        if key in found:
            continue
        digest = _file_digest(path)
        if digest is not None:
            found[key] = digest
    return dict(sorted(found.items()))


def stale_sources(recorded: Mapping[str, str] | None) -> str | None:
    """Why code recorded as ``recorded`` (``loaded_sources`` of a run) is not today's; None if it is."""
    if recorded is None:
        return "its report did not record the source files it loaded"
    cwd = Path.cwd().resolve()
    for key, digest in recorded.items():
        path = Path(key)
        if not path.is_absolute():
            path = cwd / path
        now = _file_digest(path)
        if now is None:
            return f"{key} is gone"
        if now != digest:
            return f"{key} changed"
    return None


def target_label(target: Any) -> str:
    """``module:qualname`` of a target given as an object."""
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}:{name}"


def run_manifest(
    manifest: RunManifest | None,
    target: Any,
    resolved: ResolvedTarget,
    tasks: Sequence[Task],
    battery: Any,
    redactor: Redactor,
    budgets: Budgets,
    *,
    seed: int,
    trials: int,
    agent_id: str,
    methodology: str,
    judge: Any,
    judge_label: str | None,
    concurrency: int,
    timeout: float | None,
    clock: Any,
    declared: Mapping[str, Any] | None = None,
) -> RunManifest:
    """The run's manifest: what was given, completed with everything that identifies the run."""
    given = manifest
    return (given or RunManifest()).with_updates(
        target=(given.target if given is not None and given.target else target_label(target)),
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
        judge=judge_name(judge, judge_label),
        concurrency=concurrency,
        timeout=None if timeout is None else float(timeout),
        clock="virtual" if clock is None else type(clock).__name__,
        budgets=budgets,
        versions=package_versions(),
        sources=source_digests(
            target,
            loaded_reference_module(given.target if given is not None else None),
            judge,
            *(t.verify for t in tasks if t.verify is not None),
        ),
        environment=environment_fingerprint(),
        task_content=task_content(tasks),
        declared=declared_inputs(declared),
        battery_fingerprint=battery.spec_fingerprint(),
        redact=tuple(redactor.patterns) + tuple(f"name:{n}" for n in redactor.names),
        max_result_bytes=redactor.max_result_bytes,
    )


def judge_name(judge: Any, label: str | None) -> str | None:
    """The judge as the manifest names it: its label, else ``scoring.judge_identity``."""
    if judge is None:
        return None
    if label:
        return label
    from ..scoring import judge_identity

    return str(judge_identity(judge))
