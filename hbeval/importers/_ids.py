"""Identifiers pass the same redaction as bodies before an imported run is keyed or stored.

A recording's task ids, trace and span ids, tool-call ids and the tool names its import skips
are text like any other, and may hold a key (``task-sk-proj-...``, a trace id ``AKIA...``).
Each secret found in one is replaced by ``[REDACTED:<kind>:<digest>]`` (``Redactor.redact_id``):
a keyed digest of the secret, so the same id always maps to the same text and two different
ids never to one (sessions stay apart, parents still find their children).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ._common import ImportedTrial, Skipped

__all__ = ["ID_FIELDS", "redact_identifiers"]

ID_FIELDS: Final = (
    "run_id",
    "event_id",
    "parent_id",
    "call_id",
    "tool_call_id",
    "span_id",
    "task_id",
    "agent_id",
    "plan_id",
    "fault_id",
)
"""The events' identifier fields that are redacted as identifiers."""


def redact_identifiers(
    trials: Sequence[ImportedTrial], skipped: list[Skipped], redactor: Any
) -> None:
    """Redact, in place, the trials' task and source ids, their events' identifier fields and
    the texts of what the import skipped."""
    seen: dict[str, str] = {}

    def clean(value: str) -> str:
        out = seen.get(value)
        if out is None:
            out = seen[value] = redactor.redact_id(value)
        return out

    for t in trials:
        t.task_id = clean(t.task_id)
        t.source_id = clean(t.source_id)
        events = []
        for event in t.events:
            changes = {
                name: clean(value)
                for name in ID_FIELDS
                if isinstance(value := getattr(event, name, None), str) and clean(value) != value
            }
            events.append(event.model_copy(update=changes) if changes else event)
        t.events = events
    for i, s in enumerate(skipped):
        what, reason = clean(s.what), clean(s.reason)
        if (what, reason) != (s.what, s.reason):
            skipped[i] = Skipped(s.file, what, reason, s.count)
