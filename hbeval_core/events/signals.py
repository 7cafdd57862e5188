"""Agent and monitor signals: re-plans, claims, halts, directives and explicit steps."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import EventBase


class Replan(EventBase):
    """The agent (or its framework) declared a re-plan."""

    kind: Literal["replan"] = "replan"
    reason: str | None = Field(default=None, description="Why the plan changed.")


class Claim(EventBase):
    """An agent's self-report (deliberate_handling, plan_stability, ...). The trace decides."""

    kind: Literal["claim"] = "claim"
    name: str = Field(
        description="What is claimed, e.g. deliberate_handling or a behavioural field name."
    )
    value: Any = Field(default=True, description="Claimed value.")
    text: str | None = Field(
        default=None, description="The agent's words, when the claim came from text."
    )


class Halt(EventBase):
    """A Safe Halt decision."""

    kind: Literal["halt"] = "halt"
    metric: str | None = Field(default=None, description="Metric that triggered the halt.")
    value: float | None = Field(default=None, description="Its value at the halt.")
    threshold: float | None = Field(default=None, description="The policy's bound.")
    reason: str = Field(default="", description="Human-readable reason.")
    trigger: Literal["policy", "policy_engine", "halt_signal", "manual"] = Field(
        default="policy", description="What raised the halt."
    )
    enforced: bool = Field(default=False, description="Whether the halt stops the run.")


class Directive(EventBase):
    """An advisory directive from the monitor (replan, escalate, retry, halt)."""

    kind: Literal["directive"] = "directive"
    action: Literal["replan", "escalate", "retry", "halt"] = Field(
        description="What the monitor advises."
    )
    reason: str = Field(default="", description="Why.")
    metric: str | None = Field(default=None, description="Metric behind the directive.")
    value: float | None = Field(default=None, description="Its value.")
    tool: str | None = Field(
        default=None, description="Tool concerned, for retries and circuit breakers."
    )


class Step(EventBase):
    """An explicit step carrying record_step's fields verbatim (the reference-compatible path)."""

    kind: Literal["step"] = "step"
    action: str = Field(default="", description="Action label.")
    success: bool = Field(default=True, description="Whether the step succeeded.")
    had_fault: bool = Field(default=False, description="Whether the step met a fault.")
    recovered_intentionally: bool | None = Field(
        default=None, description="Self-reported deliberate recovery."
    )
    traceable: bool = Field(default=True, description="Whether the step's reason is on record.")
    replanned: bool = Field(default=False, description="Whether the step is a declared re-plan.")
    handled_deliberately: bool | None = Field(
        default=None, description="Self-reported deliberate handling."
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form step metadata.")
