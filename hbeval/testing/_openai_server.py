"""A scripted OpenAI-compatible chat completions server on 127.0.0.1, for offline agent tests.

The whole provider client stack runs against it (HTTP, retries, SSE streaming, tool calls,
usage), only the model's replies are scripted::

    from openai import OpenAI
    from hbeval.testing import ScriptedOpenAIServer, Reply, ToolCall, ErrorReply

    script = [
        ErrorReply(429),                                      # the SDK retries after 20 ms
        Reply("Looking it up.", tool_calls=[ToolCall("lookup", {"query": "A1"})]),
        "Order A1 shipped.",                                  # a plain string is a text reply
    ]
    with ScriptedOpenAIServer(script) as server:
        client = OpenAI(base_url=server.base_url, api_key="unused")
        ...
        assert server.requests[1].messages[-1]["role"] == "tool"

API (stable):

- ``ScriptedOpenAIServer(script=None, *, model="scripted-model")``. ``script`` is a sequence of
  replies, one per request in order, or a callable ``messages -> reply`` called for every request
  with the request's ``messages`` (a list of dicts, as sent). A sequence entry may itself be such
  a callable. ``push(*replies)`` appends to a sequence script. A request past the end of the
  script gets a 500 whose message says the script is exhausted (``exhausted`` counts them).
- A reply is a ``str`` (text), a ``Reply`` (text and/or ``ToolCall``s, several calls being a
  parallel tool call, ``usage``, ``finish_reason``, ``delay_ms``) or an ``ErrorReply`` (``status``,
  ``message``; a 429 carries ``retry-after-ms`` (at most 50) and ``Retry-After`` headers).
- Serves ``POST /v1/chat/completions`` and ``POST /chat/completions``; ``"stream": true`` gets
  server-sent events (role, content and tool-call argument deltas, the finish chunk, a usage
  chunk when ``stream_options.include_usage`` is true, then ``[DONE]``). Other paths get 404.
- Also serves the Responses API, ``POST /v1/responses`` (and ``/responses``), streamed or not:
  the same script answers with a ``response`` whose output is a ``message`` item for the text
  and a ``function_call`` item per tool call. For these requests ``messages`` (and what a
  callable script receives) are the ``input`` items, a string input being one user message.
- Usage: a ``Reply``'s ``usage`` if given, otherwise ``prompt_tokens`` is one per 4 characters
  of the request's message contents (at least 1) and ``completion_tokens`` one per 4 characters
  of the reply's text and tool-call arguments (at least 1); ``total_tokens`` is their sum.
  Clients report these figures; nothing counts tokens locally.
- ``requests``: every request received, in order (``ReceivedRequest``: ``path``, ``headers``
  with lower-case names, ``body``, and the ``messages``, ``tools``, ``stream``, ``model``
  properties). ``url`` is ``http://127.0.0.1:PORT``, ``base_url`` is ``url + "/v1"``.
- A context manager, sync or async (``with`` or ``async with``); ``start()``/``close()`` do the
  same by hand. It runs in its own threads, so async clients can use it from an event loop.

Standard library only: the core install needs nothing for it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeAlias

from .._local_http import LocalHandler
from ._responses_api import RESPONSES_PATHS, input_messages, response_events, response_object

__all__ = [
    "ErrorReply",
    "ReceivedRequest",
    "Reply",
    "ScriptedOpenAIServer",
    "ToolCall",
    "Usage",
]

MAX_RETRY_AFTER_MS = 50
"""The longest ``retry-after-ms`` a scripted 429 may carry (the openai SDK really sleeps it)."""

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class ToolCall:
    """One tool call in a scripted reply; ``id`` defaults to ``call_<n>``, unique per server."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True)
class Usage:
    """Token figures a reply reports."""

    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class Reply:
    """A successful completion: text, tool calls (several = a parallel call), or both."""

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    """Defaults to ``"tool_calls"`` when there are tool calls, ``"stop"`` otherwise."""
    delay_ms: int = 0
    """How long the server waits before answering."""


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error answer in OpenAI's error shape (``{"error": {"message", "type", "code"}}``).

    A 429 carries ``retry-after-ms`` (``retry_after_ms``, at most 50) and ``Retry-After`` (whole
    seconds, rounded up); other statuses carry them only when ``retry_after_ms`` is given.
    """

    status: int = 500
    message: str = ""
    retry_after_ms: int | None = None
    delay_ms: int = 0
    code: str | None = None
    """The error's ``type`` and ``code`` (default: from the status, e.g. ``server_error``)."""

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError(f"ErrorReply.status must be 4xx or 5xx, got {self.status}")
        if self.retry_after_ms is not None and not 0 <= self.retry_after_ms <= MAX_RETRY_AFTER_MS:
            raise ValueError(
                f"ErrorReply.retry_after_ms must be 0..{MAX_RETRY_AFTER_MS} "
                f"(the client sleeps it), got {self.retry_after_ms}"
            )

    def headers(self) -> dict[str, str]:
        wait = self.retry_after_ms
        if wait is None and self.status == 429:
            wait = 20
        if wait is None:
            return {}
        return {"retry-after-ms": str(wait), "Retry-After": str(-(-wait // 1000))}

    def body(self) -> dict[str, Any]:
        kind = "rate_limit_exceeded" if self.status == 429 else "server_error"
        if 400 <= self.status < 500 and self.status != 429:
            kind = "invalid_request_error"
        kind = self.code or kind
        message = self.message or f"scripted error {self.status}"
        return {"error": {"message": message, "type": kind, "code": kind, "param": None}}


ReplyValue: TypeAlias = str | Reply | ErrorReply
Responder: TypeAlias = Callable[[list[dict[str, Any]]], ReplyValue]
ScriptEntry: TypeAlias = ReplyValue | Responder


@dataclass(frozen=True)
class ReceivedRequest:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def responses_api(self) -> bool:
        """A Responses API request (``/v1/responses``), not a chat completion."""
        return self.path in RESPONSES_PATHS

    @property
    def messages(self) -> list[dict[str, Any]]:
        if self.responses_api:
            return input_messages(self.body)
        got = self.body.get("messages") if isinstance(self.body, dict) else None
        return list(got) if isinstance(got, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        got = self.body.get("tools") if isinstance(self.body, dict) else None
        return list(got) if isinstance(got, list) else []

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True

    @property
    def model(self) -> str | None:
        got = self.body.get("model") if isinstance(self.body, dict) else None
        return got if isinstance(got, str) else None


def _content_chars(messages: list[dict[str, Any]]) -> int:
    total = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            total += sum(
                len(str(part.get("text", ""))) for part in content if isinstance(part, dict)
            )
    return total


def _tokens(chars: int) -> int:
    return max(1, -(-chars // 4))


class ScriptedOpenAIServer:
    """An OpenAI-compatible chat completions endpoint answering from a script (see the module)."""

    def __init__(
        self,
        script: Sequence[ScriptEntry] | Responder | None = None,
        *,
        model: str = "scripted-model",
    ) -> None:
        self.model = model
        self._responder: Responder | None = None
        self._script: list[ScriptEntry] = []
        if callable(script):
            self._responder = script
        elif script is not None:
            if isinstance(script, (str, Reply, ErrorReply)):
                raise TypeError("script must be a sequence of replies or a callable, not one reply")
            self._script = list(script)
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest] = []
        self._served = 0
        self._call_ids = 0
        self._completions = 0
        self.exhausted = 0
        """Requests that arrived after the script ran out (each answered 500)."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> ScriptedOpenAIServer:
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> ScriptedOpenAIServer:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ script and record
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("ScriptedOpenAIServer is not running: use it as a context manager")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What a client's ``base_url`` takes (``url`` + ``/v1``)."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """Script entries not yet served (0 for a callable script)."""
        with self._lock:
            return len(self._script) - self._served

    def push(self, *replies: ScriptEntry) -> None:
        """Append replies to a sequence script."""
        if self._responder is not None:
            raise TypeError("push() needs a sequence script; this server answers with a callable")
        with self._lock:
            self._script.extend(replies)

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_reply(self, messages: list[dict[str, Any]]) -> ReplyValue:
        with self._lock:
            entry: ScriptEntry | None
            if self._responder is not None:
                entry = self._responder
            elif self._served < len(self._script):
                entry = self._script[self._served]
                self._served += 1
            else:
                self.exhausted += 1
                entry = None
        if entry is None:
            return ErrorReply(500, f"ScriptedOpenAIServer: script exhausted after {self._served}")
        if callable(entry) and not isinstance(entry, (str, Reply, ErrorReply)):
            entry = entry(messages)
        if not isinstance(entry, (str, Reply, ErrorReply)):
            raise TypeError(
                f"a scripted reply must be str, Reply or ErrorReply, got {type(entry).__name__}"
            )
        return entry

    def _ids(self, reply: Reply, *, responses: bool = False) -> tuple[str, list[str]]:
        with self._lock:
            self._completions += 1
            prefix = "resp_scripted" if responses else "chatcmpl-scripted"
            completion = f"{prefix}-{self._completions}"
            ids = []
            for call in reply.tool_calls:
                self._call_ids += 1
                ids.append(call.id or f"call_{self._call_ids}")
        return completion, ids

    # ------------------------------------------------------------------ answers
    def answer(self, request: ReceivedRequest) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for a recorded chat completions request."""
        reply = self._next_reply(request.messages)
        if isinstance(reply, str):
            reply = Reply(text=reply)
        if reply.delay_ms:
            time.sleep(reply.delay_ms / 1000)
        if isinstance(reply, ErrorReply):
            body = json.dumps(reply.body()).encode()
            return reply.status, {"Content-Type": "application/json", **reply.headers()}, body
        completion_id, ids = self._ids(reply, responses=request.responses_api)
        usage = reply.usage or self._default_usage(request, reply)
        model = request.model or self.model
        if request.responses_api:
            response = response_object(reply, ids, completion_id, model, usage)
            if request.stream:
                headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
                return 200, headers, response_events(response)
            return 200, {"Content-Type": "application/json"}, json.dumps(response).encode()
        if request.stream:
            options = request.body.get("stream_options") or {}
            with_usage = isinstance(options, dict) and options.get("include_usage") is True
            chunks = _stream_chunks(reply, ids, completion_id, model, usage if with_usage else None)
            payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
            return 200, headers, payload.encode()
        completion = _completion(reply, ids, completion_id, model, usage)
        return 200, {"Content-Type": "application/json"}, json.dumps(completion).encode()

    @staticmethod
    def _default_usage(request: ReceivedRequest, reply: Reply) -> Usage:
        out = len(reply.text or "") + sum(len(c.arguments_json()) for c in reply.tool_calls)
        return Usage(_tokens(_content_chars(request.messages)), _tokens(out))


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _completion(
    reply: Reply, ids: list[str], completion_id: str, model: str, usage: Usage
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for call, call_id in zip(reply.tool_calls, ids, strict=True)
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _finish(reply), "logprobs": None}
        ],
        "usage": usage.as_dict(),
    }


def _pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _stream_chunks(
    reply: Reply, ids: list[str], completion_id: str, model: str, usage: Usage | None
) -> list[dict[str, Any]]:
    """The SSE chunks of one streamed completion, in order."""
    created = int(time.time())

    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": choices,
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        chunks.extend(chunk({"content": piece}) for piece in _pieces(reply.text))
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, ids, strict=True)):
        head = {"index": index, "id": call_id, "type": "function"}
        head["function"] = {"name": call.name, "arguments": ""}
        chunks.append(chunk({"tool_calls": [head]}))
        for piece in _pieces(call.arguments_json()):
            part = {"index": index, "function": {"arguments": piece}}
            chunks.append(chunk({"tool_calls": [part]}))
    chunks.append(chunk({}, _finish(reply)))
    if usage is not None:
        last = chunk(None)
        last["usage"] = usage.as_dict()
        chunks.append(last)
    return chunks


def _handler_for(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(LocalHandler):
        timeout = 30

        def do_GET(self) -> None:
            self._json(404, {"error": {"message": f"no such path: {self.path}", "type": "nf"}})

        def do_POST(self) -> None:
            raw = self._body()
            path = self.path.split("?", 1)[0]
            if path not in CHAT_PATHS + RESPONSES_PATHS:
                self._json(404, {"error": {"message": f"no such path: {path}", "type": "nf"}})
                return
            try:
                body: Any = json.loads(raw or b"{}")
            except ValueError as exc:
                self._json(400, {"error": {"message": f"body is not JSON: {exc}", "type": "bad"}})
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = ReceivedRequest(path=path, headers=headers, body=body)
            server._record(request)
            try:
                status, out_headers, payload = server.answer(request)
            except Exception as exc:  # a user's responder raised: a 500 that names it
                message = f"ScriptedOpenAIServer responder raised {type(exc).__name__}: {exc}"
                self._json(500, {"error": {"message": message, "type": "server_error"}})
                return
            self._send(status, out_headers, payload)

    return Handler
