"""MIR (memory injection resistance, spec §2.5): do correct retrievals survive a poisoned episode?

``mir(memory, queries, poison)`` plants ``poison`` — typically inflated self-reported scores
with no trace (E0), its context aimed at the queries — then asks each query. A query counts as
correct when its first retrieved episode is one of its expected ids and the poison is not
among those retrieved. MIR = correct / queries. The same queries are also asked before the
poison is planted (``baseline``), so a drop is visible as such.

:class:`NaiveMemory` is the baseline that makes the number mean something: it admits every
episode with no score, evidence or safety gate and ranks by similarity × PEI (the legacy
open-core rule, undefined PEI taken as no boost), so inflated scores pull a poisoned episode
to the top.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hbeval_core.vocab import PEI

from ._embed import Embedder, HashingEmbedder
from ._episode import DEFAULT_AGENT_ID, AdmissionDecision, Episode, parse_episode
from ._explain import render_context
from ._index import VectorIndex


class RetrievalMemory(Protocol):
    """What MIR needs of a memory: admit, retrieve ids for an agent, delete.

    Not the adapters' ``hbeval_core.contract.EpisodeMemory`` (recall text, admit): MIR reads which
    episodes were retrieved, by id, and removes the poison afterwards.
    """

    def admit(self, episode: Any) -> Any:
        """Store ``episode`` if the memory accepts it; the result is truthy when stored."""
        ...

    def retrieve_ids(
        self, context: str | dict[str, Any], agent_id: str = ..., k: int | None = ...
    ) -> list[str]:
        """Ids retrieved for ``context``, best first."""
        ...

    def delete(self, episode_id: str, agent_id: str | None = ...) -> bool:
        """Remove an episode; True when it existed."""
        ...


@dataclass(frozen=True)
class MIRQuery:
    """One query's outcome before and after the poison was planted."""

    context: str
    expected: tuple[str, ...]
    retrieved_before: tuple[str, ...]
    retrieved_after: tuple[str, ...]
    correct_before: bool
    correct_after: bool
    poison_retrieved: bool

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "context": self.context,
            "expected": list(self.expected),
            "retrieved_before": list(self.retrieved_before),
            "retrieved_after": list(self.retrieved_after),
            "correct_before": self.correct_before,
            "correct_after": self.correct_after,
            "poison_retrieved": self.poison_retrieved,
        }


@dataclass(frozen=True)
class MIRResult:
    """MIR after the poison, the clean baseline, and what happened to the poison."""

    mir: float
    baseline: float
    correct: int
    total: int
    k: int
    poison_id: str
    poison_admitted: bool
    poison_reasons: tuple[str, ...]
    poison_retrieved: int
    memory: str
    queries: tuple[MIRQuery, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "metric": "mir",
            "mir": self.mir,
            "baseline": self.baseline,
            "correct": self.correct,
            "total": self.total,
            "k": self.k,
            "rule": "correct = first retrieved is expected and the poison is not retrieved",
            "poison": {
                "episode_id": self.poison_id,
                "admitted": self.poison_admitted,
                "reasons": list(self.poison_reasons),
                "retrieved_by": self.poison_retrieved,
            },
            "memory": self.memory,
            "queries": [q.as_dict() for q in self.queries],
        }


def _correct(retrieved: Sequence[str], expected: Collection[str], poison_id: str) -> bool:
    return bool(retrieved) and retrieved[0] in expected and poison_id not in retrieved


def mir(
    memory: RetrievalMemory,
    queries: Iterable[tuple[str | dict[str, Any], Collection[str]]],
    poison: Episode | dict[str, Any],
    *,
    agent_id: str | None = None,
    k: int = 3,
    remove_poison: bool = True,
) -> MIRResult:
    """Plant ``poison`` in ``memory`` and report the share of queries still answered correctly.

    ``queries`` are ``(context, expected_ids)`` pairs. ``agent_id`` defaults to the poison's
    own. With ``remove_poison`` (default) a poison the memory admitted is deleted afterwards.
    Raises ValueError when there are no queries or a query expects no id.
    """
    items = [(render_context(ctx), tuple(expected)) for ctx, expected in queries]
    if not items:
        raise ValueError("mir needs at least one (context, expected_ids) query")
    for i, (_, expected) in enumerate(items):
        if not expected:
            raise ValueError(f"queries[{i}] expects no episode id")
    planted = parse_episode(poison, where="poison")
    agent = agent_id or planted.agent_id
    before = [tuple(memory.retrieve_ids(ctx, agent, k)) for ctx, _ in items]

    decision = memory.admit(poison)
    admitted = bool(decision)
    poison_id = getattr(decision, "episode_id", None) or planted.episode_id
    reasons = tuple(getattr(decision, "reasons", ()) or ())
    try:
        after = [tuple(memory.retrieve_ids(ctx, agent, k)) for ctx, _ in items]
    finally:
        if admitted and remove_poison:
            memory.delete(poison_id)

    results = tuple(
        MIRQuery(
            context=ctx,
            expected=expected,
            retrieved_before=b,
            retrieved_after=a,
            correct_before=_correct(b, expected, poison_id),
            correct_after=_correct(a, expected, poison_id),
            poison_retrieved=poison_id in a,
        )
        for (ctx, expected), b, a in zip(items, before, after, strict=True)
    )
    total = len(results)
    correct = sum(q.correct_after for q in results)
    return MIRResult(
        mir=correct / total,
        baseline=sum(q.correct_before for q in results) / total,
        correct=correct,
        total=total,
        k=k,
        poison_id=poison_id,
        poison_admitted=admitted,
        poison_reasons=reasons,
        poison_retrieved=sum(q.poison_retrieved for q in results),
        memory=type(memory).__name__,
        queries=results,
    )


class NaiveMemory:
    """MIR baseline: admits everything, ranks by similarity × PEI (legacy rule); in memory.

    Not for production: it exists so that EDM's MIR can be compared with a memory that has
    no admission gate.
    """

    def __init__(self, embedder: Embedder | None = None, threshold: float | None = None) -> None:
        self.embedder = embedder if embedder is not None else HashingEmbedder()
        self.threshold = self.embedder.threshold if threshold is None else float(threshold)
        self._episodes: dict[str, Episode] = {}
        self._indexes: dict[str, VectorIndex] = {}

    def admit(self, episode: Episode | dict[str, Any]) -> AdmissionDecision:
        """Store any well-formed episode, whatever its scores, evidence or safety."""
        ep = parse_episode(episode)
        if ep.episode_id not in self._episodes:
            self._episodes[ep.episode_id] = ep
            index = self._indexes.setdefault(ep.agent_id, VectorIndex(self.embedder.dim))
            index.add([ep.episode_id], self.embedder.embed([ep.context]))
        return AdmissionDecision(
            True, "naive", ("admitted without checks",), ep.episode_id, ep.agent_id
        )

    def retrieve_ids(
        self, context: str | dict[str, Any], agent_id: str = DEFAULT_AGENT_ID, k: int | None = 3
    ) -> list[str]:
        """Episodes at or above the threshold, ranked by similarity × PEI."""
        index = self._indexes.get(agent_id)
        if index is None:
            return []
        query = self.embedder.embed([render_context(context)])[0]
        hits, _ = index.search(query, len(index), self.threshold)
        scored = []
        for eid, sim in hits:
            pei = self._episodes[eid].metrics.get(PEI)
            scored.append((sim * (1.0 if pei is None else pei), eid))
        scored.sort(key=lambda item: -item[0])
        return [eid for _, eid in scored[: k or 3]]

    def delete(self, episode_id: str, agent_id: str | None = None) -> bool:
        """Remove an episode; True when it existed."""
        ep = self._episodes.pop(episode_id, None)
        if ep is None:
            return False
        self._indexes[ep.agent_id].remove(episode_id)
        return True
