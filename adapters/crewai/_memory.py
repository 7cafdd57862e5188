"""The memory protocol the adapter talks to, and a tiny list-backed memory for tests and demos.

EDM (evaluation-driven memory) will implement ``Memory``; until then anything with these two
methods works. ``recall`` is asked before each task's first model call and its precedents are
put in front of the model; ``admit`` is offered each scored trial (``FaultRun`` does this) and
decides, by its own rules, whether the episode is worth keeping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hbeval_core.contract import EpisodeMemory as Memory

__all__ = ["ListMemory", "Memory"]


class ListMemory:
    """A list of precedents per agent id; admits episodes that pass ``admit_if`` (default: passed).

    ``recall`` returns the newest ``limit`` lessons of the agent whose words overlap the context.
    """

    def __init__(
        self,
        precedents: Mapping[str, list[str]] | None = None,
        *,
        admit_if: Callable[[dict[str, Any]], bool] | None = None,
        limit: int = 3,
    ) -> None:
        self.precedents: dict[str, list[str]] = {k: list(v) for k, v in (precedents or {}).items()}
        self.admitted: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.recalls: list[tuple[str, str]] = []
        self.admit_if = admit_if or _passed
        self.limit = limit

    def recall(self, context: str, agent_id: str) -> list[str]:
        """The newest ``limit`` precedents of ``agent_id`` sharing a word with ``context``."""
        self.recalls.append((context, agent_id))
        words = {w.lower().strip(".,:;!?") for w in context.split() if len(w) > 3}
        mine = self.precedents.get(agent_id, [])
        hits = [p for p in mine if words & {w.lower().strip(".,:;!?") for w in p.split()}]
        return hits[-self.limit :]

    def admit(self, episode: dict[str, Any]) -> bool:
        """Keep ``episode`` as a precedent of its agent when ``admit_if`` says so."""
        if not self.admit_if(episode):
            self.rejected.append(episode)
            return False
        self.admitted.append(episode)
        agent_id = str(episode.get("agent_id") or "default")
        lesson = episode.get("lesson") or (
            f"On '{episode.get('question')}' the answer '{episode.get('response')}' passed."
        )
        self.precedents.setdefault(agent_id, []).append(str(lesson))
        return True


def _passed(episode: dict[str, Any]) -> bool:
    verdict = episode.get("verdict") or {}
    return bool(verdict.get("passed")) and episode.get("status") == "ok"
