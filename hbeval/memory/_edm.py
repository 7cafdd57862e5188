"""EDM: a memory that admits only episodes whose scores earned it, and retrieves them by task.

``EDM`` keeps admitted episodes in SQLite (its own ``edm_*`` tables in the store's file) and
one in-memory vector index per agent, loaded on first use. Retrieval is exact: every stored
vector of the agent is compared with the query (cosine = dot product of unit vectors), and
only episodes at or above the threshold are returned. For agents with many episodes,
``build_index`` saves an approximate index beside the database that proposes candidates,
which are then ranked exactly from the vectors SQLite holds (see ``_ann.py``). One agent never sees another's
episodes, and unsafe episodes are quarantined, never indexed.

``EDM()`` is in memory (nothing persisted); ``EDM(path)`` or :func:`open_edm` persist to a
SQLite file (``open_edm()`` with no argument uses the store's default ``./.hbeval/hbeval.db``),
and ``EDM("postgresql://...")`` to a PostgreSQL store, beside its tables (``_pg.py``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._gc import collector_paused
from ..store.postgres import is_postgres_url, public_url
from ._ann import ApproxIndex, ann_paths, faiss_available, remove_agent_files
from ._embed import Embedder, HashingEmbedder
from ._episode import (
    DEFAULT_AGENT_ID,
    AdmissionDecision,
    AdmissionPolicy,
    Episode,
    iso_utc,
    parse_episode,
    utc_now,
    with_admission,
)
from ._episode import judge as judge_episode
from ._evidence import computed_episode
from ._explain import render_context
from ._index import VectorIndex, rank_rows
from ._recall import DEFAULT_TOP_K, Match, Retrieval, embed_texts
from ._recall import check_agent as _agent
from ._recall import check_top_k as _top_k
from ._sqlite import MEMORY_DB, EDMTables, connect, migrate, resolve_db

if TYPE_CHECKING:
    from ._snapshot import EDMSnapshot

APPROX_CANDIDATES = 16
"""How many candidates the approximate index proposes for exact ranking (at least 4 x k). Its
scores are exact for the vectors it scans, so the margin over k only covers candidates SQLite
no longer holds."""


@dataclass
class _Approx:
    """An agent's saved approximate index and the vectors stored after it was built."""

    index: ApproxIndex
    delta: tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.float32]] | None = None


class EDM(Retrieval):
    """Evaluation-driven memory: admission by score routes, exact retrieval per agent.

    Args:
        db: a SQLite path, ``sqlite:///path`` URL, a ``postgresql://`` store URL, or None for
            an in-memory database.
        embedder: how contexts become vectors; default :class:`HashingEmbedder`.
        threshold: minimum cosine for retrieval; default the embedder's calibrated one.
        policy: admission thresholds; default the spec's two routes and E1 evidence.
        top_k: how many precedents ``retrieve``/``recall`` return at most.
        clock: source of ``created_at`` for episodes that do not carry one.
        approximate: use an agent's saved approximate index (``build_index``) when there is
            one; False always scans exactly.
    """

    def __init__(
        self,
        db: str | Path | None = None,
        *,
        embedder: Embedder | None = None,
        threshold: float | None = None,
        policy: AdmissionPolicy | None = None,
        top_k: int = DEFAULT_TOP_K,
        clock: Callable[[], datetime] = utc_now,
        approximate: bool = True,
    ) -> None:
        self.approximate = approximate
        self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
        if not isinstance(self.embedder, Embedder):
            raise TypeError("embedder must provide name, dim, threshold and embed(texts)")
        chosen = self.embedder.threshold if threshold is None else threshold
        if isinstance(chosen, bool) or not isinstance(chosen, (int, float)):
            raise ValueError(f"threshold must be a number in [-1, 1], got {chosen!r}")
        if math.isnan(float(chosen)) or not -1.0 <= float(chosen) <= 1.0:
            raise ValueError(f"threshold must be a number in [-1, 1], got {chosen!r}")
        self.threshold = float(chosen)
        self.policy = policy if policy is not None else AdmissionPolicy()
        self._policy_record = self.policy.as_dict()
        self.top_k = _top_k(top_k)
        self._clock = clock
        target = MEMORY_DB if db is None else resolve_db(db)
        self._postgres = is_postgres_url(target)
        self._conn: Any
        self._tables: EDMTables
        if self._postgres:
            self.path = public_url(target)
            self._conn, self._tables = _open_postgres(target)
        else:
            self.path = target
            self._conn = connect(self.path)
            try:
                migrate(self._conn)
            except BaseException:
                self._conn.close()
                raise
            self._tables = EDMTables(self._conn)
        self._lock = threading.RLock()
        self._indexes: dict[str, VectorIndex] = {}
        self._approx: dict[str, _Approx | None] = {}
        self._data_version = self._tables.data_version()
        self._generation = self._tables.generation()

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close the database connection; the EDM cannot be used afterwards."""
        with self._lock:
            self._indexes.clear()
            self._approx.clear()
            self._conn.close()

    def __enter__(self) -> EDM:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"EDM(db={self.path!r}, embedder={self.embedder.name!r}, threshold={self.threshold!r})"
        )

    # ------------------------------------------------------------------ index upkeep
    def _sync(self) -> None:
        """Drop loaded indexes when another connection admitted or deleted episodes."""
        version = self._tables.data_version()
        if version == self._data_version:
            return
        self._data_version = version
        generation = self._tables.generation()
        if generation != self._generation:
            self._generation = generation
            self._indexes.clear()
            self._approx.clear()

    def _after_write(self) -> bool:
        """Record our own write's generation; False when another writer slipped in before."""
        bump = self._tables.last_bump
        self._tables.last_bump = None
        if bump is None:
            return True
        before, after = bump
        fresh = before == self._generation
        self._generation = after
        if not fresh:
            self._indexes.clear()
        self._approx.clear()  # reopened on next use: new vectors join its delta
        return fresh

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return embed_texts(self.embedder, texts)

    def _index(self, agent_id: str) -> VectorIndex:
        index = self._indexes.get(agent_id)
        if index is not None:
            return index
        dim = self.embedder.dim
        ids, matrix, missing = self._tables.vectors(agent_id, self.embedder.name, dim)
        index = VectorIndex(dim)
        index.add(ids, matrix)
        if missing:
            miss_ids = [eid for eid, _ in missing]
            vectors = self._embed([ctx for _, ctx in missing])
            self._tables.add_vectors(agent_id, miss_ids, vectors, self.embedder.name)
            index.add(miss_ids, vectors)
        self._indexes[agent_id] = index
        return index

    # ------------------------------------------------------------------ admission
    def admit(self, episode: Episode | dict[str, Any] | Any) -> AdmissionDecision:
        """Judge one scored episode and store it if it qualifies (see ``admit_many``).

        The decision is truthy exactly when the episode was admitted, so this also serves
        the adapters' ``admit(episode: dict) -> bool``.
        """
        parsed = parse_episode(episode, where="episode", clock=self._clock)
        return self._admit_parsed([parsed])[0]

    def admit_many(
        self, episodes: Iterable[Episode | dict[str, Any] | Any]
    ) -> list[AdmissionDecision]:
        """Judge and store a batch in one transaction; one decision per episode, in order.

        Every episode is validated first: a malformed one raises :class:`EpisodeError`
        naming ``episodes[i].field`` and nothing from the batch is stored. Refusals (E0
        evidence, no qualifying route, unsafe, duplicate id) are decisions, not errors.
        """
        now = iso_utc(self._clock())
        with collector_paused():  # many small objects, no cycles (_gc.py)
            parsed = [
                parse_episode(raw, where=f"episodes[{i}]", clock=self._clock, now=now)
                for i, raw in enumerate(episodes)
            ]
            return self._admit_parsed(parsed)

    def admit_run(
        self,
        result: Any,
        task: Any,
        *,
        agent_id: str = DEFAULT_AGENT_ID,
        run_id: str | None = None,
        trial_key: str | None = None,
        scenario: Any = None,
    ) -> AdmissionDecision:
        """Score a captured run first, then offer its episode: the way in for runs outside a battery.

        ``result`` is the run's ``TrialResult`` (or its list of hb-events); ``task`` the
        ``Task`` whose verifier decides whether it passed. From events, the answer and the
        conversation are rebuilt (``_from_events.result_from_events``) so the verifier reads the
        ``Outcome`` a battery trial gives (a team's answer by the team answer rule, not its
        last approving message). The verdict is computed here by
        ``score_trial`` and the episode carries the run's events, so EDM admits on figures it
        computed itself, as for battery trials.
        """
        from hbeval_core.contract import TrialResult
        from hbeval_core.vocab import OUTCOME_FAIL, OUTCOME_PASS

        from ..scoring import score_trial
        from ._from_trial import episode_from_trial

        if not isinstance(result, TrialResult):
            if isinstance(result, (str, bytes)) or not isinstance(result, Sequence):
                raise TypeError("result must be a TrialResult or a list of hb-events")
            from ._from_events import result_from_events

            result = result_from_events(
                list(result), answer_from=getattr(task, "answer_from", None)
            )
        verdict = score_trial(task, scenario, result).as_dict()
        trial = {
            "trial_key": trial_key,
            "outcome": OUTCOME_PASS if verdict.get("passed") is True else OUTCOME_FAIL,
            "verdict": verdict,
        }
        episode = episode_from_trial(
            task,
            scenario,
            trial,
            {"agent_id": _agent(agent_id), "run_id": run_id},
            events=result.events,
            final_text=result.response_text,
        )
        return self.admit(episode)

    def _admit_parsed(self, parsed: Sequence[Episode]) -> list[AdmissionDecision]:
        parsed = [computed_episode(ep) for ep in parsed]
        with self._lock:
            self._sync()
            ids = [ep.episode_id for ep in parsed]
            stored = self._tables.existing(ids)
            stored_q = self._tables.existing(ids, "edm_quarantine")
            decisions: list[AdmissionDecision] = []
            to_store: list[tuple[Episode, str]] = []
            to_quarantine: list[tuple[Episode, Sequence[str]]] = []
            for ep in parsed:
                if ep.episode_id in stored:
                    decisions.append(
                        AdmissionDecision(
                            admitted=False,
                            route=None,
                            reasons=(
                                f"duplicate: episode {ep.episode_id} is already stored; "
                                "nothing was overwritten",
                            ),
                            episode_id=ep.episode_id,
                            agent_id=ep.agent_id,
                        )
                    )
                    continue
                verdict = judge_episode(ep, self.policy)
                if verdict.unsafe:
                    reasons = verdict.reasons
                    if ep.episode_id in stored_q:
                        reasons += ("already quarantined: nothing was overwritten",)
                    else:
                        stored_q.add(ep.episode_id)
                        to_quarantine.append((with_admission(ep, None, self.policy), reasons))
                    decisions.append(
                        AdmissionDecision(
                            False, None, reasons, ep.episode_id, ep.agent_id, quarantined=True
                        )
                    )
                elif verdict.route is not None:
                    stored.add(ep.episode_id)
                    to_store.append((ep, verdict.route))
                    decisions.append(
                        AdmissionDecision(
                            True, verdict.route, verdict.reasons, ep.episode_id, ep.agent_id
                        )
                    )
                else:
                    decisions.append(
                        AdmissionDecision(False, None, verdict.reasons, ep.episode_id, ep.agent_id)
                    )
            if not to_store and not to_quarantine:
                return decisions
            vectors = (
                self._embed([ep.context for ep, _ in to_store])
                if to_store
                else np.zeros((0, self.embedder.dim), dtype=np.float32)
            )
            self._tables.write_batch(
                to_store, vectors, self.embedder.name, to_quarantine, self._policy_record
            )
            if self._after_write():
                by_agent: dict[str, list[int]] = {}
                for i, (ep, _) in enumerate(to_store):
                    by_agent.setdefault(ep.agent_id, []).append(i)
                for agent_id, rows in by_agent.items():
                    index = self._indexes.get(agent_id)
                    if index is not None:
                        index.add([to_store[i][0].episode_id for i in rows], vectors[rows])
            return decisions

    # ------------------------------------------------------------------ retrieval
    def _search(
        self, context: object, agent_id: str, k: int
    ) -> tuple[str, list[Match], float | None, int]:
        query = render_context(context)
        agent = _agent(agent_id)
        k = _top_k(k)
        vector = self._embed([query])[0]
        with self._lock:
            self._sync()
            approx = self._approx_for(agent)
            if approx is not None:
                hits, best, stored = self._approx_search(approx, agent, vector, k)
            else:
                index = self._index(agent)
                hits, best = index.search(vector, k, self.threshold)
                stored = len(index)
            records = self._tables.get_many([eid for eid, _ in hits])
            matches = [
                Match(records[eid], sim)
                for eid, sim in hits
                if eid in records and records[eid].agent_id == agent
            ]
            return query, matches, best, stored

    def snapshot(self, agent_ids: Iterable[str] | None = None) -> EDMSnapshot:
        """A read-only, picklable copy of these agents' episodes as they stand now.

        ``agent_ids`` None takes every agent that has episodes. The snapshot holds the episodes,
        their vectors in the order this EDM searches them, the embedder, threshold and ``top_k``,
        so its ``retrieve``/``recall``/``explain`` answer exactly as this EDM would have at this
        moment (always by exact search), in any process. Episodes admitted later are not in it;
        it admits nothing. A battery takes one before its first trial (``run_battery``).
        """
        from ._snapshot import EDMSnapshot

        with self._lock:
            self._sync()
            if agent_ids is None:
                agents = sorted({ep.agent_id for ep in self._tables.episodes(None)})
            else:
                agents = list(dict.fromkeys(_agent(a) for a in agent_ids))
            vectors = {agent: self._index(agent).export() for agent in agents}
            episodes: dict[str, Episode] = {}
            for agent in agents:
                indexed = set(vectors[agent][0])
                episodes.update(
                    (ep.episode_id, ep)
                    for ep in self._tables.episodes(agent)
                    if ep.episode_id in indexed
                )
        return EDMSnapshot(
            source=str(self.path),
            embedder=self.embedder,
            threshold=self.threshold,
            top_k=self.top_k,
            vectors=vectors,
            episodes=episodes,
            taken_at=iso_utc(self._clock()),
        )

    # ------------------------------------------------------------------ approximate index
    def build_index(self, agent_id: str = DEFAULT_AGENT_ID) -> int:
        """Build and save this agent's approximate index (faiss IVF-Flat); returns its size.

        Retrieval then asks it for candidates and ranks them exactly from SQLite (see
        ``memory/_ann.py``); episodes admitted later are searched exactly beside it, and a
        deletion drops it until it is built again. Needs a database file and faiss
        (``pip install 'hbeval[fast]'``).
        """
        agent = _agent(agent_id)
        if self.path == MEMORY_DB:
            raise ValueError("an in-memory EDM keeps no approximate index: open a file")
        if self._postgres:
            raise ValueError(
                "a PostgreSQL EDM keeps no approximate index (its files live beside a SQLite "
                "store): retrieval there is exact"
            )
        if not faiss_available():
            raise ImportError("the approximate index needs faiss: pip install 'hbeval[fast]'")
        with self._lock:
            self._sync()
            self._index(agent)  # embeds any episode that has no vector for this embedder yet
            dim, name = self.embedder.dim, self.embedder.name
            rowids, _ids, matrix = self._tables.vector_rows(agent, name, dim)
            if len(rowids) == 0:
                return 0
            built = ApproxIndex.build(rowids, matrix, agent_id=agent, embedder=name)
            built.save(*ann_paths(self.path, agent, name))
            self._approx[agent] = _Approx(built)
            return len(built)

    def _approx_for(self, agent: str) -> _Approx | None:
        if not self.approximate or self.path == MEMORY_DB or self._postgres:
            return None
        if agent not in self._approx:
            name, dim = self.embedder.name, self.embedder.dim
            opened = ApproxIndex.open(*ann_paths(self.path, agent, name), embedder=name, dim=dim)
            self._approx[agent] = None if opened is None else _Approx(opened)
        return self._approx[agent]

    def _approx_search(
        self, approx: _Approx, agent: str, vector: npt.NDArray[np.float32], k: int
    ) -> tuple[list[tuple[str, float]], float | None, int]:
        """Candidates from the index and every vector stored since, ranked exactly.

        Scores are exact cosines of the vectors SQLite holds; candidates are read joined with
        their episodes, so an episode deleted or never admitted for this agent is never ranked.
        Ties are broken by storage order (rowid), as the exact path breaks them by row.
        """
        name, dim = self.embedder.name, self.embedder.dim
        if approx.delta is None:
            approx.delta = self._tables.vector_rows(agent, name, dim, approx.index.max_rowid)
        rowids = approx.index.candidates(vector, max(APPROX_CANDIDATES, 4 * k))
        c_rowids, c_ids, c_matrix = self._tables.candidate_vectors(
            agent, name, dim, rowids.tolist()
        )
        _rowids, d_ids, d_matrix = approx.delta
        stored = len(approx.index) + len(d_ids)
        # Ranked by the exact path's own arithmetic (VectorIndex), rows in storage order, so
        # scores match it bit for bit and ties break the same way.
        # (An episode has one vector per embedder, so the ids are distinct.)
        order = np.argsort(np.asarray(c_rowids, dtype=np.int64), kind="stable")
        ids = [c_ids[i] for i in order]
        rows = c_matrix[order]
        if d_ids:
            ids += d_ids
            rows = np.concatenate([rows, d_matrix])
        hits, best = rank_rows(ids, rows, vector, k, self.threshold)
        return hits, best, stored

    # ------------------------------------------------------------------ records
    def get(self, episode_id: str, agent_id: str | None = None) -> Episode | None:
        """A stored episode by id (None if absent, or if it belongs to another agent)."""
        with self._lock:
            ep = self._tables.get(episode_id)
        if ep is None or (agent_id is not None and ep.agent_id != agent_id):
            return None
        return ep

    def list_episodes(
        self, agent_id: str | None = DEFAULT_AGENT_ID, limit: int | None = None
    ) -> list[Episode]:
        """Stored episodes, oldest first: one agent's, or every agent's with None."""
        with self._lock:
            return self._tables.episodes(agent_id, limit)

    def quarantined(self, agent_id: str | None = DEFAULT_AGENT_ID) -> list[dict[str, Any]]:
        """Unsafe episodes kept apart, with their reasons (never returned by retrieval)."""
        with self._lock:
            return self._tables.quarantined(agent_id)

    def count(self, agent_id: str | None = None) -> int:
        """How many episodes are stored (one agent's, or all)."""
        with self._lock:
            return self._tables.count(agent_id)

    def delete(self, episode_id: str, agent_id: str | None = None) -> bool:
        """Remove a stored episode so it can never be retrieved; True when it existed.

        With ``agent_id``, only that agent's episode is removed.
        """
        with self._lock:
            ep = self._tables.get(episode_id)
            if ep is None or (agent_id is not None and ep.agent_id != agent_id):
                return False
            self._sync()
            removed = self._tables.delete(episode_id)
            if removed and self.path != MEMORY_DB and not self._postgres:
                # The saved index still holds it: drop the index (SQLite stays the truth).
                remove_agent_files(self.path, ep.agent_id)
                self._approx.pop(ep.agent_id, None)
            if self._after_write():
                index = self._indexes.get(ep.agent_id)
                if index is not None:
                    index.remove(episode_id)
            return removed


def _open_postgres(url: str) -> tuple[Any, EDMTables]:
    """A connection to the PostgreSQL store at ``url`` with the ``edm_*`` tables migrated."""
    from ..store.postgres import _Conn
    from ._pg import PgEDMTables, pg_connect, pg_migrate

    raw = pg_connect(url)
    conn = _Conn(raw)
    try:
        pg_migrate(conn)
    except BaseException:
        raw.close()
        raise
    return raw, PgEDMTables(conn)


def open_edm(url_or_path: str | Path | None = None, **options: Any) -> EDM:
    """Open EDM in the store's database (default ``./.hbeval/hbeval.db``).

    A path or ``sqlite:///path`` is the store's SQLite file; ``postgresql://...`` is a
    PostgreSQL store (EDM's tables beside the store's, extra ``[postgres]``).

    ``options`` are :class:`EDM`'s keyword arguments (embedder, threshold, policy, top_k, clock).
    """
    return EDM(resolve_db(url_or_path), **options)
