"""The memory an adapter talks to: ``recall`` precedents before a task, ``admit`` scored trials.

``hbeval_core.memory.EDM`` implements it; so does anything with these two methods (a list of
lessons in a test, a team's own store). ``recall`` is asked before a task's first model call and
its precedents are put in front of the model; ``admit`` is offered each scored trial and decides,
by its own rules, whether the episode is worth keeping.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Memory"]


@runtime_checkable
class Memory(Protocol):
    """What adapters and the runner need from a memory: ``recall`` and ``admit``."""

    def recall(self, context: str, agent_id: str) -> list[str]:
        """Precedents (as text) relevant to ``context`` that belong to ``agent_id``."""
        ...

    def admit(self, episode: dict[str, Any]) -> Any:
        """Offer a scored episode; the result is truthy when it was kept."""
        ...
