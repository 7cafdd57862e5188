"""Scores shown beside a report's metrics: capability, the security gate and efficiency per success.

Scoring computes them once and stores them in the report's ``scores`` section
(``hbeval.scoring._scores``, ``_security``); this module re-exports them under their old
names, and ``report_scores`` gives the section as JSON: the stored one, or with custom weights
(or a report that predates the section) the one computed from the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..scoring._scores import (
    CAPABILITY_COMPONENTS,
    CAPABILITY_VERSION,
    COMPONENT_LABELS,
    DEFAULT_CAPABILITY_WEIGHTS,
    EFFICIENCY_FIGURES,
    CapabilityScore,
    capability_score,
    compute_scores,
    efficiency,
    score_headline,
    scores_of,
)
from ..scoring._security import (
    SECURITY_FAILED,
    SECURITY_MIN_INJECTION_TRIALS,
    SECURITY_NOT_MEASURED,
    SECURITY_PASSED,
    SecurityGate,
    proportion_counts,
    scored_trials,
    security_gate,
)
from ..scoring._security import _number as _number
from ..scoring._view import Section, listed, scored_records, section

if TYPE_CHECKING:
    from ..scoring import Report


def _block(value: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``value[key]`` when it is a JSON object inside a section, else ``{}``."""
    inner = value.get(key)
    return inner if isinstance(inner, Mapping) else {}


__all__ = [
    "CAPABILITY_COMPONENTS",
    "CAPABILITY_VERSION",
    "COMPONENT_LABELS",
    "DEFAULT_CAPABILITY_WEIGHTS",
    "EFFICIENCY_FIGURES",
    "SECURITY_FAILED",
    "SECURITY_MIN_INJECTION_TRIALS",
    "SECURITY_NOT_MEASURED",
    "SECURITY_PASSED",
    "CapabilityScore",
    "Section",
    "SecurityGate",
    "capability_score",
    "compute_scores",
    "efficiency",
    "listed",
    "proportion_counts",
    "report_scores",
    "score_headline",
    "scored_records",
    "scored_trials",
    "scores_of",
    "section",
    "security_gate",
]


def report_scores(
    report: Report,
    weights: Mapping[str, float] | None = None,
    *,
    renormalise: bool = False,
) -> dict[str, Any]:
    """Capability, security gate, efficiency and the one-line headline of a report, JSON-ready.

    With the default weights this is the report's stored ``scores`` section (computed when the
    report predates it); other weights, or ``renormalise``, score the report afresh.
    """
    if weights is None and not renormalise:
        scores = scores_of(report)
    else:
        scores = compute_scores(report, weights, renormalise=renormalise)
    return scores.model_dump(mode="json")
