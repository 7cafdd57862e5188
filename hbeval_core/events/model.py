"""Model (LLM) call events."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._base import EventBase


class ChatMessage(BaseModel):
    """One message of a model's input, flattened to text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field(description="system, user, assistant or tool.")
    content: str = Field(default="", description="Text content (non-text parts rendered as text).")
    tool_call_id: str | None = Field(
        default=None, description="For tool messages: the call they answer."
    )


class ToolCall(BaseModel):
    """A tool call the model issued."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Call id; the tool events of this call carry it as call_id.")
    name: str = Field(description="Tool name.")
    args: dict[str, Any] = Field(
        default_factory=dict, description="Arguments as the model gave them."
    )


class Usage(BaseModel):
    """Token usage when the provider reports it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int | None = Field(default=None, ge=0, description="Prompt tokens.")
    output_tokens: int | None = Field(default=None, ge=0, description="Completion tokens.")


class ModelStart(EventBase):
    """A model call begins."""

    kind: Literal["model_start"] = "model_start"
    call_id: str = Field(description="Id of this model call.")
    model: str | None = Field(default=None, description="Model identifier when known.")
    messages: list[ChatMessage] = Field(
        default_factory=list,
        description="The call's input messages (adapters may send only those new since the previous call).",
    )


class ModelEnd(EventBase):
    """A model call returns."""

    kind: Literal["model_end"] = "model_end"
    call_id: str = Field(description="Id of the model call that ends.")
    text: str | None = Field(default=None, description="Text content of the reply.")
    reasoning: str | None = Field(
        default=None, description="Reasoning or thought content, when exposed."
    )
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Tool calls the reply issued."
    )
    usage: Usage | None = Field(default=None, description="Token usage when reported.")
    latency_ms: float | None = Field(
        default=None, ge=0, description="Call latency in milliseconds."
    )
    error: str | None = Field(default=None, description="Error text when the model call failed.")
