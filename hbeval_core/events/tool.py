"""Tool call events."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import EventBase


class ToolStart(EventBase):
    """A tool call begins (also emitted when a fault short-circuits the real tool)."""

    kind: Literal["tool_start"] = "tool_start"
    call_id: str = Field(description="Tool call id, linking to the model reply that issued it.")
    tool: str = Field(description="Tool name.")
    args: dict[str, Any] = Field(
        default_factory=dict, description="Arguments the tool was called with."
    )


class ToolEnd(EventBase):
    """A tool call returns a result (status error when the framework turned an error into a result)."""

    kind: Literal["tool_end"] = "tool_end"
    call_id: str = Field(description="Tool call id.")
    tool: str = Field(description="Tool name.")
    result: Any = Field(default=None, description="The result the agent received.")
    status: Literal["ok", "error"] = Field(
        default="ok",
        description="error when the result is an error message (ToolMessage status error, is_error).",
    )
    latency_ms: float | None = Field(
        default=None, ge=0, description="Call latency in milliseconds."
    )


class ToolError(EventBase):
    """A tool call raised."""

    kind: Literal["tool_error"] = "tool_error"
    call_id: str = Field(description="Tool call id.")
    tool: str = Field(description="Tool name.")
    error: str = Field(description="Error text the agent saw.")
    error_type: str | None = Field(default=None, description="Exception class name.")
    latency_ms: float | None = Field(
        default=None, ge=0, description="Call latency in milliseconds."
    )
