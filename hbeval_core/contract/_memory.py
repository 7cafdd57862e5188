"""The memory an adapter talks to: ``recall`` precedents before a task, ``admit`` scored trials.

Adapters recall with ``recall_precedents(memory, question, agent_id)`` (never raises: a failing
memory gives no precedents and its error), put ``precedents_text`` before the model, and give the
trial's Monitor ``precedent_lookup(memory, question, agent_id)`` so Adapt-Plan directives carry
precedents.

``hbeval.memory.EDM`` implements it; so does anything with these two methods (a list of
lessons in a test, a team's own store). ``recall`` is asked before a task's first model call and
its precedents are put in front of the model; ``admit`` is offered each scored trial and decides,
by its own rules, whether the episode is worth keeping.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ATTR_MEMORY_RECALL",
    "PRECEDENTS_HEADER",
    "EpisodeMemory",
    "Recall",
    "precedent_lookup",
    "precedents_text",
    "recall_precedents",
]

log = logging.getLogger("hbeval.memory")


@runtime_checkable
class EpisodeMemory(Protocol):
    """What adapters and the runner need from a memory: ``recall`` and ``admit``."""

    def recall(self, context: str, agent_id: str) -> list[str]:
        """Precedents (as text) relevant to ``context`` that belong to ``agent_id``."""
        ...

    def admit(self, episode: dict[str, Any]) -> Any:
        """Offer a scored episode; the result is truthy when it was kept."""
        ...


PRECEDENTS_HEADER = "Precedents from evaluated episodes of this agent:"
"""First line of the system message that carries recalled precedents."""


def precedents_text(precedents: Iterable[str], header: str = PRECEDENTS_HEADER) -> str | None:
    """The message listing ``precedents`` under ``header``, as every adapter puts it before the
    model (one header, one format on every framework); None when there are none."""
    listed = [str(p) for p in precedents if str(p).strip()]
    if not listed:
        return None
    return header + "\n" + "\n".join(f"- {p}" for p in listed)


ATTR_MEMORY_RECALL = "memory_recall"
"""``run_start.attrs`` key recording what memory recall returned for the run."""


@dataclass(frozen=True)
class Recall:
    """What a memory returned for one run: this agent's precedents, or the error it raised."""

    agent_id: str
    precedents: tuple[str, ...] = ()
    error: str | None = None

    def message(self) -> str | None:
        """The system-message text listing the precedents, or None when there are none."""
        return precedents_text(self.precedents)

    def record(self, delivery: str) -> dict[str, Any]:
        """JSON-ready record for ``run_start.attrs``; ``delivery`` says how the agent got them."""
        return {
            "agent_id": self.agent_id,
            "count": len(self.precedents),
            "precedents": list(self.precedents),
            "delivery": delivery if self.precedents else "none",
            "error": self.error,
        }


def recall_precedents(memory: Any, context: str, agent_id: str, *, strict: bool = False) -> Recall:
    """Ask ``memory.recall(context, agent_id)`` for precedents; never raises unless ``strict``.

    Blank entries are dropped. A memory that raises (or returns something that is not a list of
    strings) gives no precedents and the error text, logged: memory never breaks the agent.
    """
    try:
        raw = memory.recall(context, agent_id)
        if raw is None:
            raw = []
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise TypeError(f"recall returned {type(raw).__name__}, not a list of strings")
        found = tuple(str(p) for p in raw if str(p).strip())
    except Exception as exc:
        if strict:
            raise
        log.warning("memory recall failed for agent %s: %r", agent_id, exc)
        return Recall(agent_id, (), f"{type(exc).__name__}: {exc}")
    return Recall(agent_id, found)


def precedent_lookup(memory: Any, context: str, agent_id: str) -> Callable[[Any], list[Any]] | None:
    """A ``Monitor(precedents=...)`` callable over ``memory`` for this run, or None.

    ``memory.precedents_for(context, agent_id)`` when the memory offers it (EDM: JSON records
    with similarity), else a wrapper returning ``memory.recall(context, agent_id)``.
    """
    build = getattr(memory, "precedents_for", None)
    if callable(build):
        lookup = build(context, agent_id)
        return lookup if callable(lookup) else None
    recall = getattr(memory, "recall", None)
    if not callable(recall):
        return None

    def lookup_recall(directive: Any) -> list[Any]:
        """This run's recalled precedents (the directive itself is not used)."""
        return list(recall(context, agent_id) or [])

    return lookup_recall
