"""Telemetry spans -> hb-events: OTel GenAI conventions and OpenInference, one trace per trial.

Both the OTLP/JSON importer and the live span processor (``hbeval.otel``) hand spans to a
:class:`TraceMapper` in the order they ended; it classifies each one:

* **tool call**: ``gen_ai.operation.name`` = ``execute_tool`` or ``openinference.span.kind`` =
  ``TOOL``. Name from ``gen_ai.tool.name``, ``tool.name`` or the span name; call id from
  ``gen_ai.tool.call.id`` (or ``tool_call.id``); arguments from ``gen_ai.tool.call.arguments``
  or ``input.value``; result from ``gen_ai.tool.call.result`` or ``output.value``. It
  **errored** when the span's status is ERROR, it carries ``error.type``, or it recorded an
  ``exception`` event (the error text: the status message, else the exception's message, else
  the error type).
* **model call**: ``gen_ai.operation.name`` in chat / text_completion / generate_content, or
  kind ``LLM``. Text and tool calls from ``gen_ai.output.messages`` (JSON, parts ``text`` and
  ``tool_call``) or OpenInference's flattened ``llm.output_messages.N.message.content`` and
  ``...tool_calls.M.tool_call.{id,function.name,function.arguments}``; usage from
  ``gen_ai.usage.{input,output}_tokens`` or ``llm.token_count.{prompt,completion}``.
* **the run**: the trace's root span (no parent) ends it: its status gives the run's status,
  ``output.value`` its output. Other spans (chains, agents, nodes) add nothing to the trace.

A tool call is linked to the model reply that issued it by call id, or else by tool name (the
oldest open call of that name), as OpenInference's LangChain spans carry no call id.

A call no tool span answered (the framework refused a call to a tool it does not have, or the
call failed before the tool was entered) is answered by the next model span's input, when the
tool messages after that input's last assistant message carry its result
(``gen_ai.input.messages`` parts ``tool_call_response``, or OpenInference's
``llm.input_messages.N.message.{role,content,tool_call_id,name}``). Such a result is an error
when its text reads as one (``reads_as_error``: derivation ``inferred``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hbeval_core.events import EventBase

from ._common import INFERRED, TraceBuilder, parse_args

TOOL_OPS = frozenset({"execute_tool"})
MODEL_OPS = frozenset({"chat", "text_completion", "generate_content", "completion"})
_OI_TOOL_CALL = re.compile(
    r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$"
)
_OI_CONTENT = re.compile(r"^llm\.output_messages\.(\d+)\.message\.content$")
_OI_INPUT = re.compile(
    r"^llm\.input_messages\.(\d+)\.message\."
    r"(role|content|tool_call_id|name|contents\.\d+\.message_content\.text)$"
)
_ERROR_TEXT = re.compile(
    r"^\s*(?:(?i:error)\b|[A-Za-z_.]*(?:Error|Exception)\b|(?:HTTP\s*)?[45]\d\d\b)"
)


@dataclass
class SpanData:
    """One ended span in the form the mapper reads (from OTLP/JSON or from the SDK)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float | None
    end: float | None
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status_error: bool = False
    status_message: str | None = None

    @property
    def role(self) -> str:
        """tool, model, or other."""
        op = self.attributes.get("gen_ai.operation.name")
        kind = str(self.attributes.get("openinference.span.kind") or "").upper()
        if op in TOOL_OPS or kind == "TOOL":
            return "tool"
        if op in MODEL_OPS or kind == "LLM":
            return "model"
        return "other"

    def error_text(self) -> str | None:
        """Why the span failed, or None when nothing says it did."""
        exc = next((a for n, a in self.events if n == "exception"), None)
        etype = self.attributes.get("error.type")
        if not (self.status_error or etype or exc is not None):
            return None
        if self.status_message:
            return str(self.status_message)
        if exc is not None and exc.get("exception.message"):
            return str(exc["exception.message"])
        return str(etype or (exc or {}).get("exception.type") or "error")

    def error_type(self) -> str | None:
        """The error's type, when the span names one."""
        exc = next((a for n, a in self.events if n == "exception"), None)
        value = self.attributes.get("error.type") or (exc or {}).get("exception.type")
        return None if value is None else str(value)


def _first(attrs: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if attrs.get(n) is not None:
            return attrs[n]
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _int(value: Any) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None


def model_output(attrs: Mapping[str, Any]) -> tuple[str, list[tuple[str | None, str, Any]]]:
    """The reply's text and tool calls (id, name, raw arguments) from either convention."""
    texts: list[str] = []
    calls: list[tuple[str | None, str, Any]] = []
    raw = attrs.get("gen_ai.output.messages")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if isinstance(raw, list):
        for msg in raw:
            for part in (msg.get("parts") or []) if isinstance(msg, Mapping) else []:
                if not isinstance(part, Mapping):
                    continue
                if part.get("type") == "text" and part.get("content"):
                    texts.append(str(part["content"]))
                elif part.get("type") == "tool_call" and part.get("name"):
                    calls.append((part.get("id"), str(part["name"]), part.get("arguments")))
        return "\n".join(texts), calls
    found: dict[tuple[int, int], dict[str, Any]] = {}
    contents: dict[int, str] = {}
    for key, value in attrs.items():
        m = _OI_TOOL_CALL.match(key)
        if m:
            found.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = value
            continue
        c = _OI_CONTENT.match(key)
        if c and value:
            contents[int(c.group(1))] = str(value)
    texts = [contents[i] for i in sorted(contents)]
    for pos in sorted(found):
        entry = found[pos]
        if entry.get("function.name"):
            calls.append(
                (entry.get("id"), str(entry["function.name"]), entry.get("function.arguments"))
            )
    return "\n".join(texts), calls


def reads_as_error(text: str) -> bool:
    """Whether a tool result's text says the call failed: it opens with ``Error``, an exception
    name (``HTTPError:``, ``ConnectionResetError:``) or an HTTP 4xx/5xx status, or it is a JSON
    object with ``error`` set, ``success`` false or ``status`` ``"error"``."""
    if _ERROR_TEXT.match(text):
        return True
    stripped = text.strip()
    if not stripped.startswith("{"):
        return False
    try:
        obj = json.loads(stripped)
    except ValueError:
        return False
    return isinstance(obj, Mapping) and (
        bool(obj.get("error")) or obj.get("success") is False or obj.get("status") == "error"
    )


def _input_messages(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model's input messages as ``{role, text, id, name}``, from either convention."""
    raw = attrs.get("gen_ai.input.messages")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    out: list[dict[str, Any]] = []
    if isinstance(raw, list):
        for msg in raw:
            if not isinstance(msg, Mapping):
                continue
            role = str(msg.get("role") or "")
            parts = [p for p in msg.get("parts") or [] if isinstance(p, Mapping)]
            responses = [p for p in parts if p.get("type") == "tool_call_response"]
            if not responses:
                out.append({"role": role})
            for p in responses:
                out.append(
                    {"role": "tool", "text": _text(p.get("response")), "id": p.get("id")}
                    | ({"name": msg["name"]} if msg.get("name") else {})
                )
        return out
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _OI_INPUT.match(key)
        if m is None:
            continue
        entry = found.setdefault(int(m.group(1)), {})
        field_name = m.group(2)
        if field_name.startswith("contents."):
            entry["parts"] = entry.get("parts", "") + _text(value)
        else:
            entry[{"content": "text", "tool_call_id": "id"}.get(field_name, field_name)] = value
    for i in sorted(found):
        entry = found[i]
        if "text" not in entry and "parts" in entry:
            entry["text"] = entry["parts"]
        out.append(entry)
    return out


def input_tool_results(attrs: Mapping[str, Any]) -> list[tuple[str | None, str | None, str]]:
    """Tool results the model read after the latest assistant message of its input:
    ``(call id, tool name, text)``, in order."""
    messages = _input_messages(attrs)
    last = max(
        (i for i, m in enumerate(messages) if m.get("role") in ("assistant", "ai")), default=-1
    )
    return [
        (
            None if m.get("id") in (None, "") else str(m["id"]),
            None if m.get("name") in (None, "") else str(m["name"]),
            _text(m.get("text")),
        )
        for m in messages[last + 1 :]
        if m.get("role") == "tool"
    ]


class TraceMapper:
    """Turns one trace's spans, fed in the order they ended, into hb-events."""

    def __init__(
        self,
        run_id: str,
        trace_id: str,
        *,
        trial: int = 0,
        source: str = "otel",
        end_on_root: bool = True,
    ) -> None:
        self.trace_id = trace_id
        self.builder = TraceBuilder(run_id)
        self.source = source
        self.trial = trial
        self.started = False
        self.ended = False
        self.status = "ok"
        self.response_text: str | None = None
        # A session holds several traces: each root span ends a turn, ``finish`` ends the run.
        self.end_on_root = end_on_root
        self.roots = 0
        self._root_error: str | None = None
        self._root_output: Any = None
        self._root_end: float | None = None

    @property
    def events(self) -> list[EventBase]:
        """Every event so far."""
        return self.builder.events

    def _start(self, span: SpanData, root_input: Any = None) -> None:
        if not self.started:
            self.started = True
            self.builder.run_start(
                task_id=self.trace_id, trial=self.trial, input=root_input, ts=span.start
            )

    def feed(self, span: SpanData, *, root_input: Any = None) -> list[EventBase]:
        """Map one ended span; returns the events it added."""
        before = len(self.builder.events)
        self._start(span, root_input)
        b = self.builder
        attrs = span.attributes
        role = span.role
        if role == "model":
            self._answered_in_input(span)
            text, raw_calls = model_output(attrs)
            path = f"trace {self.trace_id} span {span.span_id}"
            calls = [
                (cid, name, parse_args(_as_args(args), path=path, line=None, field="arguments"))
                for cid, name, args in raw_calls
            ]
            b.model_call(
                text=text,
                tool_calls=calls,
                model=_first(
                    attrs, "gen_ai.response.model", "gen_ai.request.model", "llm.model_name"
                ),
                usage=(
                    _int(_first(attrs, "gen_ai.usage.input_tokens", "llm.token_count.prompt")),
                    _int(_first(attrs, "gen_ai.usage.output_tokens", "llm.token_count.completion")),
                ),
                error=span.error_text(),
                ts=span.end,
                attrs={"span_id": span.span_id},
            )
            if text:
                self.response_text = text
        elif role == "tool":
            name = _first(attrs, "gen_ai.tool.name", "tool.name") or span.name
            call_id = _first(attrs, "gen_ai.tool.call.id", "tool_call.id")
            error = span.error_text()
            result = _first(attrs, "gen_ai.tool.call.result", "output.value")
            message = _tool_message(result)
            if message is not None:
                # OpenInference's LangChain spans record the ToolMessage the agent received:
                # its call id, its content, and status "error" for a handled tool failure.
                result = message.get("content")
                call_id = call_id or message.get("tool_call_id")
                if error is None and message.get("status") == "error":
                    error = _text(result) or "error"
            b.tool_result(
                call_id=None if call_id is None else str(call_id),
                name=str(name),
                result=error if error is not None else _text(result),
                is_error=error is not None,
                error_type=span.error_type(),
                ts=span.end,
                attrs={"span_id": span.span_id},
                match_by_name=True,
                args=parse_args(
                    _as_args(_first(attrs, "gen_ai.tool.call.arguments", "input.value")),
                    path=f"trace {self.trace_id} span {span.span_id}",
                    line=None,
                    field="arguments",
                ),
            )
        if span.parent_id is None and not self.ended:
            error = span.error_text()
            output = attrs.get("output.value")
            self.roots += 1
            if not self.end_on_root:
                self._root_error = error if error is not None else self._root_error
                self._root_output = output if output is not None else self._root_output
                self._root_end = span.end
                return b.events[before:]
            self.ended = True
            self.status = "error" if error is not None else "ok"
            b.run_end(
                status=self.status,
                output=_text(output) if output is not None else self.response_text,
                error=error,
                ts=span.end,
            )
        return b.events[before:]

    def _answered_in_input(self, span: SpanData) -> None:
        """Calls no tool span answered, answered in this model span's input (module docstring)."""
        b = self.builder
        if not b.unanswered_calls():
            return
        for call_id, name, text in input_tool_results(span.attributes):
            if not b.is_open(call_id, name):
                continue
            failed = reads_as_error(text)
            b.tool_result(
                call_id=call_id,
                name=name,
                result=text,
                is_error=failed,
                ts=span.start,
                attrs={"span_id": span.span_id, "answered_in": "model_input"},
                match_by_name=True,
                error_basis=INFERRED,
            )

    def finish(self) -> None:
        """End the run after the last span (a session's run ends with its last trace)."""
        if self.ended:
            return
        self.ended = True
        self.status = "error" if self._root_error is not None else "ok"
        out = self._root_output
        self.builder.run_end(
            status=self.status,
            output=_text(out) if out is not None else self.response_text,
            error=self._root_error,
            ts=self._root_end,
        )


def _tool_message(value: Any) -> dict[str, Any] | None:
    """A serialised LangChain ToolMessage (``{"type": "tool", "data": {...}}``), else None."""
    if isinstance(value, str) and value.startswith("{") and '"tool"' in value:
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, Mapping) and value.get("type") == "tool":
        data = value.get("data")
        if isinstance(data, Mapping):
            return dict(data)
    return None


def _as_args(raw: Any) -> Any:
    """Arguments given as JSON text or as an object; other text is kept as ``_raw``."""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"_raw": raw}
        return value if isinstance(value, Mapping) else {"_value": value}
    return raw
