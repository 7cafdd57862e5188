"""What the LangGraph handler keeps per LangChain run, and the events it builds from it.

Pure helpers of ``HBEvalCallbackHandler`` (``_handler``): its run records, the builders of the
span and run-start events it defers until ``events`` is read, and small readers of what
LangChain hands its callbacks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.messages import BaseMessage

from hbeval_core.events import EventBase, RunStart, SpanEnd, SpanStart
from hbeval_core.vocab import SCOPE_NODE

from ._convert import construct
from ._keys import ATTR_FRAMEWORK_RUN_ID, ATTR_LANGGRAPH_NODE, ATTR_LANGGRAPH_STEP, ATTR_LATENCY_MS

__all__ = [
    "NIL",
    "STR_ONLY",
    "Deferred",
    "Run",
    "Said",
    "key_of",
    "make",
    "model_name",
    "plain_messages",
    "run_start",
    "span_end",
    "span_start",
    "uuid_text",
]

STR_ONLY = frozenset({str})


@dataclass(slots=True)
class Run:
    """What the handler remembers about one open LangChain run."""

    parent: UUID | None
    root: UUID
    rkey: Any  # key_of(root)
    name: str
    t0: float
    sid: str  # str(run id), computed once: UUID.__str__ is surprisingly costly per event
    rid: str  # str(root): the run_id of its events (unless the handler has a fixed one)
    prec: Run | None  # the parent's record, when the parent was known at start
    open: bool = True  # still in the handler's table of runs
    scope: str | None = None  # "graph" or "node" when the run is a span
    call_id: str | None = None
    managed: bool = False  # a fault wrapper reports this tool call itself
    step: Any = None
    top: bool = False  # the outermost run: it opens and closes a hbeval run


class Said:
    """A graph's input or answer text, taken when its callback was logged (see ``_logged``)."""

    __slots__ = ("text",)

    def __init__(self, text: Any) -> None:
        self.text = text


def span_start(rec: Run, parent_id: str | None, run_id: Any, seq: int, ts: float) -> EventBase:
    attrs: dict[str, Any] = {ATTR_FRAMEWORK_RUN_ID: rec.sid}
    if rec.scope == SCOPE_NODE:
        attrs[ATTR_LANGGRAPH_NODE] = rec.name
        if rec.step is not None:
            attrs[ATTR_LANGGRAPH_STEP] = rec.step
    fields = {
        "span_id": rec.sid,
        "scope": rec.scope,
        "name": rec.name,
        "parent_id": parent_id,
        "attrs": attrs,
        "run_id": run_id,
        "seq": seq,
        "ts": ts,
    }
    return construct(SpanStart, fields) if type(run_id) is str else make(SpanStart, fields)


def span_end(
    rec: Run,
    parent_id: str | None,
    run_id: Any,
    latency: float,
    error: str | None,
    seq: int,
    ts: float,
) -> EventBase:
    fields: dict[str, Any] = {
        "span_id": rec.sid,
        "scope": rec.scope,
        "name": rec.name,
        "parent_id": parent_id,
        "attrs": {ATTR_FRAMEWORK_RUN_ID: rec.sid, ATTR_LATENCY_MS: latency},
        "run_id": run_id,
        "seq": seq,
        "ts": ts,
    }
    if error is not None:
        fields["status"] = "error"
        fields["error"] = error
    return construct(SpanEnd, fields) if type(run_id) is str else make(SpanEnd, fields)


def run_start(fields: dict[str, Any], seq: int, ts: float) -> EventBase:
    fields["seq"] = seq
    fields["ts"] = ts
    return make(RunStart, fields)  # validated: run_info comes from the user


# An event not built yet: (builder, *its arguments). See HBEvalCallbackHandler.events.
Deferred = tuple[Any, ...]


NIL = UUID(int=0)


def uuid_text(run_id: Any) -> str:
    """``str(run_id)``, formatted here for a plain ``UUID`` (same text, about 40% cheaper).

    ``UUID.__str__`` is Python code that formats with ``%``; a run has about five run ids
    per tool call to name. Anything but a ``UUID`` itself (a subclass may format differently)
    goes through ``str``.
    """
    if type(run_id) is UUID:
        h = "%032x" % run_id.int  # noqa: UP031 (an f-string spec is twice as slow here)
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return str(run_id)


def key_of(run_id: Any) -> Any:
    """The key of a LangChain run id in the handler's tables: its 128-bit integer.

    ``UUID.__hash__`` is Python code, run for every lookup; an int hashes in C. (Anything that
    is not a UUID is its own key.)
    """
    return getattr(run_id, "int", run_id)


# Message classes seen so far that are LangChain messages (see _plain_messages).
_MESSAGE_TYPES: set[type] = set()


def plain_messages(messages: Sequence[Any], contents: list[Any]) -> bool:
    """Whether every message is a LangChain message with text content (checked at C speed)."""
    if not set(map(type, contents)) <= STR_ONLY:
        return False
    types = set(map(type, messages))
    if types <= _MESSAGE_TYPES:
        return True
    if all(issubclass(t, BaseMessage) for t in types):
        _MESSAGE_TYPES.update(types)
        return True
    return False


def make(cls: type[EventBase], fields: dict[str, Any]) -> EventBase:
    """Build an event, validated (pydantic-core is faster at this than ``model_construct``).

    A value that fails validation (an odd provider field) must not cost the whole event: it is
    kept unvalidated instead, and the conformance suite checks that normal events round-trip.
    """
    try:
        return cls(**fields)
    except ValueError:
        return cls.model_construct(**fields)


def model_name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> str | None:
    params = kwargs.get("invocation_params") or {}
    for key in ("model", "model_name", "model_id"):
        value = params.get(key)
        if isinstance(value, str) and value:
            return value
    name = kwargs.get("name") or (serialized or {}).get("name")
    if name:
        return str(name)
    kind = params.get("_type")
    return str(kind) if kind else None
