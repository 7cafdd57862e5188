"""Turn CrewAI's messages, model replies and tool values into the plain values core events hold.

Everything here is duck-typed (dicts and attribute names), so it imports no framework. The two
tool-calling paths are normalised to one meaning:

* **ReAct text path**: a reply ``Thought: ...\\nAction: lookup\\nAction Input: {...}`` is a model
  turn whose text is the part before ``Action:`` and which issues one tool call (hbeval makes up
  its id, since text carries none). CrewAI later appends ``\\nObservation: <result>`` to that
  assistant message; in model inputs it is split back into an assistant message and a ``tool``
  message answering the call, as the native path has it.
* **Native path**: a reply is a list of OpenAI-, Anthropic- or Bedrock-style tool calls (ids
  included) or a final text. CrewAI's providers drop the text that came with tool calls; a
  custom LLM may keep it by putting ``"text"`` (and ``"reasoning"``) keys on the call dicts.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from hbeval_core.capture import jsonable as _jsonable
from hbeval_core.events import ChatMessage

__all__ = [
    "OBSERVATION",
    "IssuedCall",
    "Reply",
    "chat_messages",
    "content_text",
    "crewai_error_kind",
    "error_markers",
    "jsonable",
    "native_reply",
    "parse_action_input",
    "react_reply",
    "render",
    "role_of",
    "sanitize",
    "tool_args",
]

OBSERVATION = "\nObservation:"
"""What CrewAI's ReAct loop appends to an action reply before the tool result."""

# CrewAI's own ReAct grammar (crewai.agents.parser): "Action: <tool>" then "Action Input: <args>".
_ACTION = re.compile(
    r"Action\s*\d*\s*:[\s]*(.*?)[\s]*Action\s*\d*\s*Input\s*\d*\s*:[\s]*(.*)", re.DOTALL
)
_FINAL = "Final Answer:"
_THOUGHT_LABEL = re.compile(r"^\s*Thought\s*:", re.IGNORECASE)


@dataclass(frozen=True)
class IssuedCall:
    """One tool call a model reply issued: its id (None when the reply gave none), name, args."""

    id: str | None
    name: str
    args: dict[str, Any]


@dataclass
class Reply:
    """A model reply read for a ``model_end`` event."""

    text: str | None = None
    reasoning: str | None = None
    calls: list[IssuedCall] = field(default_factory=list)


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of ``value`` for an event (pydantic models as their ``model_dump``)."""
    return _jsonable(value, depth, models=True)


def render(value: Any) -> str:
    """A value as the text an agent reads: strings as they are, the rest as JSON.

    The same rendering as the fault injector's payloads, so a delivery receipt finds an altered
    result in the next model input.
    """
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)


def content_text(content: Any) -> str:
    """The text of a message's content: a string as is, text blocks of a list joined."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, Sequence):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def tool_args(tool_input: Any) -> dict[str, Any]:
    """The arguments of a tool call as a JSON-safe dict (non-dict input goes under ``input``)."""
    if isinstance(tool_input, Mapping):
        return {str(k): jsonable(v) for k, v in tool_input.items()}
    if tool_input is None:
        return {}
    return {"input": jsonable(tool_input)}


def parse_action_input(raw: str) -> dict[str, Any]:
    """The arguments of a ReAct ``Action Input``: JSON, a Python literal, or ``{"input": text}``."""
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, Mapping):
            return tool_args(value)
        break
    return {"input": text} if text else {}


def react_reply(text: str) -> Reply:
    """Read a ReAct text reply: the words before ``Action:`` and the one call it issues."""
    if _FINAL in text and not _ACTION.search(text.split(_FINAL, 1)[0]):
        return Reply(text=text.strip() or None)
    match = _ACTION.search(text)
    if match is None:
        return Reply(text=text.strip() or None)
    name = match.group(1).strip().strip("`*\"' ")
    raw_args = match.group(2)
    cut = raw_args.find(OBSERVATION.strip())
    if cut >= 0:
        raw_args = raw_args[:cut]
    words = text[: match.start()].strip()
    if not _THOUGHT_LABEL.sub("", words).strip():
        words = ""  # a bare "Thought:" label states no reason
    return Reply(text=words or None, calls=[IssuedCall(None, name, parse_action_input(raw_args))])


def _call_of(item: Any) -> IssuedCall | None:
    """One native tool call in any of the shapes CrewAI accepts (OpenAI, Anthropic, Bedrock)."""
    fn = item.get("function") if isinstance(item, Mapping) else getattr(item, "function", None)
    if fn is not None:
        name = fn.get("name") if isinstance(fn, Mapping) else getattr(fn, "name", None)
        args = fn.get("arguments") if isinstance(fn, Mapping) else getattr(fn, "arguments", None)
    elif isinstance(item, Mapping):
        name = item.get("name")
        args = item.get("input", item.get("arguments"))
    else:
        name = getattr(item, "name", None)
        args = getattr(item, "input", None)
    if not name:
        return None
    if isinstance(args, str):
        parsed = parse_action_input(args) if args.strip() else {}
    else:
        parsed = tool_args(args)
    if isinstance(item, Mapping):
        raw_id = item.get("call_id") or item.get("id") or item.get("toolUseId")
    else:
        raw_id = getattr(item, "id", None)
    return IssuedCall(str(raw_id) if raw_id else None, str(name), parsed)


def _extra_text(items: Sequence[Any], key: str) -> str | None:
    for item in items:
        value = item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)
        if isinstance(value, str) and value.strip():
            return value
    return None


def native_reply(answer: Any) -> Reply:
    """Read a native-path reply: a list of tool calls, or a final text."""
    if isinstance(answer, list) and answer:
        calls = [c for c in (_call_of(item) for item in answer) if c is not None]
        if calls:
            return Reply(
                text=_extra_text(answer, "text"),
                reasoning=_extra_text(answer, "reasoning"),
                calls=calls,
            )
    if isinstance(answer, str):
        return Reply(text=answer.strip() or None)
    dump = getattr(answer, "model_dump_json", None)
    if callable(dump):
        return Reply(text=str(dump()))
    return Reply(text=None if answer is None else str(answer))


def chat_messages(
    messages: Sequence[Any], react_ids: Mapping[str, str] | None = None
) -> list[ChatMessage]:
    """CrewAI's message dicts as core ``ChatMessage``s, ReAct observations split out as tool messages.

    ``react_ids`` maps the text of an action reply to the call id hbeval gave it, so the split-off
    tool message answers the right call.
    """
    out: list[ChatMessage] = []
    for message in messages:
        if isinstance(message, Mapping):
            role = str(message.get("role") or "user")
            text = content_text(message.get("content"))
            call_id = message.get("tool_call_id")
        else:
            role, text, call_id = "user", render(message), None
        if role == "assistant" and OBSERVATION in text:
            head, _, tail = text.partition(OBSERVATION)
            found = (react_ids or {}).get(head.strip())
            out.append(ChatMessage(role="assistant", content=head))
            out.append(ChatMessage(role="tool", content=tail.strip(), tool_call_id=found))
            continue
        out.append(
            ChatMessage(role=role, content=text, tool_call_id=str(call_id) if call_id else None)
        )
    return out


# Texts CrewAI puts where a tool result would be when the call did not succeed. Read from
# CrewAI's own translations at first use (contract-tested), with the 1.15 wording as fallback.
_BLOCKED_PREFIX: Final = "Tool execution blocked by hook."
_NATIVE_ERROR_PREFIX: Final = "Error executing tool:"
_error_markers: tuple[str, ...] | None = None


def error_markers() -> tuple[str, ...]:
    """How CrewAI's ReAct path words a failed tool call (read from its translations once)."""
    global _error_markers
    if _error_markers is None:
        found = [
            "I encountered an error while trying to use the tool.",
            "I tried reusing the same input, I must stop using this action input.",
        ]
        try:
            from crewai.utilities.i18n import I18N_DEFAULT

            found = [
                I18N_DEFAULT.errors("tool_usage_exception").split("{", 1)[0].strip(),
                I18N_DEFAULT.errors("task_repeated_usage").strip(),
            ]
        except Exception:  # pragma: no cover - fallback wording above
            pass
        _error_markers = tuple(m for m in found if m)
    return _error_markers


def crewai_error_kind(text: Any) -> str | None:
    """Why CrewAI put ``text`` where a tool result would be: ``blocked``, ``error`` or None."""
    if not isinstance(text, str):
        return None
    head = text.lstrip()
    if head.startswith(_BLOCKED_PREFIX):
        return "blocked"
    if head.startswith(_NATIVE_ERROR_PREFIX):
        return "error"
    if any(head.startswith(m) for m in error_markers()):
        return "error"
    return None


def sanitize(name: str) -> str:
    """A tool name as CrewAI's hooks give it (CrewAI's own sanitizer when it is there)."""
    try:
        from crewai.utilities.string_utils import sanitize_tool_name

        return str(sanitize_tool_name(name))
    except Exception:
        return name.strip().lower().replace(" ", "_")


def role_of(agent: Any) -> str | None:
    """An agent's role, the name its events carry (None when it has none)."""
    role = getattr(agent, "role", None)
    return str(role) if role else None
