"""What a planted model fault sends the client, and the pieces of a chat completion it spoils.

Each function builds bytes for the HTTP layer; ``OpenAIProxy`` sends them. Error bodies are in
OpenAI's shape (``{"error": {"message", "type", "code", "param"}}``), so a provider client
raises its own exception for each (``RateLimitError``, ``InternalServerError``,
``BadRequestError``...) and runs its own retry policy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from hbeval_core.contract._ratelimit import PLANTED_FAULT_HEADER
from hbeval_core.faults.model import ModelFaultSpec
from hbeval_core.faults.runtime import malform
from hbeval_core.vocab import CONTEXT_OVERFLOW, MODEL_ERROR, MODEL_TIMEOUT, RATE_LIMIT

__all__ = [
    "Completion",
    "error_answer",
    "parse_sse",
    "spoil_arguments",
    "sse_bytes",
]

CONTEXT_WINDOW: Final = 8192
"""The context length a planted ``context_overflow`` names."""


def _error(status: int, kind: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = {"error": {"message": message, "type": kind, "code": kind, "param": None}}
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def error_answer(spec: ModelFaultSpec) -> tuple[int, dict[str, str], bytes] | None:
    """Status, headers and body of a mode answered with an HTTP error (None for the others).

    Each carries ``PLANTED_FAULT_HEADER`` (the mode), so the run never mistakes a planted 429
    for the provider's and pauses (``rate_limit_delay``)."""
    answer = _error_answer(spec)
    if answer is not None:
        answer[1][PLANTED_FAULT_HEADER] = spec.mode
    return answer


def _error_answer(spec: ModelFaultSpec) -> tuple[int, dict[str, str], bytes] | None:
    if spec.mode == RATE_LIMIT:
        wait = int(spec.param("retry_after_ms"))
        status, headers, body = _error(
            429, "rate_limit_exceeded", f"Rate limit reached; retry after {wait} ms."
        )
        headers["retry-after-ms"] = str(wait)
        headers["Retry-After"] = str(-(-wait // 1000))
        return status, headers, body
    if spec.mode == MODEL_ERROR:
        code = int(spec.param("http_status"))
        return _error(code, "server_error", f"The model server had an error ({code}).")
    if spec.mode == MODEL_TIMEOUT:
        return _error(504, "timeout", "The model did not answer in time (upstream timed out).")
    if spec.mode == CONTEXT_OVERFLOW:
        return _error(
            400,
            "context_length_exceeded",
            f"This model's maximum context length is {CONTEXT_WINDOW} tokens; your messages "
            "resulted in more. Reduce the length of the messages.",
        )
    return None


def spoil_arguments(arguments: str, kind: str) -> str:
    """Tool-call arguments made ``invalid_json`` (cut mid-way) or ``wrong_type`` (types swapped)."""
    if kind == "wrong_type":
        try:
            value = json.loads(arguments)
        except ValueError:
            value = None
        if isinstance(value, dict) and value:
            return json.dumps(malform(value, "wrong_type"))
        return json.dumps({"value": [arguments]})
    cut = max(1, len(arguments) // 2)
    return (arguments[:cut] if len(arguments) > 1 else "{") + ',"'


@dataclass
class Completion:
    """A chat completion as the proxy records it: text, tool calls, usage."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"id", "name", "arguments"}`` (arguments as the JSON text sent)."""
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None

    @classmethod
    def of_body(cls, body: Any) -> Completion:
        """From a non-streamed ``chat.completion`` body."""
        choice = (body.get("choices") or [{}])[0] if isinstance(body, dict) else {}
        message = choice.get("message") or {}
        calls = [
            {
                "id": c.get("id") or "",
                "name": (c.get("function") or {}).get("name") or "",
                "arguments": (c.get("function") or {}).get("arguments") or "",
            }
            for c in message.get("tool_calls") or ()
        ]
        usage = body.get("usage") if isinstance(body, dict) else None
        return cls(message.get("content"), calls, usage, choice.get("finish_reason"))

    @classmethod
    def of_chunks(cls, chunks: Iterable[dict[str, Any]]) -> Completion:
        """From the chunks of a streamed completion (deltas joined)."""
        out = cls()
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        for chunk in chunks:
            if chunk.get("usage"):
                out.usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                for part in delta.get("tool_calls") or ():
                    call = calls.setdefault(
                        int(part.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                    )
                    call["id"] = part.get("id") or call["id"]
                    fn = part.get("function") or {}
                    call["name"] = fn.get("name") or call["name"]
                    call["arguments"] += fn.get("arguments") or ""
                if choice.get("finish_reason"):
                    out.finish_reason = choice["finish_reason"]
        out.text = "".join(text) if text else None
        out.tool_calls = [calls[i] for i in sorted(calls)]
        return out

    def body(self, model: str, completion_id: str) -> dict[str, Any]:
        """As a non-streamed ``chat.completion`` body."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text, "refusal": None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in self.tool_calls
            ]
        finish = self.finish_reason or ("tool_calls" if self.tool_calls else "stop")
        out: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if self.usage is not None:
            out["usage"] = self.usage
        return out

    def chunks(self, model: str, completion_id: str) -> list[dict[str, Any]]:
        """As the chunks of a streamed completion (one delta per part)."""

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        out = [chunk({"role": "assistant", "content": ""})]
        if self.text:
            out.append(chunk({"content": self.text}))
        for i, c in enumerate(self.tool_calls):
            fn = {"name": c["name"], "arguments": c["arguments"]}
            out.append(chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function"}]}))
            out[-1]["choices"][0]["delta"]["tool_calls"][0]["function"] = fn
        out.append(chunk({}, self.finish_reason or ("tool_calls" if self.tool_calls else "stop")))
        if self.usage is not None:
            last = chunk({})
            last["choices"] = []
            last["usage"] = self.usage
            out.append(last)
        return out


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """The JSON chunks of an SSE body (``data: {...}`` events; ``[DONE]`` and others skipped)."""
    out: list[dict[str, Any]] = []
    for line in raw.splitlines():
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            continue
        try:
            value = json.loads(data)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def sse_bytes(chunks: Iterable[dict[str, Any]]) -> bytes:
    """Chunks as an SSE body ending in ``[DONE]``."""
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()
