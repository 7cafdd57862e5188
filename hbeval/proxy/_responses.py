"""The Responses API (``POST /v1/responses``) as ``OpenAIProxy`` reads, records and answers it.

A request's conversation is its ``instructions`` and ``input`` (a string, or items: messages,
``function_call`` items the model issued, ``function_call_output`` items carrying tool
results). A response's ``output`` holds ``message`` items (their ``output_text`` parts are the
text) and ``function_call`` items (``call_id``, ``name``, ``arguments`` as JSON text). A
streamed response ends in a ``response.completed`` event carrying the whole response, which
is what the proxy records.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any, Final

from ._model_faults import Completion

__all__ = [
    "RESPONSES_SUFFIX",
    "completion_of",
    "completion_of_events",
    "conversation_key",
    "model_messages",
    "response_body",
    "response_events",
    "spoil_response",
    "tool_outputs",
]

RESPONSES_SUFFIX: Final = "/responses"
_FINAL_EVENTS: Final = ("response.completed", "response.incomplete", "response.failed")


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []


def conversation_key(body: dict[str, Any]) -> str:
    """What a retry of the same call repeats: instructions, input, previous response."""
    keep = {k: body.get(k) for k in ("instructions", "input", "previous_response_id")}
    return json.dumps(keep, sort_keys=True, default=str)


def tool_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's ``function_call_output`` items (the live dicts, to be edited in place)."""
    return [i for i in _items(body) if i.get("type") == "function_call_output"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content, default=str)


def model_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's conversation as ``model_start`` messages (role, content, tool_call_id)."""
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str):
        out.append({"role": "system", "content": body["instructions"], "tool_call_id": None})
    for item in _items(body):
        kind = item.get("type")
        if kind == "function_call_output":
            out.append(
                {
                    "role": "tool",
                    "content": _text(item.get("output")),
                    "tool_call_id": item.get("call_id"),
                }
            )
        elif kind == "function_call":
            call = f"{item.get('name')}({item.get('arguments') or ''})"
            out.append({"role": "assistant", "content": call, "tool_call_id": item.get("call_id")})
        else:
            role = str(item.get("role") or "")
            out.append({"role": role, "content": _text(item.get("content")), "tool_call_id": None})
    return out


def completion_of(response: Any) -> Completion:
    """A ``response`` object's text, function calls and usage (usage in chat's names)."""
    if not isinstance(response, dict):
        return Completion()
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response.get("output") or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
        elif item.get("type") == "function_call":
            calls.append(
                {
                    "id": str(item.get("call_id") or item.get("id") or ""),
                    "name": str(item.get("name") or ""),
                    "arguments": str(item.get("arguments") or ""),
                }
            )
    usage = response.get("usage")
    chat_usage = None
    if isinstance(usage, dict):
        chat_usage = {
            "prompt_tokens": usage.get("input_tokens"),
            "completion_tokens": usage.get("output_tokens"),
        }
    text = "".join(texts) if texts else None
    return Completion(text, calls, chat_usage, str(response.get("status") or "") or None)


def completion_of_events(events: Iterable[dict[str, Any]]) -> Completion:
    """From a streamed response's events: the response its final event carries."""
    final: Any = None
    for event in events:
        if event.get("type") in _FINAL_EVENTS:
            final = event.get("response")
    return completion_of(final)


def response_body(completion: Completion, model: str, response_id: str) -> dict[str, Any]:
    """``completion`` as a completed ``response`` object (a planted empty completion)."""
    output: list[dict[str, Any]] = [
        {
            "type": "message",
            "id": f"msg_{response_id}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": completion.text or "", "annotations": []}],
        }
    ]
    for i, call in enumerate(completion.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{response_id}_{i}",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": call["arguments"],
                "status": "completed",
            }
        )
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
    }


def response_events(response: dict[str, Any]) -> bytes:
    """A whole ``response`` as a streamed body: ``response.created``, then
    ``response.completed`` carrying it."""
    created = {**response, "status": "in_progress", "output": []}
    events = [
        {"type": "response.created", "sequence_number": 0, "response": created},
        {"type": "response.completed", "sequence_number": 1, "response": response},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def spoil_response(response: Any, spoil: Any) -> Completion:
    """Apply ``spoil`` (arguments text -> spoiled text) to every ``function_call`` item of
    ``response`` in place; the completion as the client will see it."""
    for item in response.get("output") or () if isinstance(response, dict) else ():
        if isinstance(item, dict) and item.get("type") == "function_call":
            item["arguments"] = spoil(str(item.get("arguments") or ""))
    return completion_of(response)
