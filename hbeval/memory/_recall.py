"""What every EDM view offers for retrieval: ``retrieve``, ``recall``, ``precedents_for``, ``explain``.

:class:`Retrieval` is shared by the live :class:`~hbeval.memory.EDM` and its read-only
:class:`~hbeval.memory.EDMSnapshot`: both answer from ``_search`` (exact top-k cosine over one
agent's vectors), so a precedent reads the same whichever of the two gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._embed import Embedder, normalise_rows
from ._episode import DEFAULT_AGENT_ID, Episode
from ._explain import deferral, grounded

DEFAULT_TOP_K = 3


@dataclass(frozen=True)
class Match:
    """A retrieved episode and its cosine similarity to the query."""

    episode: Episode
    similarity: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form: the episode's record plus ``similarity``."""
        return {**self.episode.as_dict(), "similarity": round(self.similarity, 4)}

    def render(self) -> str:
        """One line for a prompt: the recorded trajectory and its quoted figures."""
        ep = self.episode
        run = f"run {ep.run_id}" if ep.run_id else "no run id recorded"
        trial = f", trial {ep.trial_key}" if ep.trial_key else ""
        return (
            f"Precedent {ep.episode_id} ({run}{trial}; similarity {self.similarity:.4f}; "
            f"route {ep.route}; evidence {ep.evidence_level}): {ep.summary} "
            f"— recorded {ep.quoted_metrics()}."
        )


def check_agent(agent_id: object) -> str:
    """``agent_id`` when it is a non-empty string; ValueError naming it otherwise."""
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise ValueError(f"agent_id must be a non-empty string, got {agent_id!r}")
    return agent_id


def check_top_k(k: object) -> int:
    """``k`` when it is a positive integer; ValueError naming it otherwise."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return k


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """``embedder``'s unit rows for ``texts``; ValueError when it returns a wrong shape or NaN."""
    out = np.asarray(embedder.embed(list(texts)))
    if out.shape != (len(texts), embedder.dim):
        raise ValueError(
            f"embedder {embedder.name!r} returned shape {out.shape}, "
            f"expected ({len(texts)}, {embedder.dim})"
        )
    if not np.all(np.isfinite(out)):
        raise ValueError(f"embedder {embedder.name!r} returned non-finite values")
    return normalise_rows(out)


class Retrieval:
    """Retrieval, recall and grounded explanations over ``_search`` (see the subclasses)."""

    embedder: Embedder
    threshold: float
    top_k: int

    def _search(
        self, context: object, agent_id: str, k: int
    ) -> tuple[str, list[Match], float | None, int]:
        """(rendered query, matches best first, best cosine or None, episodes searched)."""
        raise NotImplementedError

    def retrieve(
        self, context: str | dict[str, Any], agent_id: str = DEFAULT_AGENT_ID, k: int | None = None
    ) -> list[Match]:
        """This agent's qualified episodes at or above the threshold, most similar first."""
        return self._search(context, agent_id, self.top_k if k is None else k)[1]

    def retrieve_ids(
        self, context: str | dict[str, Any], agent_id: str = DEFAULT_AGENT_ID, k: int | None = None
    ) -> list[str]:
        """Ids of :meth:`retrieve`'s episodes, most similar first."""
        return [m.episode.episode_id for m in self.retrieve(context, agent_id, k)]

    def recall(
        self, context: str | dict[str, Any], agent_id: str = DEFAULT_AGENT_ID, k: int | None = None
    ) -> list[str]:
        """Rendered precedents for a prompt: each summary with its quoted recorded figures."""
        return [m.render() for m in self.retrieve(context, agent_id, k)]

    def precedents_for(
        self, context: str | Callable[[], str], agent_id: str = DEFAULT_AGENT_ID
    ) -> Callable[[Any], list[dict[str, Any]]]:
        """A ``Monitor(precedents=...)`` callable: qualified precedents for a directive.

        ``context`` is the task's text, or a callable returning the current one.
        """

        def lookup(directive: Any) -> list[dict[str, Any]]:
            """Qualified precedents as JSON records (the directive itself is not used)."""
            text = context() if callable(context) else context
            return [m.as_dict() for m in self.retrieve(text, agent_id)]

        return lookup

    def explain(
        self, context: str | dict[str, Any], agent_id: str = DEFAULT_AGENT_ID
    ) -> dict[str, Any]:
        """HCI-EDM: cite the closest qualified episode verbatim, or defer to human review.

        Returns ``{grounded, explanation, cited_episode_id, similarity, cited_metrics, ...}``.
        With no episode of this agent at or above the threshold: ``grounded: False``,
        ``deferred_to_human: True`` and an "Uncertain — human review advised" explanation;
        never a generated rationale.
        """
        query, matches, best, stored = self._search(context, agent_id, 1)
        name = self.embedder.name
        if matches:
            return grounded(
                matches[0].episode,
                matches[0].similarity,
                threshold=self.threshold,
                embedder=name,
                agent_id=agent_id,
                query=query,
            )
        return deferral(
            best,
            threshold=self.threshold,
            embedder=name,
            agent_id=agent_id,
            query=query,
            stored=stored,
        )
