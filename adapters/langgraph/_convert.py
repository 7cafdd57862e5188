"""Turn LangChain messages, generations and tool outputs into the plain values core events hold.

Everything here is duck-typed on attribute names, so this module imports no framework and the
handler can call it on objects from any langchain-core 1.x release.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from hbeval_core.capture import construct as construct
from hbeval_core.events import ChatMessage, ToolCall, Usage

_STR_ONLY = frozenset({str})


# LangChain message ``type`` -> the role names core events use.
_ROLES: dict[str, str] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "developer": "system",
}

# Content-block types that carry a model's reasoning rather than its answer.
_REASONING_BLOCKS = frozenset({"reasoning", "thinking"})


def content_text(content: Any) -> str:
    """The text of a message's content: a string as is, text blocks of a list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def reasoning_text(message: Any) -> str | None:
    """Reasoning the provider exposed on an AI message (a kwarg or reasoning blocks), if any."""
    extra = getattr(message, "additional_kwargs", None) or {}
    found = extra.get("reasoning_content") or extra.get("reasoning")
    if isinstance(found, str) and found:
        return found
    content = getattr(message, "content", None)
    if isinstance(content, list):
        parts = [
            str(b.get("reasoning") or b.get("thinking") or b.get("text") or "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") in _REASONING_BLOCKS
        ]
        joined = "".join(parts)
        return joined or None
    return None


_PYDANTIC_GETATTR = getattr(BaseModel, "__getattr__", None)
# (class, attribute) -> whether the class lacks the attribute and misses go to pydantic's
# ``__getattr__`` (which then only looks at the instance's extra fields).
_MISS_GOES_TO_EXTRA: dict[tuple[type, str], bool] = {}


def optional_attr(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, minus the exception a pydantic model raises and catches
    when it lacks the field (a HumanMessage has no ``tool_call_id``: ~2 µs per miss).

    Same answer in every case: for a pydantic class that has no class attribute ``name`` (a
    field isn't one), the instance's own fields are read, then its extra fields, as pydantic's
    ``__getattr__`` would; anything else goes through ``getattr``.
    """
    cls = type(obj)
    key = (cls, name)
    fast = _MISS_GOES_TO_EXTRA.get(key)
    if fast is None:
        fast = _MISS_GOES_TO_EXTRA[key] = (
            _PYDANTIC_GETATTR is not None
            and getattr(cls, "__getattr__", None) is _PYDANTIC_GETATTR
            and not name.startswith("_")
            and not hasattr(cls, name)
        )
    if not fast:
        return getattr(obj, name, None)
    values = obj.__dict__
    if name in values:
        return values[name]
    extra = obj.__pydantic_extra__
    return extra.get(name) if extra else None


_LIVE: Any = object()


def chat_message(message: Any, content: Any = _LIVE) -> ChatMessage:
    """One LangChain message as a core ``ChatMessage`` (role, text, answered tool call).

    ``content``: the message's content as it was when the model read it (default: as it is).
    """
    if content is _LIVE:
        content = getattr(message, "content", "")
    mtype = getattr(message, "type", "")
    role = _ROLES.get(mtype) or str(getattr(message, "role", "") or mtype or "user")
    call_id = optional_attr(message, "tool_call_id")
    fields: dict[str, Any] = {
        "role": role,
        "content": content_text(content),
        "tool_call_id": call_id if isinstance(call_id, str) else None,
    }
    if (
        type(role) is str
        and type(fields["content"]) is str
        and (call_id is None or type(call_id) is str)
    ):
        return construct(ChatMessage, fields)
    return ChatMessage(**fields)


class MessageCache:
    """What one run's model calls have converted so far (see ``chat_messages``)."""

    __slots__ = ("by_id", "last")

    def __init__(self) -> None:
        self.by_id: dict[Any, tuple[Any, ChatMessage]] = {}
        """LangChain message id -> (its content when converted, the converted message)."""
        self.last: tuple[list[Any], list[Any], list[ChatMessage]] | None = None
        """The previous call's (messages, their contents, converted): one snapshot, replaced
        whole, so a model call on another thread never sees half of it."""


_content_of = operator.attrgetter("content")


def message_contents(messages: Sequence[Any]) -> list[Any]:
    """Each message's ``content`` object (None when it has none), read at C speed."""
    try:
        return list(map(_content_of, messages))
    except AttributeError:
        return [getattr(m, "content", None) for m in messages]


def chat_messages(
    messages: Sequence[Any], cache: MessageCache | None = None, contents: list[Any] | None = None
) -> list[ChatMessage]:
    """Every message of a model call's input, in order.

    ``cache`` lets a run convert each message once: a graph's state hands the same message
    objects to every later model call, so without it the cost of a run would grow with the
    square of its length. When a call's input starts with exactly the previous call's messages
    (the same objects with the same content objects) that part is reused as a whole, checked at
    C speed; the rest is converted once per message id and content. ``contents``: each
    message's content as the model read it (``message_contents``, taken earlier), when the
    conversion happens later than the call.
    """
    if contents is None:
        contents = message_contents(messages)
    if cache is None:
        return [chat_message(m, c) for m, c in zip(messages, contents, strict=True)]
    out: list[ChatMessage] = []
    start = 0
    last = cache.last
    if last is not None:
        prev, prev_contents, prev_out = last
        n = len(prev)
        # map() stops at its shortest input: these compare the first n of each, by identity.
        if (
            n <= len(messages)
            and all(map(operator.is_, prev, messages))
            and all(map(operator.is_, prev_contents, contents))
        ):
            out = list(prev_out)
            start = n
    by_id = cache.by_id
    for i in range(start, len(messages)):
        m = messages[i]
        content = contents[i]
        mid = getattr(m, "id", None)
        if mid is None:
            out.append(chat_message(m, content))
            continue
        hit = by_id.get(mid)
        if hit is not None and hit[0] is content:
            out.append(hit[1])
            continue
        converted = chat_message(m, content)
        by_id[mid] = (content, converted)
        out.append(converted)
    cache.last = (list(messages), contents, out.copy())
    return out


def tool_calls(message: Any) -> list[ToolCall]:
    """The tool calls an AI message issued, as core ``ToolCall``s."""
    calls = getattr(message, "tool_calls", None) or ()
    out: list[ToolCall] = []
    for call in calls:
        args = call.get("args")
        fields: dict[str, Any] = {
            "id": str(call.get("id") or ""),
            "name": str(call.get("name") or ""),
            "args": dict(args)
            if type(args) is dict or isinstance(args, Mapping)
            else {"input": args},
        }
        if set(map(type, fields["args"])) <= _STR_ONLY:
            out.append(construct(ToolCall, fields))
        else:
            out.append(ToolCall(**fields))  # validation decides about odd keys, as before
    return out


def usage(message: Any, llm_output: Mapping[str, Any] | None) -> Usage | None:
    """Token usage from ``usage_metadata`` or the provider's ``token_usage``, when reported."""
    meta = getattr(message, "usage_metadata", None)
    try:
        if meta:
            return Usage(
                input_tokens=meta.get("input_tokens"), output_tokens=meta.get("output_tokens")
            )
        token_usage = (llm_output or {}).get("token_usage") or (llm_output or {}).get("usage")
        if token_usage is not None and isinstance(token_usage, Mapping):
            return Usage(
                input_tokens=token_usage.get("prompt_tokens", token_usage.get("input_tokens")),
                output_tokens=token_usage.get(
                    "completion_tokens", token_usage.get("output_tokens")
                ),
            )
    except ValueError:
        return None  # a provider reporting odd counts loses its usage, not the whole event
    return None


def jsonable(value: Any) -> Any:
    """``value`` if it survives JSON as it is, else its text (events must always serialise)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


def tool_args(inputs: Any, input_str: str) -> dict[str, Any]:
    """A tool call's arguments from ``on_tool_start``: the inputs dict, else the parsed string."""
    if type(inputs) is dict or isinstance(inputs, Mapping):
        return {str(k): jsonable(v) for k, v in inputs.items()}
    try:
        parsed = json.loads(input_str)
    except (TypeError, ValueError):
        return {"input": input_str}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def tool_output(output: Any) -> tuple[Any, str]:
    """``(result, status)`` of what a tool returned: a ToolMessage, a Command or a plain value.

    A ToolMessage carries ``status="error"`` when the framework turned an exception into a
    result the agent reads; that is an errored call even though ``on_tool_end`` fired.
    """
    if getattr(output, "type", None) == "tool" and hasattr(output, "tool_call_id"):
        status = "error" if getattr(output, "status", "success") == "error" else "ok"
        return jsonable(output.content), status
    update = getattr(output, "update", None)
    if isinstance(update, Mapping):
        # A Command: report the tool message(s) it writes, which is what the agent will read.
        for msg in update.get("messages", ()) or ():
            if getattr(msg, "type", None) == "tool":
                return tool_output(msg)
        return jsonable(str(output)), "ok"
    return jsonable(output), "ok"


def tool_messages(output: Any) -> list[Any]:
    """The ToolMessages a node wrote: from ``{"messages": [...]}``, a list of messages, a
    ``Command`` (its ``update``) or a list of those; [] when there are none."""
    items = output if isinstance(output, (list, tuple)) else (output,)
    found: list[Any] = []
    for item in items:
        if getattr(item, "type", None) == "tool" and hasattr(item, "tool_call_id"):
            found.append(item)
            continue
        update = getattr(item, "update", None)
        holder = update if isinstance(update, Mapping) else item
        messages = holder.get("messages") if isinstance(holder, Mapping) else None
        if isinstance(messages, (list, tuple)):
            found.extend(
                m
                for m in messages
                if getattr(m, "type", None) == "tool" and hasattr(m, "tool_call_id")
            )
    return found


def last_ai_text(state: Any, answer_from: str | None = None) -> str | None:
    """Text of the last AI message in a graph's final state (None when there is none); with
    ``answer_from``, of the last AI message named so (an agent's name in a multi-agent graph)."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if not messages:
        messages = getattr(state, "messages", None)
    for msg in reversed(list(messages or ())):
        if getattr(msg, "type", None) != "ai":
            continue
        if answer_from is not None and getattr(msg, "name", None) != answer_from:
            continue
        return content_text(getattr(msg, "content", ""))
    return None


def input_text(inputs: Any) -> Any:
    """A run's input as text: the last human message of ``{"messages": [...]}``, else as is."""
    messages = inputs.get("messages") if isinstance(inputs, Mapping) else None
    if isinstance(messages, Sequence) and not isinstance(messages, str):
        for msg in reversed(messages):
            if getattr(msg, "type", None) == "human":
                return content_text(getattr(msg, "content", ""))
            if isinstance(msg, tuple) and len(msg) == 2 and msg[0] in ("user", "human"):
                return str(msg[1])
        return None
    return jsonable(inputs)
