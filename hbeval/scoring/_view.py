"""A report's sections as the JSON they are written as, for code that lays them out.

Renderers (terminal, HTML, OTLP attributes) walk a section's JSON as written, so an old report
lacking an optional section still renders; everything else reads the typed ``Report``. The
section and list names are ``Literal`` types: a misspelt one is a type error, not ``{}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ._security import scored_trials, trial_records

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = ["ListName", "Section", "listed", "scored_records", "section"]

Section = Literal[
    "run",
    "metrics",
    "undefined",
    "thresholds",
    "pass_rate",
    "reliability_gap",
    "breakdowns",
    "severity",
    "agentdojo",
    "efficiency",
    "fault_delivery",
    "traceability",
    "evidence",
    "fingerprints",
    "versions",
    "isolation",
    "source",
    "csi_info",
    "scores",
    "outcomes",
    "defined_counts",
    "metric_versions",
]
"""The report sections a renderer reads as the JSON they are written as (``section``)."""


def section(report: Report, name: Section) -> dict[str, Any]:
    """One section of ``report`` as the JSON it is written as; ``{}`` when the report has none.

    The renderers lay sections out as written (an old report may lack an optional one); the
    section name is checked by the type checker, so a misspelt one is an error, not ``{}``.
    """
    value = getattr(report, name)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    return dict(value) if isinstance(value, Mapping) else {}


ListName = Literal["trials", "scenarios", "tail", "pass_at_k", "pass_hat_k"]
"""The report's lists of blocks (``listed``)."""


def listed(report: Report, name: ListName) -> list[dict[str, Any]]:
    """One of ``report``'s lists of blocks as the JSON objects it is written as."""
    return [item.model_dump(mode="json", exclude_unset=True) for item in getattr(report, name)]


def scored_records(report: Report) -> list[dict[str, Any]]:
    """The scored trials (``scored_trials``) as the JSON objects the report holds."""
    return trial_records(scored_trials(report))
