"""Run and span lifecycle events."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._base import EventBase


class RunStart(EventBase):
    """An agent run (one trial) begins."""

    kind: Literal["run_start"] = "run_start"
    agent_id: str | None = Field(default=None, description="Agent id that scopes CSI and memory.")
    task_id: str | None = Field(
        default=None, description="Task this run attempts, inside a battery."
    )
    scenario: int | None = Field(
        default=None, description="Battery scenario index, inside a battery."
    )
    trial: int | None = Field(
        default=None, description="Trial index within the scenario, inside a battery."
    )
    framework: str | None = Field(
        default=None, description="Framework that produced the events (langgraph, crewai, ...)."
    )
    input: Any = Field(default=None, description="The run's input (the task question).")


class RunEnd(EventBase):
    """An agent run ends."""

    kind: Literal["run_end"] = "run_end"
    status: Literal["ok", "error", "halted", "timeout", "cancelled"] = Field(
        default="ok", description="How the run ended."
    )
    output: Any = Field(default=None, description="The run's final output or state summary.")
    error: str | None = Field(default=None, description="Error text when status is error.")


class SpanStart(EventBase):
    """A framework span (graph, node, task, agent, crew, team) begins."""

    kind: Literal["span_start"] = "span_start"
    span_id: str = Field(description="Id of this span; children name it as parent_id.")
    scope: Literal["graph", "node", "task", "agent", "crew", "team"] = Field(
        description="What the span covers."
    )
    name: str = Field(default="", description="Node, task, agent or crew name.")


class SpanEnd(EventBase):
    """A framework span ends."""

    kind: Literal["span_end"] = "span_end"
    span_id: str = Field(description="Id of the span that ends.")
    scope: Literal["graph", "node", "task", "agent", "crew", "team"] = Field(
        description="What the span covers."
    )
    name: str = Field(default="", description="Node, task, agent or crew name.")
    status: Literal["ok", "error"] = Field(default="ok", description="Whether the span raised.")
    error: str | None = Field(default=None, description="Error text when status is error.")
