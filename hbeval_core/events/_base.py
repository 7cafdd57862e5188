"""Fields every event carries."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class EventBase(BaseModel):
    """Fields shared by every hb-events/1 event."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    run_id: str = Field(
        description="Id of the run (one trial, one agent invocation) this event belongs to."
    )
    event_id: str | None = Field(
        default=None, description="Unique id of this event, when the producer assigns one."
    )
    parent_id: str | None = Field(
        default=None,
        description="Id of the enclosing span or framework run (LangChain parent_run_id, a crew's task span, ...).",
    )
    step: int | None = Field(
        default=None, ge=0, description="Step index this event belongs to, when known (0-based)."
    )
    ts: float | None = Field(
        default=None,
        description="Wall-clock time in Unix seconds; set aside when comparing reports.",
    )
    seq: int | None = Field(
        default=None, ge=0, description="Producer's monotonic sequence number within the run."
    )
    attrs: dict[str, Any] = Field(
        default_factory=dict, description="Free-form attributes (framework ids, node names)."
    )
