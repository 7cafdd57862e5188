"""The hb-events/1 wire format: a pydantic discriminated union keyed on ``kind``."""

from __future__ import annotations

from ._base import EventBase
from ._union import Event, event_adapter, events_json_schema, parse_event
from .fault import FaultInjected
from .io import EventFormatError, dump_event, iter_event_lines, read_events, write_events
from .model import ChatMessage, ModelEnd, ModelStart, ToolCall, Usage
from .run import RunEnd, RunStart, SpanEnd, SpanStart
from .signals import Claim, Directive, Halt, Replan, Step
from .tool import ToolEnd, ToolError, ToolStart

__all__ = [
    "ChatMessage",
    "Claim",
    "Directive",
    "Event",
    "EventBase",
    "EventFormatError",
    "FaultInjected",
    "Halt",
    "ModelEnd",
    "ModelStart",
    "Replan",
    "RunEnd",
    "RunStart",
    "SpanEnd",
    "SpanStart",
    "Step",
    "ToolCall",
    "ToolEnd",
    "ToolError",
    "ToolStart",
    "Usage",
    "dump_event",
    "event_adapter",
    "events_json_schema",
    "iter_event_lines",
    "parse_event",
    "read_events",
    "write_events",
]
