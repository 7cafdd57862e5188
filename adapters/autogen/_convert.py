"""Turn AutoGen messages, model results and tool results into the plain values core events hold.

Duck-typed on attribute names (``content``, ``thought``, ``call_id``, ``is_error``) so it never
imports AutoGen and keeps working on any 0.7 message class.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hbeval_core.capture import jsonable as jsonable
from hbeval_core.events import ChatMessage, ToolCall, Usage

__all__ = [
    "arguments_of",
    "chat_messages",
    "jsonable",
    "model_end_fields",
    "render",
    "text_of",
]


# AutoGen LLMMessage class name -> role in core events.
_ROLES: dict[str, str] = {
    "SystemMessage": "system",
    "UserMessage": "user",
    "AssistantMessage": "assistant",
    "FunctionExecutionResultMessage": "tool",
}


def render(value: Any) -> str:
    """A value as the text an agent reads: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)


def _call_text(call: Any) -> str:
    return f"{getattr(call, 'name', '')}({getattr(call, 'arguments', '')})"


def text_of(content: Any) -> str:
    """The text of a message's content: strings as is, list items joined (images as a marker)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, Sequence):
        parts: list[str] = []
        for item in content:
            if isinstance(item, str):
                parts.append(item)
            elif hasattr(item, "arguments") and hasattr(item, "name"):
                parts.append(_call_text(item))
            elif hasattr(item, "content"):
                parts.append(text_of(item.content))
            else:
                parts.append("[image]" if type(item).__name__ == "Image" else str(item))
        return "\n".join(parts)
    return str(content)


def chat_messages(messages: Sequence[Any]) -> list[ChatMessage]:
    """Every message of a model call's input, in order; tool results become one message each.

    A ``FunctionExecutionResultMessage`` holds several results: each becomes a ``tool`` message
    whose content is exactly the ``FunctionExecutionResult.content`` the model reads, so a
    fault's delivery receipt can find its payload there.
    """
    out: list[ChatMessage] = []
    for message in messages:
        cls = type(message).__name__
        content = getattr(message, "content", "")
        if cls == "FunctionExecutionResultMessage" and isinstance(content, list):
            for result in content:
                out.append(
                    ChatMessage.model_construct(
                        role="tool",
                        content=str(getattr(result, "content", "")),
                        tool_call_id=getattr(result, "call_id", None),
                    )
                )
            continue
        role = _ROLES.get(cls, "user")
        text = text_of(content)
        thought = getattr(message, "thought", None)
        if role == "assistant" and isinstance(thought, str) and thought:
            text = f"{thought}\n{text}" if text else thought
        out.append(ChatMessage.model_construct(role=role, content=text, tool_call_id=None))
    return out


def arguments_of(raw: Any) -> dict[str, Any]:
    """A ``FunctionCall.arguments`` JSON string as a dict (kept raw when it does not parse)."""
    if isinstance(raw, Mapping):
        return dict(jsonable(raw))
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"_raw": raw}
    return dict(jsonable(parsed)) if isinstance(parsed, Mapping) else {"_value": jsonable(parsed)}


def model_end_fields(result: Any) -> dict[str, Any]:
    """``model_end`` fields from a ``CreateResult``: text, reasoning (thought), tool calls, usage.

    ``reasoning`` is ``CreateResult.thought``. ``text`` is the string content, or, for a reply
    made only of tool calls, the thought: AutoGen keeps a model's words beside its tool calls
    there, and they are the reason on record for those calls.
    """
    content = getattr(result, "content", None)
    text: str | None = None
    calls: list[ToolCall] = []
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        for item in content:
            if hasattr(item, "arguments"):
                calls.append(
                    ToolCall.model_construct(
                        id=str(getattr(item, "id", "") or ""),
                        name=str(getattr(item, "name", "") or ""),
                        args=arguments_of(getattr(item, "arguments", None)),
                    )
                )
    thought = getattr(result, "thought", None)
    thought = thought if isinstance(thought, str) and thought else None
    if text is None:
        # AutoGen puts the text a model sends alongside tool calls into ``thought`` (its OpenAI
        # client does), so that is the reply's text too: it is what explains the calls.
        text = thought
    usage_obj = getattr(result, "usage", None)
    usage: Usage | None = None
    if usage_obj is not None:
        prompt = getattr(usage_obj, "prompt_tokens", None)
        completion = getattr(usage_obj, "completion_tokens", None)
        usage = Usage.model_construct(
            input_tokens=prompt if isinstance(prompt, int) and prompt >= 0 else None,
            output_tokens=completion if isinstance(completion, int) and completion >= 0 else None,
        )
    return {
        "text": text,
        "reasoning": thought,
        "tool_calls": calls,
        "usage": usage,
    }
