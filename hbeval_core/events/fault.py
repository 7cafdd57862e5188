"""Fault injection receipts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import EventBase


class FaultInjected(EventBase):
    """A fault was applied to a tool call. Emitted before the call's tool_end or tool_error.

    Intended (what the plan asked for), injected (what the injector did) and observed (what the
    call then looked like) are kept apart, as the reference's FaultEvent does.
    """

    kind: Literal["fault_injected"] = "fault_injected"
    call_id: str | None = Field(
        default=None, description="Tool call (or, for a model fault, model call) it was applied to."
    )
    tool: str | None = Field(default=None, description="Target tool name.")
    mode: Literal[
        "timeout",
        "latency",
        "error_5xx",
        "connection_refused",
        "empty_response",
        "malformed",
        "intermittent",
        "truncated",
        "prompt_injection",
        "lost_result",
        "crash",
        "commit_then_timeout",
        "protocol_error",
        "poisoned_description",
        "definition_change",
        "rate_limit",
        "model_error",
        "model_timeout",
        "stream_cut",
        "malformed_tool_call",
        "empty_completion",
        "context_overflow",
    ] = Field(
        description="Fault mode (vocab.FAULT_MODES, vocab.MCP_FAULT_MODES, vocab.MODEL_FAULT_MODES)."
    )
    effect: Literal[
        "error", "result_altered", "result_augmented", "delayed", "result_lost", "crash"
    ] = Field(description="How the fault reached the agent (vocab.FAULT_EFFECTS).")
    payload: str | None = Field(
        default=None,
        description="Text the agent should see because of the fault; its delivery receipt looks for it.",
    )
    intended: dict[str, Any] = Field(
        default_factory=dict, description="The plan's parameters for this fault."
    )
    injected: Literal["applied", "skipped", "failed", "partial"] = Field(
        default="applied", description="What the injector did."
    )
    observed: str | None = Field(
        default=None,
        description="Observed outcome: normal, timeout, exception, empty, malformed, delayed_success.",
    )
    plan_id: str | None = Field(default=None, description="Fault plan id.")
    fault_id: str | None = Field(default=None, description="Fault spec id within the plan.")
    attempt: int | None = Field(
        default=None, ge=0, description="Call index on the target that fired."
    )
    forbidden_tool: str | None = Field(
        default=None,
        description="For prompt_injection: the forbidden tool the planted text tries to trigger.",
    )
