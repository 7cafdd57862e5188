"""The union of every hb-events/1 kind, and the validator built on it (one, cached)."""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Union

from pydantic import Field, TypeAdapter

from ._base import EventBase
from .fault import FaultInjected
from .model import ModelEnd, ModelStart
from .run import RunEnd, RunStart, SpanEnd, SpanStart
from .signals import Claim, Directive, Halt, Replan, Step
from .tool import ToolEnd, ToolError, ToolStart

__all__ = ["Event", "event_adapter", "events_json_schema", "parse_event"]

Event = Annotated[
    Union[  # noqa: UP007 - a Union reads better than a 15-line chain of |
        RunStart,
        RunEnd,
        SpanStart,
        SpanEnd,
        ModelStart,
        ModelEnd,
        ToolStart,
        ToolEnd,
        ToolError,
        FaultInjected,
        Replan,
        Claim,
        Halt,
        Step,
        Directive,
    ],
    Field(discriminator="kind"),
]
"""Any hb-events/1 event."""


@lru_cache(maxsize=1)
def event_adapter() -> TypeAdapter[Any]:
    """The (cached) pydantic adapter that validates one event."""
    return TypeAdapter(Event)


def parse_event(data: dict[str, Any] | str | bytes) -> EventBase:
    """Validate one event from a dict or a JSON document."""
    adapter = event_adapter()
    if isinstance(data, (str, bytes)):
        return adapter.validate_json(data)  # type: ignore[no-any-return]
    return adapter.validate_python(data)  # type: ignore[no-any-return]


def events_json_schema() -> dict[str, Any]:
    """JSON Schema of one hb-events/1 event."""
    schema = event_adapter().json_schema()
    schema["$id"] = "hb-events/1"
    schema["title"] = "hbeval event (hb-events/1)"
    return schema
