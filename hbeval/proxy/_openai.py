"""``hbeval proxy openai``: an OpenAI-compatible HTTP proxy that records and plants faults.

It binds 127.0.0.1 only and forwards only to its configured upstream (no open relay). Every
chat completion (``POST /v1/chat/completions``) and Responses API call (``POST /v1/responses``,
``_responses``), streamed or not, is recorded as hb-events: ``model_start`` / ``model_end`` per
call, ``tool_start`` for each tool call the reply issues (a ``function_call`` output item) and
``tool_end`` when its result travels in the next request (a ``tool`` message, or a
``function_call_output`` input item). Other paths pass through unrecorded.

**Model faults** (``vocab.MODEL_FAULT_MODES``) are planted at the HTTP layer, so the client's
own retry and ``Retry-After`` logic runs against them (``_model_faults``). Each has a
``fault_injected`` receipt (``call_id`` the model call, ``attrs.delivered_by = "http"``,
``attrs.status``), amended with what followed once it is known: ``attrs.followed_by`` is
``{"action": "retry", "after_ms": N, "honoured_retry_after": bool}`` (the same conversation
asked again), ``{"action": "fallback", "model": ...}`` (the same conversation to another
model), ``{"action": "continued", "after_ms": N}`` (a changed conversation) or
``{"action": "gave_up"}`` (no further call in the session).

**Tool faults** (``vocab.FAULT_MODES``) are planted in the tool result as the model will see it:
the next request's tool message (or ``function_call_output`` item's ``output``) is replaced by
the injector's error text or spoiled result
before it is forwarded; the receipt's ``attrs.delivered_by`` is ``"next_request"``.

**Sessions.** A session is one trial stream. With ``trial_keys`` (a battery) only those client
keys are accepted, each its own trial with its own faults; standalone, a session ends at a new
client key or after ``session_idle`` seconds without a call. The client's key is never stored;
``Authorization`` is redacted in every record, and ``upstream_key`` (never recorded) replaces
it on the way upstream when given.

**Off the request path.** Handlers put what they saw on a queue; a recorder thread builds the
events after the response is sent, and the store is written when the proxy closes.
"""

from __future__ import annotations

import functools
import http.client
import json
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import urlsplit

from hbeval_core.events import FaultInjected, ModelEnd, ModelStart, ToolEnd, ToolError, ToolStart
from hbeval_core.faults.model import ModelFaultSpec, model_effect
from hbeval_core.faults.runtime import FaultInjector, render_text
from hbeval_core.vocab import RATE_LIMIT

from . import _model_faults as mf
from . import _responses as rs
from ._openai_http import CHAT_SUFFIX, make_handler
from ._record import SessionRecord, redact_headers
from ._spec import PROXY_PLAN_ID, FaultSet

__all__ = ["CHAT_SUFFIX", "PROXY_EVIDENCE", "OpenAIProxy"]

PROXY_EVIDENCE: Final = {
    "level": "proxy",
    "seen": ["model_calls", "tool_calls_issued", "tool_results_sent_back"],
    "cannot_support": [
        "tool execution and its latency",
        "side effects that never reached the model",
        "work done without the model API",
        "spans",
    ],
    "note": "the trace was seen only through hbeval proxy openai",
}
"""Every session's ``run_start`` ``attrs.evidence``: what a trace seen only here holds."""

_HOP: Final = frozenset(
    {
        "host",
        "connection",
        "content-length",
        "transfer-encoding",
        "keep-alive",
        "accept-encoding",
        "content-encoding",
        "proxy-authorization",
        "te",
        "upgrade",
    }
)
_RETRY_TOLERANCE: Final = 0.95
"""A retry at or after 95% of the asked ``Retry-After`` honours it (timer granularity)."""


def _messages_key(body: Any, api: str = "chat") -> str:
    if api == "responses" and isinstance(body, dict):
        return rs.conversation_key(body)
    messages = body.get("messages") if isinstance(body, dict) else None
    return json.dumps(messages, sort_keys=True, default=str)


def _flat(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content, default=str)


def _args(text: str) -> tuple[dict[str, Any], bool]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}, False
    return (value, True) if isinstance(value, dict) else ({"value": value}, False)


def _same(value: Any) -> Any:
    return value


def _kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The request's headers as a record keeps them: credentials redacted, transport left out."""
    return redact_headers({k: v for k, v in headers.items() if k.lower() not in _HOP})


@dataclass
class _Pending:
    """A faulted model call whose sequel is not yet known."""

    receipt: FaultInjected
    spec: ModelFaultSpec
    messages: str
    model: str
    answered_at: float


@dataclass
class _Session:
    """One trial stream: its record, faults and what it has seen so far."""

    record: SessionRecord
    faults: FaultSet
    injector: FaultInjector
    last_seen: float = field(default_factory=time.monotonic)
    model_counts: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    open_calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """Tool call id -> (tool, args): issued by the model, result not yet seen."""
    pending: _Pending | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class _Exchange:
    """What one chat completion request saw, handed to the recorder after the response."""

    session: _Session
    api: str
    """``chat`` (chat completions) or ``responses`` (the Responses API)."""
    call_id: str
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    arrived: float
    messages_key: str
    tool_results: list[tuple[str, str, Any, FaultInjected | None, str | None]] = field(
        default_factory=list
    )
    """(call_id, tool, result the model saw, tool-fault receipt, error text)."""
    fault: ModelFaultSpec | None = None
    attempt: int = 0
    status: int = 200
    completion: mf.Completion | None = None
    error: str | None = None
    answered: float = 0.0
    fault_note: dict[str, Any] = field(default_factory=dict)


class OpenAIProxy:
    """The proxy: an upstream, what to plant, and the sessions it records (see the module)."""

    def __init__(
        self,
        upstream: str,
        faults: FaultSet | None = None,
        *,
        port: int = 0,
        upstream_key: str | None = None,
        session_idle: float | None = None,
        trial_keys: Mapping[str, tuple[str, FaultSet]] | None = None,
        forbidden_tool: str | None = None,
        run_id: str | None = None,
        timeout: float = 600.0,
        session_attrs: Mapping[str, Any] | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"--upstream must be an http(s) URL such as http://127.0.0.1:8000/v1 (got "
                f"{upstream!r})"
            )
        self.upstream = upstream.rstrip("/")
        self._scheme, self._host = parts.scheme, parts.hostname
        self._uport = parts.port or (443 if parts.scheme == "https" else 80)
        self._base_path = parts.path.rstrip("/")
        self.faults = faults or FaultSet()
        self.port = port
        self._upstream_key = upstream_key
        self.session_idle = session_idle
        self._trial_keys = dict(trial_keys) if trial_keys is not None else None
        self.forbidden_tool = forbidden_tool
        self.timeout = timeout
        self._session_attrs = {"evidence": PROXY_EVIDENCE, **dict(session_attrs or {})}
        """Added to every session's ``run_start`` attrs: the evidence note, a command's name."""
        self.run_id = run_id or SessionRecord("openai").run_id
        self.sessions: list[_Session] = []
        self._by_key: dict[str, _Session] = {}
        self._current: tuple[str, _Session] | None = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._recorder: threading.Thread | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> OpenAIProxy:
        """Bind 127.0.0.1 and serve in background threads."""
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), make_handler(self))
        httpd.daemon_threads = True
        self._httpd = httpd
        self.port = int(httpd.server_address[1])
        self._recorder = threading.Thread(target=self._record_loop, daemon=True)
        self._recorder.start()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the CLI)."""
        self.start()
        assert self._thread is not None
        try:
            while self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.close()

    def close(self) -> None:
        """Stop serving, end every session (pending faults: ``gave_up``), finish recording."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        with self._lock:
            sessions = list(self.sessions)
        for session in sessions:
            self._queue.put(functools.partial(self._end_session, session))
        self.flush()
        self._queue.put(None)
        if self._recorder is not None:
            self._recorder.join(timeout=10)
            self._recorder = None

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until everything seen so far is recorded."""
        if self._recorder is None or not self._recorder.is_alive():
            return
        done = threading.Event()
        self._queue.put(done.set)
        done.wait(timeout)

    def __enter__(self) -> OpenAIProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What a client's ``base_url`` (or ``OPENAI_BASE_URL``) takes."""
        return f"{self.url}/v1"

    @property
    def records(self) -> list[SessionRecord]:
        """Every session's record, in the order the sessions began."""
        with self._lock:
            return [s.record for s in self.sessions]

    def write(self, store: Any, *, agent_id: str = "proxy", label: str | None = None) -> str:
        """Store every session as one run (one trial per session); returns the run id."""
        from ._record import write_sessions

        return write_sessions(
            store, self.run_id, self.records, kind="openai", agent_id=agent_id, label=label
        )

    # -- sessions -----------------------------------------------------------------------------
    def session_for(self, key: str) -> _Session | None:
        """The session a client key belongs to (None: a key a battery did not issue)."""
        now = time.monotonic()
        with self._lock:
            if self._trial_keys is not None:
                if key not in self._trial_keys:
                    return None
                session = self._by_key.get(key)
                if session is None:
                    name, faults = self._trial_keys[key]
                    session = self._by_key[key] = self._new_session(name, faults)
            else:
                current = self._current
                idle = (
                    self.session_idle is not None
                    and current is not None
                    and now - current[1].last_seen > self.session_idle
                )
                if current is None or current[0] != key or idle:
                    if current is not None:
                        self._queue.put(functools.partial(self._end_session, current[1]))
                    name = f"session-{len(self.sessions)}"
                    current = (key, self._new_session(name, self.faults))
                    self._current = current
                session = current[1]
            session.last_seen = now
            return session

    def _new_session(self, name: str, faults: FaultSet) -> _Session:
        record = SessionRecord("openai", session=name, run_id=self.run_id)
        injector = FaultInjector(
            faults.plan, run_id=self.run_id, forbidden_tool=self.forbidden_tool, enabled=True
        )
        session = _Session(record, faults, injector)
        self.sessions.append(session)
        self._queue.put(
            lambda: record.start(
                upstream=self.upstream,
                faults=list(faults.source),
                session=name,
                **self._session_attrs,
            )
        )
        return session

    # -- a chat completion ----------------------------------------------------------------------
    def begin(
        self, session: _Session, body: dict[str, Any], headers: dict[str, str], api: str = "chat"
    ) -> _Exchange:
        """Count the call, plant tool-result faults in its messages, decide its model fault."""
        model = str(body.get("model") or "")
        with session.lock:
            call_id = f"model#{session.calls}"
            session.calls += 1
            key = _messages_key(body, api)
            ex = _Exchange(session, api, call_id, model, body, headers, time.time(), key)
            self._tool_results(session, ex)
            if ex.tool_results:
                ex.messages_key = _messages_key(body, api)
            plan = session.faults.model
            decided = plan.decide(model, session.model_counts) if plan is not None else None
            if decided is not None:
                ex.fault, ex.attempt = decided
        return ex

    def _tool_results(self, session: _Session, ex: _Exchange) -> None:
        """Each result of an open tool call (a ``tool`` message, or a ``function_call_output``
        item): recorded, and replaced by what a planted tool fault makes of it."""
        if ex.api == "responses":
            results = [(i, "call_id", "output") for i in rs.tool_outputs(ex.body)]
        else:
            results = [
                (m, "tool_call_id", "content")
                for m in ex.body.get("messages") or ()
                if isinstance(m, dict) and m.get("role") == "tool"
            ]
        for message, id_field, content_field in results:
            tcid = str(message.get(id_field) or "")
            if tcid not in session.open_calls:
                continue
            tool, args = session.open_calls.pop(tcid)
            content = _flat(message.get(content_field))
            try:
                value: Any = json.loads(content)
            except ValueError:
                value = content
            before = len(session.injector.events)
            outcome = session.injector.run_call(tool, args, tcid, functools.partial(_same, value))
            receipt = session.injector.events[-1] if len(session.injector.events) > before else None
            if receipt is None:
                ex.tool_results.append((tcid, tool, value, None, None))
                continue
            seen = outcome.error if outcome.error is not None else outcome.result
            message[content_field] = seen if isinstance(seen, str) else render_text(seen)
            ex.tool_results.append((tcid, tool, seen, receipt, outcome.error))

    def issued(self, ex: _Exchange) -> None:
        """The reply's tool calls are open until their results arrive."""
        if ex.completion is None:
            return
        with ex.session.lock:
            for call in ex.completion.tool_calls:
                ex.session.open_calls[call["id"]] = (call["name"], _args(call["arguments"])[0])

    def finish(self, ex: _Exchange) -> None:
        """Hand the exchange to the recorder (after the response was sent)."""
        ex.answered = time.time()
        self.issued(ex)
        self._queue.put(lambda: self._record_exchange(ex))

    # -- upstream -------------------------------------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = (
                http.client.HTTPSConnection
                if self._scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(self._host, self._uport, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def drop_connection(self) -> None:
        """Close this thread's upstream connection (a response left unread)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def upstream_request(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> http.client.HTTPResponse:
        """Send one request upstream (one retry on a dropped keep-alive connection)."""
        out = {k: v for k, v in headers.items() if k.lower() not in _HOP}
        if self._upstream_key is not None:
            out = {k: v for k, v in out.items() if k.lower() not in ("authorization", "api-key")}
            out["Authorization"] = f"Bearer {self._upstream_key}"
        out["Content-Length"] = str(len(body))
        target = self._base_path + (path[3:] if path.startswith("/v1/") else path)
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(method, target, body=body, headers=out)
                return conn.getresponse()
            except (http.client.HTTPException, OSError) as exc:
                self.drop_connection()
                stale = isinstance(
                    exc, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
                )
                if attempt or not stale:
                    raise
        raise AssertionError("unreachable")

    # -- recording (the recorder thread) ----------------------------------------------------------
    def _record_loop(self) -> None:
        while True:
            op = self._queue.get()
            if op is None:
                return
            try:
                op()
            except Exception as exc:  # one bad exchange must not stop the recording
                import sys

                print(f"hbeval proxy: could not record an exchange: {exc!r}", file=sys.stderr)

    def _end_session(self, session: _Session) -> None:
        if session.pending is not None:
            self._amend(session, {"action": "gave_up"})
        session.record.end("ok", model_calls=session.calls)

    def _amend(self, session: _Session, followed: dict[str, Any]) -> None:
        pending, session.pending = session.pending, None
        if pending is None:
            return
        session.record.amend(pending.receipt, followed_by=followed)

    def _follow_up(self, ex: _Exchange) -> None:
        pending = ex.session.pending
        if pending is None:
            return
        after = round(max(0.0, ex.arrived - pending.answered_at) * 1000.0, 1)
        if ex.messages_key == pending.messages and ex.model == pending.model:
            followed: dict[str, Any] = {"action": "retry", "after_ms": after}
            if pending.spec.mode == RATE_LIMIT:
                wait = float(pending.spec.param("retry_after_ms"))
                followed["retry_after_ms"] = wait
                followed["honoured_retry_after"] = after >= wait * _RETRY_TOLERANCE
        elif ex.messages_key == pending.messages:
            followed = {"action": "fallback", "model": ex.model, "after_ms": after}
        else:
            followed = {"action": "continued", "after_ms": after}
        self._amend(ex.session, followed)

    def _record_exchange(self, ex: _Exchange) -> None:
        # Long because: one exchange's events in trace order (tool results, the model call,
        # its receipt, its end, the tool calls it issued), each from the same few fields.
        record = ex.session.record
        self._follow_up(ex)
        for tcid, tool, seen, receipt, error in ex.tool_results:
            if receipt is not None:
                attrs = {**receipt.attrs, "delivered_by": "next_request", "tool_ran": True}
                record.keep(receipt.model_copy(update={"attrs": attrs}))
            if error is not None:
                record.emit(ToolError, at=ex.arrived, call_id=tcid, tool=tool, error=error)
            else:
                record.emit(
                    ToolEnd, at=ex.arrived, call_id=tcid, tool=tool, result=seen, status="ok"
                )
        messages = (
            rs.model_messages(ex.body)
            if ex.api == "responses"
            else [
                {
                    "role": str(m.get("role") or ""),
                    "content": _flat(m.get("content")),
                    "tool_call_id": m.get("tool_call_id"),
                }
                for m in ex.body.get("messages") or ()
                if isinstance(m, dict)
            ]
        )
        record.emit(
            ModelStart,
            at=ex.arrived,
            call_id=ex.call_id,
            model=ex.model or None,
            messages=messages,
            attrs={
                "headers": _kept_headers(ex.headers),
                "stream": ex.body.get("stream") is True,
                "api": ex.api,
            },
        )
        if ex.fault is not None:
            planted = record.emit(
                FaultInjected,
                at=ex.arrived,
                call_id=ex.call_id,
                tool=None,
                mode=ex.fault.mode,
                effect=model_effect(ex.fault.mode),
                payload=ex.error or ex.fault_note.get("payload"),
                intended=ex.fault.to_dict(),
                injected=ex.fault_note.get("injected", "applied"),
                observed=ex.fault_note.get("observed", f"http_{ex.status}"),
                plan_id=(ex.session.faults.model.id if ex.session.faults.model else PROXY_PLAN_ID),
                fault_id=ex.fault.id,
                attempt=ex.attempt,
                attrs={
                    "family": "model",
                    "delivered_by": "http",
                    "status": ex.status,
                    "received": True,
                    **{k: v for k, v in ex.fault_note.items() if k not in ("payload",)},
                },
            )
            assert isinstance(planted, FaultInjected)
            ex.session.pending = _Pending(planted, ex.fault, ex.messages_key, ex.model, ex.answered)
        c = ex.completion
        tool_calls = []
        raw: dict[str, str] = {}
        for call in c.tool_calls if c is not None else ():
            args, ok = _args(call["arguments"])
            if not ok:
                raw[call["id"]] = call["arguments"]
            tool_calls.append({"id": call["id"], "name": call["name"], "args": args})
        usage = None
        if c is not None and isinstance(c.usage, dict):
            usage = {
                "input_tokens": c.usage.get("prompt_tokens"),
                "output_tokens": c.usage.get("completion_tokens"),
            }
        record.emit(
            ModelEnd,
            at=ex.answered or None,
            call_id=ex.call_id,
            text=c.text if c is not None else None,
            tool_calls=tool_calls,
            usage=usage,
            latency_ms=max(0.0, (ex.answered - ex.arrived) * 1000.0),
            error=ex.error,
            attrs={"status": ex.status, **({"raw_arguments": raw} if raw else {})},
        )
        for call in tool_calls:
            record.emit(
                ToolStart,
                at=ex.answered or None,
                call_id=call["id"],
                tool=call["name"],
                args=call["args"],
            )
