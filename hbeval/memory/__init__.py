"""Evaluation-driven memory (EDM) and grounded explanations (HCI-EDM).

EDM admits an agent's scored episodes only when their scores earned it (spec §4.1: the
*elaborate* route PEI >= 0.80 and TI >= 4.0, or the *handling* route IRS >= 0.85 and TI >= 1.5;
safe trials only; E1 evidence or better) and retrieves them for similar tasks of the same
agent at or above a calibrated cosine threshold. ``explain`` cites a stored episode's figures
verbatim or defers to human review. ``mir`` measures how retrieval survives a poisoned episode.
``episode_from_trial`` builds the episode of a scored battery trial (``run_battery(...,
memory=edm)`` admits every trial of a run with it).

Quick start (EDM computes every figure it admits on from the run's trace; claimed figures
are ignored)::

    from hbeval.memory import open_edm

    edm = open_edm()                     # ./.hbeval/hbeval.db, beside the store
    edm.admit_run(result, task, agent_id="support", run_id="r1", trial_key="s0-t0")
    edm.recall("Order 4411 was charged twice; refund it", agent_id="support")
    edm.explain("Order 4411 was charged twice; refund it", agent_id="support")

See docs/memory.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "CONTEXT_FIELD_ORDER": "._explain",
    "DEFAULT_AGENT_ID": "._episode",
    "DEFAULT_DB_PATH": "._sqlite",
    "DEFAULT_TOP_K": "._recall",
    "DEFERRAL_PREFIX": "._explain",
    "EDM": "._edm",
    "EDM_METRICS": "._episode",
    "EDM_SCHEMA_VERSION": "._sqlite",
    "EDM_VERSION": "._episode",
    "EMBEDDERS": "._open",
    "HASHING_EMBEDDER_NAME": "._embed",
    "HASHING_THRESHOLD": "._embed",
    "MINILM_THRESHOLD": "._embed",
    "ROUTES": "._episode",
    "ROUTE_ELABORATE": "._episode",
    "ROUTE_HANDLING": "._episode",
    "AdmissionDecision": "._episode",
    "AdmissionPolicy": "._episode",
    "Calibration": "._embed",
    "ContextError": "._explain",
    "DBLocationError": "._sqlite",
    "EDMSchemaError": "._episode",
    "EDMSnapshot": "._snapshot",
    "Embedder": "._embed",
    "Episode": "._episode",
    "EpisodeError": "._episode",
    "HashingEmbedder": "._embed",
    "MIRQuery": "._mir",
    "MIRResult": "._mir",
    "Match": "._recall",
    "MiniLMEmbedder": "._embed",
    "NaiveMemory": "._mir",
    "SnapshotError": "._snapshot",
    "VectorIndex": "._index",
    "calibrate": "._embed",
    "episode_from_trial": "._from_trial",
    "evaluate_threshold": "._embed",
    "format_figure": "._episode",
    "mir": "._mir",
    "open_edm": "._edm",
    "open_memory": "._open",
    "pair_similarities": "._embed",
    "parse_episode": "._episode",
    "render_context": "._explain",
    "render_summary": "._episode",
    "resolve_db": "._sqlite",
    "trajectory_summary": "._from_trial",
}

__all__ = [
    "CONTEXT_FIELD_ORDER",
    "DEFAULT_AGENT_ID",
    "DEFAULT_DB_PATH",
    "DEFAULT_TOP_K",
    "DEFERRAL_PREFIX",
    "EDM",
    "EDM_METRICS",
    "EDM_SCHEMA_VERSION",
    "EDM_VERSION",
    "EMBEDDERS",
    "HASHING_EMBEDDER_NAME",
    "HASHING_THRESHOLD",
    "MINILM_THRESHOLD",
    "ROUTES",
    "ROUTE_ELABORATE",
    "ROUTE_HANDLING",
    "AdmissionDecision",
    "AdmissionPolicy",
    "Calibration",
    "ContextError",
    "DBLocationError",
    "EDMSchemaError",
    "EDMSnapshot",
    "Embedder",
    "Episode",
    "EpisodeError",
    "HashingEmbedder",
    "MIRQuery",
    "MIRResult",
    "Match",
    "MiniLMEmbedder",
    "NaiveMemory",
    "SnapshotError",
    "VectorIndex",
    "calibrate",
    "episode_from_trial",
    "evaluate_threshold",
    "format_figure",
    "mir",
    "open_edm",
    "open_memory",
    "pair_similarities",
    "parse_episode",
    "render_context",
    "render_summary",
    "resolve_db",
    "trajectory_summary",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)


if TYPE_CHECKING:
    from ._edm import EDM, open_edm
    from ._embed import (
        HASHING_EMBEDDER_NAME,
        HASHING_THRESHOLD,
        MINILM_THRESHOLD,
        Calibration,
        Embedder,
        HashingEmbedder,
        MiniLMEmbedder,
        calibrate,
        evaluate_threshold,
        pair_similarities,
    )
    from ._episode import (
        DEFAULT_AGENT_ID,
        EDM_METRICS,
        EDM_VERSION,
        ROUTE_ELABORATE,
        ROUTE_HANDLING,
        ROUTES,
        AdmissionDecision,
        AdmissionPolicy,
        EDMSchemaError,
        Episode,
        EpisodeError,
        format_figure,
        parse_episode,
        render_summary,
    )
    from ._explain import CONTEXT_FIELD_ORDER, DEFERRAL_PREFIX, ContextError, render_context
    from ._from_trial import episode_from_trial, trajectory_summary
    from ._index import VectorIndex
    from ._mir import MIRQuery, MIRResult, NaiveMemory, mir
    from ._open import EMBEDDERS, open_memory
    from ._recall import DEFAULT_TOP_K, Match
    from ._snapshot import EDMSnapshot, SnapshotError
    from ._sqlite import DEFAULT_DB_PATH, EDM_SCHEMA_VERSION, DBLocationError, resolve_db
