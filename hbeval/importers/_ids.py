"""Identifiers pass the same redaction as bodies before an imported run is keyed or stored.

A recording's task ids, trace and span ids, tool-call ids and the tool names its import skips
are text like any other, and may hold a key (``task-sk-proj-...``, a trace id ``AKIA...``).
Each secret found in one is replaced by ``[REDACTED:<kind>:<digest>]`` (``Redactor.redact_id``):
a keyed digest of the secret, so the same id always maps to the same text and two different
ids never to one (sessions stay apart, parents still find their children).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from ._common import ImportedTrial, Skipped

__all__ = ["ID_FIELDS", "IdRedactor", "redact_identifiers"]

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
ID_ATTRS: Final = (
    "source_call_id",
    "session_id",
    "parent_session",
    "trace_id",
    "span_id",
    "parent_span_id",
)
"""Keys of an event's ``attrs`` whose text values are identifiers, redacted as the fields are."""


class IdRedactor:
    """Redacts identifiers trial by trial over one import: one cache, so an id seen in several
    trials (a shared session, a repeated task id) always becomes the same text."""

    def __init__(self, redactor: Any) -> None:
        self._redactor = redactor
        self._seen: dict[str, str] = {}

    def clean(self, value: str) -> str:
        """``value`` with each secret in it replaced by its keyed digest."""
        out = self._seen.get(value)
        if out is None:
            out = self._seen[value] = self._redactor.redact_id(value)
        return out

    def trial(self, t: ImportedTrial) -> None:
        """Redact, in place, one trial's task and source ids, its events' identifier fields and
        its id-valued attrs."""
        clean = self.clean
        t.task_id = clean(t.task_id)
        t.source_id = clean(t.source_id)
        events = []
        for event in t.events:
            changes = _id_changes(event, clean)
            events.append(event.model_copy(update=changes) if changes else event)
        t.events = events
        for key in ID_ATTRS:
            if isinstance(value := t.attrs.get(key), str):
                t.attrs[key] = clean(value)

    def skipped(self, skipped: list[Skipped]) -> None:
        """Redact, in place, the texts of what the import skipped."""
        for i, s in enumerate(skipped):
            what, reason = self.clean(s.what), self.clean(s.reason)
            if (what, reason) != (s.what, s.reason):
                skipped[i] = Skipped(s.file, what, reason, s.count)


def redact_identifiers(
    trials: Sequence[ImportedTrial], skipped: list[Skipped], redactor: Any
) -> None:
    """Redact, in place, the trials' task and source ids, their events' identifier fields and
    the texts of what the import skipped."""
    ids = IdRedactor(redactor)
    for t in trials:
        ids.trial(t)
    ids.skipped(skipped)


def _id_changes(event: Any, clean: Callable[[str], str]) -> dict[str, Any]:
    """The changed identifier fields of one event: its own id fields, the ids inside it (a
    model reply's tool-call ids, the tool-call ids its messages answer) and id-valued attrs,
    each redacted as an identifier so that what links them still matches."""
    changes: dict[str, Any] = {
        name: clean(value)
        for name in ID_FIELDS
        if isinstance(value := getattr(event, name, None), str) and clean(value) != value
    }
    calls = getattr(event, "tool_calls", None)
    if isinstance(calls, list) and any(clean(c.id) != c.id for c in calls):
        changes["tool_calls"] = [c.model_copy(update={"id": clean(c.id)}) for c in calls]
    messages = getattr(event, "messages", None)
    if isinstance(messages, list) and any(
        m.tool_call_id is not None and clean(m.tool_call_id) != m.tool_call_id for m in messages
    ):
        changes["messages"] = [
            m
            if m.tool_call_id is None
            else m.model_copy(update={"tool_call_id": clean(m.tool_call_id)})
            for m in messages
        ]
    attrs = getattr(event, "attrs", None)
    if isinstance(attrs, dict):
        moved = {
            k: clean(v) for k in ID_ATTRS if isinstance(v := attrs.get(k), str) and clean(v) != v
        }
        if moved:
            changes["attrs"] = {**attrs, **moved}
    return changes
