"""The contract between the runner and a framework adapter: ``Adapter`` and ``TrialResult``.

Every adapter exposes the same names: ``instrument()``, ``uninstrument()``, ``scope(run_id)``,
``run_trial(target, task, scenario, plan)``, a fault hook and a memory hook. The runner reaches
frameworks only through this protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._task import Task

if TYPE_CHECKING:
    from ..events import EventBase

__all__ = ["Adapter", "TrialResult", "token_usage", "trace_kinds"]


@dataclass
class TrialResult:
    """What one trial produced: the final state, the full trace and how the run ended.

    ``status`` is "ok" when the agent returned, "error" when it raised (``error`` holds the text
    and ``error_type`` the class name), "timeout" when the per-trial limit cut it, "halted" when
    an enforced Safe Halt or a budget stopped it, "cancelled" when a crash fault aborted it,
    "skipped" when the runner could not start it (a shared agent still busy after a timeout).
    """

    final_state: Any
    events: list[EventBase] = field(default_factory=list)
    status: str = "ok"
    error: str | None = None
    error_type: str | None = None
    infra: bool = False
    """True when the failure is the harness's or the environment's, not the agent's."""
    response_text: str | None = None
    """The agent's final answer as text, when it has one (used by keyword verifiers and claims)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: Any = None
    """The framework's own result object when it is not ``final_state`` (AutoGen's ``TaskResult``)."""
    messages: tuple[Any, ...] | None = None
    """The conversation as ``outcome.Message`` records, when the adapter can read it."""


@runtime_checkable
class Adapter(Protocol):
    """A framework adapter, as the runner sees it."""

    name: str

    def instrument(self) -> None:
        """Start capturing with no change to user code. Idempotent."""

    def uninstrument(self) -> None:
        """Restore every original object. Idempotent."""

    def scope(self, run_id: str) -> AbstractContextManager[Any]:
        """A context in which everything the agent does is attributed to ``run_id``."""

    def run_trial(self, target: Any, task: Task, scenario: Any, plan: Any) -> TrialResult:
        """Run ``task`` once on ``target`` under ``scenario``'s fault ``plan``; never raise for agent errors."""

    def fault_hook(self, injector: Any) -> None:
        """Install the per-trial fault injector (None removes it)."""

    def memory_hook(self, memory: Any) -> None:
        """Attach a memory (precedents before model calls, admission after scoring); None detaches."""


def token_usage(events: Sequence[EventBase]) -> dict[str, int | None]:
    """Summed token usage of a trace's model calls; None (not measured) when no call reported it."""
    tin: int | None = None
    tout: int | None = None
    for e in events:
        usage = getattr(e, "usage", None) if e.kind == "model_end" else None  # type: ignore[attr-defined]
        if usage is None:
            continue
        if usage.input_tokens is not None:
            tin = (tin or 0) + usage.input_tokens
        if usage.output_tokens is not None:
            tout = (tout or 0) + usage.output_tokens
    return {"input_tokens": tin, "output_tokens": tout}


def trace_kinds(events: Sequence[EventBase]) -> list[str]:
    """The kinds of a trace, in order (handy in tests and reports)."""
    return [e.kind for e in events]  # type: ignore[attr-defined]
