"""The scripted server's answers on the Responses API (``POST /v1/responses``).

A ``Reply`` becomes one ``response`` object: a ``message`` output item with one
``output_text`` part for its text, then a ``function_call`` item per tool call (``call_id`` the
call's id, ``arguments`` the JSON text). ``"stream": true`` gets the same response as
server-sent events: ``response.created``, each item's ``response.output_item.added`` /
``response.output_text.delta`` / ``response.output_item.done``, then ``response.completed``
carrying the whole response. Usage is in the Responses shape (``input_tokens``,
``output_tokens``, ``total_tokens``).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._openai_server import Reply, Usage

__all__ = ["RESPONSES_PATHS", "input_messages", "response_events", "response_object"]

RESPONSES_PATHS = ("/v1/responses", "/responses")


def input_messages(body: Any) -> list[dict[str, Any]]:
    """A Responses request's ``input`` as a list of items (a string input: one user message)."""
    raw = body.get("input") if isinstance(body, dict) else None
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def _items(reply: Reply, ids: list[str], response_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        part = {"type": "output_text", "text": reply.text, "annotations": []}
        items.append(
            {
                "type": "message",
                "id": f"msg_{response_id}",
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for i, (call, call_id) in enumerate(zip(reply.tool_calls, ids, strict=True)):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{response_id}_{i}",
                "call_id": call_id,
                "name": call.name,
                "arguments": call.arguments_json(),
                "status": "completed",
            }
        )
    return items


def response_object(
    reply: Reply, ids: list[str], response_id: str, model: str, usage: Usage | None
) -> dict[str, Any]:
    """One completed ``response`` object for ``reply``."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": _items(reply, ids, response_id),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "usage": _usage(usage) if usage is not None else None,
    }


def response_events(response: dict[str, Any]) -> bytes:
    """``response`` as the SSE body of a streamed Responses call."""
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    add("response.created", response={**response, "status": "in_progress", "output": []})
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            add("response.output_item.added", output_index=index, item={**item, "content": []})
            text = item["content"][0]["text"]
            common = {"item_id": item["id"], "output_index": index, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": []}
            add("response.content_part.added", part=empty, **common)
            add("response.output_text.delta", delta=text, logprobs=[], **common)
            add("response.output_text.done", text=text, logprobs=[], **common)
        else:
            add("response.output_item.added", output_index=index, item={**item, "arguments": ""})
        add("response.output_item.done", output_index=index, item=item)
    add("response.completed", response=response)
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
