"""Report blocks of the run's own ledgers: the waves of ``--until-decided``, duplicate side
effects and model faults (kept apart from ``_report_model`` so each file stays readable)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._trial_model import _Block

__all__ = [
    "DuplicatedTrial",
    "ModelFaultRow",
    "RunModelFaults",
    "RunSideEffects",
    "SequentialCheck",
    "SequentialInfo",
]


class SequentialCheck(_Block):
    """One verdict check as the always-valid bound saw it at the last wave run."""

    metric: str
    kind: str = Field(description="floor, security, ceiling, delivery.")
    state: Literal["passed", "failed", "open"] = Field(
        description="Decided passed or failed at the confidence, or still open."
    )
    lower: float | None = Field(
        default=None, description="A floor's lower bound (TI on its 0–5 scale); null otherwise."
    )
    upper: float | None = Field(default=None, description="A floor's upper bound.")
    threshold: float | None = None


class SequentialInfo(_Block):
    """``battery run --until-decided``: the waves run, why the run stopped, the bound used."""

    waves_run: int = Field(ge=0, description="Waves run (a wave is one trial of every scenario).")
    max_waves: int = Field(ge=1, description="The waves allowed (--trials).")
    stopped: Literal["decided", "max_trials", "budget_exhausted"] = Field(
        description="decided: the verdict was settled at the confidence (at the last wave, "
        "or before it); max_trials: every wave ran and it was still not settled; "
        "budget_exhausted: --max-cost stopped it."
    )
    confidence: float = Field(gt=0, lt=1)
    bound: str = Field(description="The always-valid bound (docs/statistics.md).")
    trials_run: int = Field(ge=0)
    trials_planned: int = Field(ge=0, description="Trials a fixed run of --trials would run.")
    checks: list[SequentialCheck] = Field(default_factory=list)


class DuplicatedTrial(_Block):
    """A trial with at least one duplicate side effect."""

    trial_key: str | None
    fault_type: str | None
    duplicates: int = Field(ge=1)
    after_faults: list[str] = Field(description="The fault before each duplicate ('none').")


class RunSideEffects(_Block):
    """Duplicate side effects over the scored trials that had irreversible tools."""

    trials_counted: int = Field(ge=0, description="Scored trials with irreversible tools.")
    trials_with_duplicates: int = Field(ge=0)
    duplicate_side_effects: int = Field(ge=0, description="Duplicates in all.")
    by_fault: dict[str, int] = Field(description="Duplicates by the fault that preceded them.")
    by_tool: dict[str, int]
    trials: list[DuplicatedTrial]


class ModelFaultRow(_Block):
    """Model faults of one mode (or of the whole run): trials, FRR, IRS and handling."""

    faults: int = Field(ge=0, description="Delivered model faults.")
    trials: int = Field(ge=0, description="Scored trials that received one.")
    recovered: int = Field(ge=0, description="Of those, recoveries (FRR's rule).")
    frr: float | None = Field(ge=0.0, le=1.0, description="recovered / trials.")
    judged: int = Field(ge=0, description="Of those, trials with an IRS score.")
    deliberate: int = Field(ge=0, description="Judged trials handled deliberately.")
    irs: float | None = Field(ge=0.0, le=1.0, description="Mean IRS of the judged trials.")
    handling: dict[str, int] = Field(
        description="Faults by handling: deliberate (a retry honouring Retry-After, a "
        "fallback), retry_ignored_retry_after, retry_unbounded, continued, gave_up, unknown."
    )
    undefined: dict[str, str] = Field(description="Why frr or irs is null.")


class RunModelFaults(ModelFaultRow):
    """Model faults the run's scored trials received, with a row per fault mode."""

    retry_bound: int = Field(ge=0, description="Retries of one request that stay bounded.")
    by_mode: dict[str, ModelFaultRow]
