"""HCI-EDM: explanations that cite a stored, qualified episode verbatim, or defer to a human.

An explanation is never generated. Either a stored episode of the same agent is at or above
the similarity threshold, and the answer quotes its recorded figures exactly as stored
(``PEI 0.8333 ... and TI 4.5, recorded for episode ep-... (run r1)``), or the answer is
``grounded: false`` and says "Uncertain — human review advised".

A context may be a string or a dict. A dict is rendered the way the reference's dashboard
builds a plan summary (mirroring ``edm_guard``'s ``_build_summary``): ``domain``, ``pei``,
``ti`` first, in that order (``domain=unspecified`` and ``n/a`` when missing or null), then
every other key in alphabetical order, each as ``key=value``, joined by ``"; "``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._episode import EDM_METRICS, Episode

CONTEXT_FIELD_ORDER = ("domain", "pei", "ti")
"""Keys a dict context always renders first, in this order (the reference's summary prefix)."""
DEFERRAL_PREFIX = "Uncertain — human review advised"
_MAX_CONTEXT = 20_000


class ContextError(ValueError):
    """A context to explain or recall is not a non-empty string or a flat dict."""


def _render_value(key: str, value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    raise ContextError(
        f"context.{key} must be a string, number, boolean or null, got {type(value).__name__}"
    )


def render_context(context: object) -> str:
    """The text that is embedded for a context: the string itself, or a rendered dict."""
    if isinstance(context, str):
        text = context.strip()
        if not text:
            raise ContextError("context must be a non-empty string")
        if len(text) > _MAX_CONTEXT:
            raise ContextError(f"context is longer than {_MAX_CONTEXT} characters")
        return text
    if isinstance(context, Mapping):
        for key in context:
            if not isinstance(key, str) or not key:
                raise ContextError(f"context keys must be non-empty strings, got {key!r}")
        domain = context.get("domain")
        parts = [
            "domain="
            + ("unspecified" if domain in (None, "") else _render_value("domain", domain)),
            f"pei={_render_value('pei', context.get('pei'))}",
            f"ti={_render_value('ti', context.get('ti'))}",
        ]
        parts += [
            f"{k}={_render_value(k, context[k])}"
            for k in sorted(context)
            if k not in CONTEXT_FIELD_ORDER
        ]
        return render_context("; ".join(parts))
    raise ContextError(f"context must be a string or a dict, got {type(context).__name__}")


def grounded(
    episode: Episode,
    similarity: float,
    *,
    threshold: float,
    embedder: str,
    agent_id: str,
    query: str,
) -> dict[str, Any]:
    """The grounded answer: cite ``episode`` and quote its stored figures verbatim."""
    run = f"run {episode.run_id}" if episode.run_id else "no run id recorded"
    trial = f", trial {episode.trial_key}" if episode.trial_key else ""
    explanation = (
        f"A similar task has a qualified precedent: {episode.quoted_metrics()}, recorded for "
        f"episode {episode.episode_id} ({run}{trial}), admitted by the {episode.route} route "
        f"with {episode.evidence_level} evidence. Similarity {similarity:.4f} >= threshold "
        f"{threshold!r} ({embedder}). Recorded trajectory: {episode.summary}"
    )
    return {
        "grounded": True,
        "explanation": explanation,
        "cited_episode_id": episode.episode_id,
        "similarity": round(similarity, 4),
        "cited_metrics": {m: episode.metrics.get(m) for m in EDM_METRICS},
        "undefined": dict(episode.metrics_undefined),
        "evidence": {"pei": episode.metrics.get("pei"), "ti": episode.metrics.get("ti")},
        "evidence_level": episode.evidence_level,
        "route": episode.route,
        "run_id": episode.run_id,
        "trial_key": episode.trial_key,
        "deferred_to_human": False,
        "agent_id": agent_id,
        "threshold": threshold,
        "embedder": embedder,
        "query": query,
    }


def deferral(
    best: float | None,
    *,
    threshold: float,
    embedder: str,
    agent_id: str,
    query: str,
    stored: int,
) -> dict[str, Any]:
    """The ungrounded answer: no qualified precedent clears the threshold, so defer."""
    if stored == 0:
        why = f"no qualified episodes are stored for agent {agent_id!r}"
    else:
        why = (
            f"the closest of {stored} stored episode(s) has similarity {best:.4f}, "
            f"below {threshold!r}"
            if best is not None
            else f"none of {stored} stored episode(s) could be compared"
        )
    explanation = (
        f"{DEFERRAL_PREFIX}: no qualified precedent for agent {agent_id!r} at or above "
        f"similarity {threshold!r} ({embedder}); {why}. No rationale is generated without "
        f"a stored precedent."
    )
    return {
        "grounded": False,
        "explanation": explanation,
        "cited_episode_id": None,
        "similarity": None if best is None else round(best, 4),
        "cited_metrics": None,
        "undefined": {},
        "evidence": None,
        "deferred_to_human": True,
        "agent_id": agent_id,
        "threshold": threshold,
        "embedder": embedder,
        "query": query,
    }
