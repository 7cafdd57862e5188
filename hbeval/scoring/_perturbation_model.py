"""The report's ``perturbations`` blocks (built by ``_perturbations``)."""

from __future__ import annotations

from pydantic import Field

from ._trial_model import Interval, Undefined, _Block

__all__ = ["PerturbationContext", "PerturbationFamily", "Perturbations"]


class PerturbationContext(_Block):
    """One perturbed question form (one context sentence)."""

    trials: int = Field(ge=0, description="Scored trials.")
    passed: int = Field(ge=0)
    pass_rate: float | None = Field(ge=0.0, le=1.0)


class PerturbationFamily(_Block):
    """The trials of one perturbation family against the run's nominal trials."""

    scenarios: int = Field(ge=0)
    trials: int = Field(ge=0, description="Scored trials.")
    passed: int = Field(ge=0)
    pass_rate: float | None = Field(ge=0.0, le=1.0)
    pass_rate_interval: Interval | None = Field(description="Clustered by scenario.")
    nominal_trials: int = Field(ge=0, description="Scored nominal trials on the same tasks.")
    nominal_pass_rate: float | None = Field(ge=0.0, le=1.0)
    paired_trials: int = Field(ge=0, description="Perturbed trials of tasks with nominal trials.")
    paired_pass_rate: float | None = Field(ge=0.0, le=1.0)
    tasks_without_nominal: list[str] = Field(
        description="Perturbed tasks the run has no nominal trial of (left out of the change)."
    )
    change: float | None = Field(
        ge=-1.0,
        le=1.0,
        description="paired_pass_rate - nominal_pass_rate (negative: the prompt hurt).",
    )
    change_interval: Interval | None = Field(description="Newcombe over the clustered rates.")
    by_context: dict[str, PerturbationContext]
    undefined: Undefined = Field(default_factory=dict)


class Perturbations(_Block):
    """The report's prompt-perturbation section."""

    note: str
    families: dict[str, PerturbationFamily]
