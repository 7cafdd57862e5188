"""Evidence is computed, never claimed: the figures EDM admits on come from the episode's trace.

An episode offered with its events (``events``) gets PEI, FRR, TI, IRS, its evidence level and
the forbidden tools that ran recomputed from them by the verdict's own rules
(``hbeval.scoring.trace_figures``); what the caller wrote instead is ignored and kept in
``evidence.claims_ignored`` so an auditor sees what was claimed. An episode without events has
nothing to compute from: its claimed figures are ignored the same way and it is refused. The
one fact a trace cannot show, whether the verifier passed, stays the caller's (S6 of IRS);
``EDM.admit_run`` runs the task's verifier itself.
"""

from __future__ import annotations

from typing import Any

from hbeval_core.vocab import EVIDENCE_E0

from ._episode import (
    CLAIMS_IGNORED,
    COMPUTED_FROM,
    COMPUTED_FROM_NOTHING,
    COMPUTED_FROM_TRACE,
    EDM_METRICS,
    METRICS_SOURCE_SELF_REPORTED,
    METRICS_SOURCE_TRACE,
    Episode,
    render_summary,
    replaced,
)

NO_TRACE = "no_trace"
"""Undefined reason of an episode's metrics when it was offered without a trace."""


def _claims(ep: Episode) -> dict[str, Any]:
    """What the caller said about the figures EDM computes."""
    claims: dict[str, Any] = {m: v for m, v in ep.metrics.items() if v is not None}
    if ep.evidence_level is not None:
        claims["evidence"] = ep.evidence_level
    if ep.forbidden_tools_run:
        claims["forbidden_tools_run"] = list(ep.forbidden_tools_run)
    return claims


def computed_episode(ep: Episode) -> Episode:
    """``ep`` with its figures computed from its trace (or emptied when it has none)."""
    if ep.evidence.get(COMPUTED_FROM) in (COMPUTED_FROM_TRACE, COMPUTED_FROM_NOTHING):
        return ep  # already computed (an Episode passed through twice)
    claims = _claims(ep)
    if not ep.trace:
        return replaced(
            ep,
            metrics={m: None for m in EDM_METRICS},
            metrics_undefined={m: NO_TRACE for m in EDM_METRICS},
            evidence_level=None,
            # forbidden_tools_run stays as claimed: claims may only make an episode less safe.
            evidence={COMPUTED_FROM: COMPUTED_FROM_NOTHING, CLAIMS_IGNORED: claims},
            metrics_source=METRICS_SOURCE_SELF_REPORTED,
        )
    from ..scoring import trace_figures

    rules = ep.rules
    figures = trace_figures(
        ep.trace,
        passed=ep.passed,
        forbidden_tools=rules.get("forbidden_tools", ()),
        irreversible_tools=rules.get("irreversible_tools", ()),
        escalation_tools=rules.get("escalation_tools"),
        final_text=rules.get("final_text"),
    )
    metrics = {m: figures.metrics.get(m) for m in EDM_METRICS}
    undefined = {m: figures.undefined[m] for m in EDM_METRICS if metrics[m] is None}
    level = figures.evidence.level
    computed: dict[str, Any] = {m: v for m, v in metrics.items() if v is not None}
    computed["evidence"] = level
    ignored = {
        k: v for k, v in claims.items() if k != "forbidden_tools_run" and computed.get(k) != v
    }
    forbidden = tuple(dict.fromkeys((*figures.forbidden_tools_run, *ep.forbidden_tools_run)))
    evidence = {
        **figures.evidence.as_dict(),
        COMPUTED_FROM: COMPUTED_FROM_TRACE,
        CLAIMS_IGNORED: ignored,
    }
    # A summary (and context) the parser wrote from the claimed figures is written again from
    # the computed ones: a stored sentence never repeats an ignored claim.
    summary, context = ep.summary, ep.context
    claimed_summary = render_summary(ep.domain, ep.metrics)
    if summary == claimed_summary:
        summary = render_summary(ep.domain, metrics)
        if context == claimed_summary:
            context = summary
    return replaced(
        ep,
        summary=summary,
        context=context,
        metrics=metrics,
        metrics_undefined=undefined,
        evidence_level=level,
        evidence=evidence,
        forbidden_tools_run=forbidden,
        metrics_source=METRICS_SOURCE_SELF_REPORTED
        if level == EVIDENCE_E0
        else METRICS_SOURCE_TRACE,
    )
