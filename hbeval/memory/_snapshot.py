"""A read-only copy of EDM's episodes as they stood at one moment: what a battery's trials recall.

``EDM.snapshot(agent_ids)`` copies, for each agent, its admitted episodes and their vectors in
the order the EDM searches them, with the embedder, threshold and ``top_k``. An
:class:`EDMSnapshot` answers ``retrieve``/``recall``/``precedents_for``/``explain`` exactly as the
EDM would have when it was taken (exact search, the same arithmetic: ``VectorIndex``), needs no
database, and pickles: so the trials of a battery recall the same precedents whether they run on
threads in the driver or as Ray tasks on other machines. It admits nothing; the runner admits a
battery's episodes into the EDM itself, after the last trial.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ._embed import Embedder
from ._episode import DEFAULT_AGENT_ID, Episode
from ._explain import render_context
from ._index import VectorIndex
from ._recall import Match, Retrieval, check_agent, check_top_k, embed_texts

__all__ = ["EDMSnapshot", "SnapshotError"]


class SnapshotError(ValueError):
    """A snapshot was asked for an agent it does not hold, or to admit an episode."""


class EDMSnapshot(Retrieval):
    """Episodes of some agents, frozen at ``taken_at``: exact retrieval, no writes, picklable.

    Built by :meth:`EDM.snapshot`; not meant to be constructed by hand.
    """

    def __init__(
        self,
        *,
        source: str,
        embedder: Embedder,
        threshold: float,
        top_k: int,
        vectors: Mapping[str, tuple[list[str], npt.NDArray[np.float32]]],
        episodes: Mapping[str, Episode],
        taken_at: str,
    ) -> None:
        self.source = source
        """Where the EDM lives (a SQLite path or a PostgreSQL URL without its password)."""
        self.embedder = embedder
        self.threshold = float(threshold)
        self.top_k = check_top_k(top_k)
        self.taken_at = taken_at
        """When it was taken (ISO-8601 UTC, the EDM's clock)."""
        self._vectors = {agent: (list(ids), np.array(m)) for agent, (ids, m) in vectors.items()}
        self._episodes = dict(episodes)
        self._lock = threading.Lock()
        self._indexes: dict[str, VectorIndex] = {}

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        state["_indexes"] = {}  # rebuilt from the vectors on first use
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"EDMSnapshot(source={self.source!r}, agents={self.agent_ids!r}, "
            f"episodes={len(self._episodes)}, taken_at={self.taken_at!r})"
        )

    # ------------------------------------------------------------------ contents
    @property
    def agent_ids(self) -> tuple[str, ...]:
        """The agents whose episodes were taken (an agent without episodes may be one)."""
        return tuple(self._vectors)

    def _held(self, agent_id: object) -> str:
        agent = check_agent(agent_id)
        if agent not in self._vectors:
            raise SnapshotError(
                f"this EDM snapshot holds the episodes of {', '.join(map(repr, self._vectors))}"
                f" only, not of agent {agent!r}: take it with EDM.snapshot([{agent!r}, ...])"
            )
        return agent

    def count(self, agent_id: str | None = None) -> int:
        """How many episodes the snapshot holds (one agent's, or all)."""
        if agent_id is None:
            return len(self._episodes)
        return len(self._vectors[self._held(agent_id)][0])

    def get(self, episode_id: str, agent_id: str | None = None) -> Episode | None:
        """A held episode by id (None if absent, or if it belongs to another agent)."""
        ep = self._episodes.get(episode_id)
        if ep is None or (agent_id is not None and ep.agent_id != agent_id):
            return None
        return ep

    def list_episodes(self, agent_id: str | None = DEFAULT_AGENT_ID) -> list[Episode]:
        """Held episodes, oldest first (as ``EDM.list_episodes``): one agent's, or all with None."""
        if agent_id is not None:
            self._held(agent_id)
        chosen = [ep for ep in self._episodes.values() if agent_id in (None, ep.agent_id)]
        return sorted(chosen, key=lambda ep: (ep.created_at, ep.episode_id))

    def admit(self, episode: Any) -> Any:
        """Refused: a snapshot is read-only. Admit into the EDM it was taken from."""
        raise SnapshotError(
            f"an EDM snapshot is read-only (taken {self.taken_at} from {self.source}); admit "
            "into the EDM itself (a battery's runner does so after its last trial)"
        )

    # ------------------------------------------------------------------ retrieval
    def _index(self, agent: str) -> VectorIndex:
        index = self._indexes.get(agent)
        if index is None:
            ids, matrix = self._vectors[agent]
            index = VectorIndex(self.embedder.dim)
            index.add(ids, matrix)
            self._indexes[agent] = index
        return index

    def _search(
        self, context: object, agent_id: str, k: int
    ) -> tuple[str, list[Match], float | None, int]:
        query = render_context(context)
        agent = self._held(agent_id)
        k = check_top_k(k)
        vector = embed_texts(self.embedder, [query])[0]
        with self._lock:  # the index reuses its score buffers: one search at a time
            index = self._index(agent)
            hits, best = index.search(vector, k, self.threshold)
            stored = len(index)
        matches = [
            Match(self._episodes[eid], sim)
            for eid, sim in hits
            if eid in self._episodes and self._episodes[eid].agent_id == agent
        ]
        return query, matches, best, stored
