"""Irreversible tools: which tools write something a retry cannot take back, and what makes two
executions of one the same side effect.

A tool is irreversible when a task names it (``Task.irreversible_tools``), a battery file
names it (``irreversible_tools``), or its function is wrapped with
``faultable(..., irreversible=True)``. The last registers it here, process-wide, under its tool
name, so scoring finds it however the agent called it.

**Same side effect.** Two executions of an irreversible tool that reached the real tool are the
same side effect when their arguments are equal (canonical JSON, key order ignored). A tool that
declares an idempotency-key argument (``idempotency_key="request_id"``; a task's
``metadata["idempotency_keys"] = {"tool": "argument"}``; a battery file's ``idempotency_keys``)
is decided by that argument alone: the same key is the same effect whatever the other
arguments say, and a different key is a different effect. A call whose arguments lack the key
falls back to all its arguments.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "IDEMPOTENCY_KEYS_FIELD",
    "declare_irreversible",
    "declared_irreversible",
    "effect_identity",
    "forget_irreversible",
]

IDEMPOTENCY_KEYS_FIELD: Final = "idempotency_keys"
"""The task metadata (and battery file) field mapping a tool to its idempotency-key argument."""

_DECLARED: dict[str, str | None] = {}
_LOCK = threading.Lock()


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string (got {value!r})")
    return value


def declare_irreversible(tool: str, *, idempotency_key: str | None = None) -> None:
    """Mark ``tool`` irreversible for every trial in this process (``faultable`` calls it).

    ``idempotency_key`` names the argument that alone identifies one side effect.
    """
    _check_name("irreversible tool name", tool)
    if idempotency_key is not None:
        _check_name(f"idempotency_key of tool {tool!r}", idempotency_key)
    with _LOCK:
        _DECLARED[tool] = idempotency_key


def forget_irreversible(tool: str) -> None:
    """Undo ``declare_irreversible`` for ``tool`` (nothing happens when it was not declared)."""
    with _LOCK:
        _DECLARED.pop(tool, None)


def declared_irreversible() -> dict[str, str | None]:
    """Every tool declared irreversible in this process, with its idempotency key (or None)."""
    with _LOCK:
        return dict(_DECLARED)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))


def effect_identity(args: Mapping[str, Any], idempotency_key: str | None) -> str:
    """What decides whether two executions are the same side effect (module docstring)."""
    if idempotency_key is not None and idempotency_key in args:
        return f"key:{idempotency_key}={_canonical(args[idempotency_key])}"
    return "args:" + _canonical(dict(args))
