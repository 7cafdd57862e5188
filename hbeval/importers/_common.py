"""What every importer shares: the refusal error, the imported trial, and a trace builder.

An importer reads one recording file and returns :class:`ImportedTrial` objects, each holding
the hb-events/1 trace of one recorded agent run. It never writes anything: the ingest step
stores trials only once every file has been read, so a bad file leaves the store untouched.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hbeval_core.events import (
    EventBase,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    SpanEnd,
    SpanStart,
    ToolEnd,
    ToolError,
    ToolStart,
)
from hbeval_core.events.model import ChatMessage, ToolCall, Usage
from hbeval_core.vocab import (
    DERIVED_ABSENCE_OF_ERROR,
    DERIVED_INFERRED,
    FAULT_BASIS_OBSERVED,
    LINK_BY_ID,
    LINK_BY_NAME,
    LINK_BY_ORDER,
    LINK_UNMATCHED,
)


class ImportRefused(ValueError):
    """A recording that cannot be read: names the file, the line (when known) and the field."""

    def __init__(
        self, path: str, message: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.reason = message
        where = path if line is None else f"{path}:{line}"
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{message}")


@dataclass
class ImportedTrial:
    """One recorded agent run turned into an hb-events trace, before it is stored.

    ``label`` is the recording's own success label (True pass, False fail) or None when the
    format has none; ``source_id`` is the id a labels file uses for this run.
    """

    task_id: str
    trial_index: int
    events: list[EventBase]
    label: bool | None
    source_id: str
    source_file: str
    response_text: str | None = None
    status: str = "ok"
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_calls(self) -> int:
        """Tool calls that ran (a start or an end on record)."""
        ids = {getattr(e, "call_id", None) for e in self.events if e.kind in _TOOL_KINDS}  # type: ignore[attr-defined]
        return len(ids)

    @property
    def tool_errors(self) -> int:
        """Tool calls that ended in an error."""
        n = 0
        for e in self.events:
            kind = getattr(e, "kind", None)
            if kind == "tool_error" or (
                kind == "tool_end" and getattr(e, "status", None) == "error"
            ):
                n += 1
        return n

    @property
    def model_calls(self) -> int:
        """Model replies on record."""
        return sum(1 for e in self.events if getattr(e, "kind", None) == "model_end")

    def derivations(self) -> dict[str, dict[str, int]]:
        """How each tool call's outcome and link were derived, counted (see ``DERIVATION``)."""
        return count_derivations(self.events)


_TOOL_KINDS = frozenset({"tool_start", "tool_end", "tool_error"})

# How a derived field of a tool call was obtained; carried on its events as
# ``attrs["derivation"] = {"outcome": ..., "link": ...}`` (the names live in ``vocab``).
OBSERVED_ERROR = FAULT_BASIS_OBSERVED
"""The recording flags the call as failed (an error flag, an error status, an exception)."""
ABSENCE_OF_ERROR = DERIVED_ABSENCE_OF_ERROR
INFERRED = DERIVED_INFERRED
LINK_NONE = LINK_UNMATCHED

INFERRED_FIGURES = {
    "outcome": ("frr", "reliability_gap", "tool_errors", "faulted_trials"),
    "link": ("ti",),
}
"""Which report figures rest on each derived field when it was inferred."""


def count_derivations(events: Any) -> dict[str, dict[str, int]]:
    """``{"outcome": {basis: n}, "link": {basis: n}}`` over the tool calls of ``events``."""
    out: dict[str, dict[str, int]] = {"outcome": {}, "link": {}}
    for e in events:
        if getattr(e, "kind", None) != "tool_start":
            continue
        d = (getattr(e, "attrs", None) or {}).get("derivation")
        if not isinstance(d, Mapping):
            continue
        for field_name in ("outcome", "link"):
            v = d.get(field_name)
            if isinstance(v, str):
                out[field_name][v] = out[field_name].get(v, 0) + 1
    return out


def inferred_figures(counts: Mapping[str, Mapping[str, int]]) -> dict[str, str]:
    """Figures resting on an inferred field: ``{figure: why}``, from ``count_derivations``."""
    out: dict[str, str] = {}
    n_out = counts.get("outcome", {}).get(INFERRED, 0)
    if n_out:
        for f in INFERRED_FIGURES["outcome"]:
            out[f] = f"{n_out} tool error(s) read from the result text, not flagged"
    links = counts.get("link", {})
    n_link = links.get(LINK_BY_NAME, 0) + links.get(LINK_BY_ORDER, 0)
    if n_link:
        for f in INFERRED_FIGURES["link"]:
            out[f] = f"{n_link} tool call(s) tied to their reply by tool name or order, not by id"
    return out


@dataclass
class Skipped:
    """Something a recording holds that the import left out, and why."""

    file: str
    what: str
    reason: str
    count: int = 1

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"file": self.file, "what": self.what, "reason": self.reason, "count": self.count}


def jsonl_lines(text: str) -> list[str]:
    """``text`` split into JSONL lines on ``\n`` only (a ``\r`` before it dropped).

    ``str.splitlines`` also breaks on U+2028, U+2029, U+0085 and other separators, which JSON
    strings may hold raw: a valid line would be cut in two.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


LATEST_TS = 253402300800.0
"""The first second of the year 10000: a recorded time must come before it (and after 1970)."""
MAX_TOKENS = 2**53
"""The largest token count an import keeps (the largest integer a float holds exactly)."""


def trial_number(value: Any, path: str, field: str) -> int:
    """A recorded trial number (None counts as 0): an integer from 0 to 2**63 - 1, the
    largest index a store keeps; anything else is refused naming ``field``."""
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ImportRefused(path, f"must be an integer >= 0, got {value!r}", field=field)
    if value > 2**63 - 1:
        raise ImportRefused(
            path, f"must be at most 2**63 - 1 (a 64-bit integer), got {value}", field=field
        )
    return value


def listed(value: Any, path: str, field: str, what: str) -> list[Any]:
    """``value`` when it is a list (None counts as empty); anything else is refused naming
    ``field``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportRefused(
            path, f"must be a list of {what}, got {type(value).__name__}", field=field
        )
    return value


def id_text(value: Any, path: str, field: str) -> str | None:
    """An identifier as recorded: text, or None when absent; anything else (a list, an
    object, a number) is refused naming ``field``."""
    if value is None or isinstance(value, str):
        return value
    raise ImportRefused(
        path, f"must be a string identifier, got {type(value).__name__}", field=field
    )


def finite_reward(value: Any) -> float | None:
    """``value`` as a reward when it is a finite number (not a bool), else None.

    A reward decides a trial's success label. NaN and the infinities are numbers to JSON readers
    that accept them, but they say nothing about success: taken as they are, NaN would count as
    a failure (``NaN >= 1.0`` is false) and an infinity as a pass. Importers refuse them, naming
    the field, as they refuse any other reward that is not a number.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond a float's range
        return None
    return number if math.isfinite(number) else None


def parse_args(raw: Any, *, path: str, line: int | None, field: str) -> dict[str, Any]:
    """Tool-call arguments as a dict: a JSON object given as text or as an object."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            # Models do emit broken argument text; keep it rather than refuse the recording.
            return {"_raw": raw}
        return dict(value) if isinstance(value, Mapping) else {"_value": value}
    raise ImportRefused(
        path, f"expected a JSON object or string, got {type(raw).__name__}", line=line, field=field
    )


@dataclass(frozen=True)
class BlockKinds:
    """How one format names an assistant message's content blocks."""

    reasoning: str
    reasoning_key: str
    tool_call: str


def assistant_blocks(
    blocks: Any, kinds: BlockKinds, *, path: str, line: int, field: str
) -> tuple[str, str, list[tuple[str | None, str, dict[str, Any]]]]:
    """An assistant message's text, reasoning and tool calls ``(id, name, args)``, in order.

    Blocks that are not objects, and block types the format's ``kinds`` do not name, are passed
    over; a tool call without a string id and name is refused with its field named.
    """
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[tuple[str | None, str, dict[str, Any]]] = []
    for k, block in enumerate(blocks):
        if not isinstance(block, Mapping):
            continue
        btype = block.get("type")
        if btype == "text":
            texts.append(str(block.get("text") or ""))
        elif btype == kinds.reasoning:
            reasoning.append(str(block.get(kinds.reasoning_key) or ""))
        elif btype == kinds.tool_call:
            call_id, name = block.get("id"), block.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise ImportRefused(
                    path,
                    f"a {kinds.tool_call} block needs string id and name",
                    line=line,
                    field=f"{field}[{k}]",
                )
            args = parse_args(
                block.get("arguments"), path=path, line=line, field=f"{field}[{k}].arguments"
            )
            calls.append((call_id, name, args))
    return (
        "\n".join(t for t in texts if t),
        "\n".join(t for t in reasoning if t),
        calls,
    )


def text_of(content: Any) -> str:
    """Plain text of a message content: a string, or the text parts of a list of blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)


class TraceBuilder:
    """Builds one trial's events in order, giving every tool call a unique id.

    Recordings reuse tool-call ids (a model may repeat one); hb-events link a call's start, end
    and issuing reply by id, so a repeated id gets a ``#n`` suffix and keeps the original in
    ``attrs["source_call_id"]``.
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.events: list[EventBase] = []
        self._model_calls = 0
        self._seen_ids: dict[str, int] = {}
        self._open: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
        # Messages for the next model call, built when that call comes (most tool results of a
        # long trace are read by one later call; building them eagerly costs for nothing).
        self._pending_messages: list[tuple[str, str, str | None]] = []
        self._spans = 0

    # -------------------------------------------------------------- helpers
    def _add(self, event: EventBase) -> None:
        ts = event.ts
        if ts is not None and not 0 <= ts < LATEST_TS:
            kind = getattr(event, "kind", "recorded")
            raise ValueError(
                f"field 'time' of a {kind} event: {ts!r} is not a time between 1970 and the "
                "year 9999 (seconds or milliseconds since the epoch)"
            )
        self.events.append(event)

    def _unique(self, call_id: str) -> str:
        n = self._seen_ids.get(call_id, 0) + 1
        self._seen_ids[call_id] = n
        return call_id if n == 1 else f"{call_id}#{n}"

    # -------------------------------------------------------------- events
    def run_start(self, *, task_id: str, trial: int, input: Any, ts: float | None = None) -> None:
        """The run's start, with the task and the agent's input."""
        self._add(
            RunStart(
                run_id=self.run_id,
                seq=len(self.events),
                ts=ts,
                task_id=task_id,
                trial=trial,
                framework="import",
                input=input,
            )
        )

    def message(self, role: str, content: str, tool_call_id: str | None = None) -> None:
        """A message the next model call reads (user text, a tool result, a system prompt)."""
        self._pending_messages.append((role, content, tool_call_id))

    def model_call(
        self,
        *,
        text: str | None,
        tool_calls: list[tuple[str | None, str, dict[str, Any]]],
        reasoning: str | None = None,
        model: str | None = None,
        usage: tuple[int | None, int | None] | None = None,
        error: str | None = None,
        ts: float | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> list[str]:
        """One model reply (start and end); returns the ids given to its tool calls."""
        self._model_calls += 1
        call_id = f"m{self._model_calls}"
        self._add(
            ModelStart(
                run_id=self.run_id,
                seq=len(self.events),
                ts=ts,
                call_id=call_id,
                model=model,
                messages=[
                    ChatMessage(role=r, content=c, tool_call_id=t)
                    for r, c, t in self._pending_messages
                ],
            )
        )
        self._pending_messages = []
        ids: list[str] = []
        calls: list[ToolCall] = []
        for i, (raw_id, name, args) in enumerate(tool_calls):
            if not isinstance(name, str) or not name:
                raise ValueError(
                    f"field 'name' of tool call {i + 1} of model call {call_id}: a tool call "
                    f"needs a tool name, got {name!r}"
                )
            source_id = raw_id or f"{call_id}-t{i + 1}"
            unique = self._unique(source_id)
            ids.append(unique)
            calls.append(ToolCall(id=unique, name=name, args=args))
            self._open.setdefault(source_id, []).append((unique, name, args))
        u = None
        for count in usage or ():
            if count is not None and not 0 <= count <= MAX_TOKENS:
                raise ValueError(
                    f"field 'usage' of model call {call_id}: a token count of {count} is not "
                    "between 0 and 2**53"
                )
        if usage is not None and (usage[0] is not None or usage[1] is not None):
            u = Usage(input_tokens=usage[0], output_tokens=usage[1])
        self._add(
            ModelEnd(
                run_id=self.run_id,
                seq=len(self.events),
                ts=ts,
                call_id=call_id,
                text=text or None,
                reasoning=reasoning or None,
                tool_calls=calls,
                usage=u,
                error=error,
                attrs=dict(attrs or {}),
            )
        )
        return ids

    def tool_result(
        self,
        *,
        call_id: str | None,
        name: str | None,
        result: str,
        is_error: bool,
        error_type: str | None = None,
        ts: float | None = None,
        attrs: dict[str, Any] | None = None,
        match_by_name: bool = False,
        args: dict[str, Any] | None = None,
        error_basis: str = OBSERVED_ERROR,
        by_order: bool = False,
    ) -> str:
        """A tool call's start and its end (or error), matched to the reply that issued it.

        Matched by call id; with ``match_by_name``, a result without a known id takes the
        oldest open call of the same tool. A result no reply issued still becomes a call (with
        ``args``, and no issuing reply, so it counts as not traceable). Returns the call's id.
        ``error_basis`` says how an error was known (``OBSERVED_ERROR`` or ``INFERRED``);
        ``by_order`` says the caller paired this result with its call by position, not by a
        recorded id. Every call carries ``attrs["derivation"]`` with its outcome and link basis.
        """
        key = call_id or ""
        link = LINK_BY_ID
        if not self._open.get(key) and match_by_name and name:
            link = LINK_BY_NAME
            key = next(
                (k for k, q in self._open.items() if q and q[0][1] == name),
                key,
            )
        queue = self._open.get(key, [])
        extra: dict[str, Any] = dict(attrs or {})
        if queue:
            unique, issued_name, issued_args = queue.pop(0)
            tool = name or issued_name
        else:
            unique = self._unique(call_id or f"orphan{len(self.events)}")
            tool, issued_args = name or "unknown", dict(args or {})
            extra["unmatched"] = True
            link = LINK_NONE
        if by_order and link == LINK_BY_ID:
            link = LINK_BY_ORDER
        extra["derivation"] = {
            "outcome": error_basis if is_error else ABSENCE_OF_ERROR,
            "link": link,
        }
        if unique != call_id and call_id is not None:
            extra["source_call_id"] = call_id
        ids: dict[str, Any] = {
            "run_id": self.run_id,
            "ts": ts,
            "call_id": unique,
            "tool": tool,
            "attrs": extra,
        }
        self._add(ToolStart(seq=len(self.events), args=issued_args, **ids))
        if is_error:
            self._add(ToolError(seq=len(self.events), error=result, error_type=error_type, **ids))
        else:
            self._add(ToolEnd(seq=len(self.events), result=result, **ids))
        self.message("tool", result, tool_call_id=unique)
        return unique

    def span(self, name: str, attrs: dict[str, Any], ts: float | None = None) -> None:
        """A recorded event that is neither a model nor a tool call (a compaction, a note)."""
        self._spans += 1
        span_id = f"{name}-{self._spans}"
        self._add(
            SpanStart(
                run_id=self.run_id,
                seq=len(self.events),
                ts=ts,
                span_id=span_id,
                scope="task",
                name=name,
                attrs=attrs,
            )
        )
        self._add(
            SpanEnd(
                run_id=self.run_id,
                seq=len(self.events),
                ts=ts,
                span_id=span_id,
                scope="task",
                name=name,
            )
        )

    def is_open(self, call_id: str | None, name: str | None) -> bool:
        """Whether a result with ``call_id`` (or, without a known id, tool ``name``) would answer
        a call still open; an id a reply issued and a result already answered is not."""
        if call_id and call_id in self._seen_ids:
            return bool(self._open.get(call_id))
        return bool(name) and any(q and q[0][1] == name for q in self._open.values())

    def unanswered_calls(self) -> list[tuple[str, str]]:
        """Calls a reply issued that no result answered: (id, tool)."""
        return [(u, n) for queue in self._open.values() for (u, n, _) in queue]

    def run_end(
        self,
        *,
        status: str = "ok",
        output: Any = None,
        error: str | None = None,
        ts: float | None = None,
    ) -> None:
        """The run's end."""
        self._add(
            RunEnd(
                run_id=self.run_id,
                seq=len(self.events),
                ts=ts,
                status=status,  # type: ignore[arg-type]
                output=output,
                error=error,
            )
        )
