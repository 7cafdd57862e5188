"""The HTTP side of ``OpenAIProxy``: one handler per client connection (HTTP/1.1 keep-alive).

A chat completion or a Responses API call (``POST .../responses``, ``_responses``) is answered
by a planted model fault (``_model_faults``) or forwarded upstream, streamed responses event by
event as they arrive. Everything else is forwarded unchanged and not recorded. What the handler saw goes to the proxy's recorder after the
response is sent (``OpenAIProxy.finish``).
"""

from __future__ import annotations

import http.client
import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Final

from hbeval_core.vocab import EMPTY_COMPLETION, MALFORMED_TOOL_CALL, MODEL_TIMEOUT, STREAM_CUT

from .._local_http import LocalHandler
from . import _model_faults as mf
from . import _responses as rs

__all__ = ["CHAT_SUFFIX", "bearer", "make_handler"]

CHAT_SUFFIX: Final = "/chat/completions"

_SKIP_BACK: Final = frozenset(
    {"connection", "content-length", "transfer-encoding", "keep-alive", "content-encoding"}
)


def _error_message(payload: bytes) -> str:
    try:
        body = json.loads(payload)
        return str(body["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return payload[:200].decode("utf-8", "replace")


def bearer(headers: dict[str, str]) -> str:
    """The client's key from ``Authorization: Bearer ...`` (or ``api-key``)."""
    value = headers.get("authorization") or headers.get("api-key") or ""
    return value[7:].strip() if value.lower().startswith("bearer ") else value.strip()


def make_handler(proxy: Any) -> type[BaseHTTPRequestHandler]:
    """The handler class serving ``proxy`` (an ``OpenAIProxy``)."""
    # Long because: the handler class and its methods share the proxy through this closure.

    class Handler(LocalHandler):
        timeout = 600

        # -- sending ----------------------------------------------------------------------
        def _error(self, status: int, kind: str, message: str) -> None:
            self._json(
                status, {"error": {"message": message, "type": kind, "code": kind, "param": None}}
            )

        def _start_stream(self, headers: dict[str, str] | None = None) -> None:
            self.send_response(200)
            for name, value in (headers or {"Content-Type": "text/event-stream"}).items():
                self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

        def _chunk(self, data: bytes) -> None:
            if data:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

        def _end_stream(self) -> None:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _cut(self) -> None:
            """Close the connection mid-response: the client sees an incomplete body."""
            self.wfile.flush()
            self.close_connection = True

        # -- requests ---------------------------------------------------------------------
        def _read(self) -> tuple[str, dict[str, str], bytes]:
            return self.path, {k.lower(): v for k, v in self.headers.items()}, self._body()

        def _passthrough(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> None:
            try:
                resp = proxy.upstream_request(method, path, headers, raw)
                payload = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                self._error(502, "upstream_unreachable", f"upstream {proxy.upstream}: {exc}")
                return
            back = {k: v for k, v in resp.getheaders() if k.lower() not in _SKIP_BACK}
            self._send(resp.status, back, payload)

        def do_GET(self) -> None:
            path, headers, raw = self._read()
            self._passthrough("GET", path, headers, raw)

        def do_POST(self) -> None:
            path, headers, raw = self._read()
            route = path.split("?", 1)[0]
            if route.endswith(CHAT_SUFFIX):
                api = "chat"
            elif route.endswith(rs.RESPONSES_SUFFIX):
                api = "responses"
            else:
                self._passthrough("POST", path, headers, raw)
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                self._error(400, "invalid_request_error", f"body is not a JSON object: {exc}")
                return
            session = proxy.session_for(bearer(headers))
            if session is None:
                self._error(
                    401, "invalid_api_key", "this proxy serves only the keys its battery issued"
                )
                return
            ex = proxy.begin(session, body, headers, api=api)
            data = json.dumps(body).encode() if ex.tool_results else raw
            try:
                self._answer(ex, path, headers, data)
            finally:
                proxy.finish(ex)

        # -- answers ----------------------------------------------------------------------
        def _answer(self, ex: Any, path: str, headers: dict[str, str], data: bytes) -> None:
            fault = ex.fault
            stream = ex.body.get("stream") is True
            if fault is not None:
                if fault.mode == MODEL_TIMEOUT:
                    time.sleep(int(fault.param("after_ms")) / 1000.0)
                answer = mf.error_answer(fault)
                if answer is not None:
                    ex.status, out, payload = answer
                    ex.error = _error_message(payload)
                    self._send(ex.status, out, payload)
                    return
                if fault.mode == EMPTY_COMPLETION:
                    ex.completion = mf.Completion(text="", finish_reason="stop")
                    ex.fault_note = {"observed": "empty"}
                    self._completion(ex, stream)
                    return
            try:
                resp = proxy.upstream_request("POST", path, headers, data)
            except (OSError, http.client.HTTPException) as exc:
                ex.status, ex.error = 502, f"upstream {proxy.upstream}: {exc}"
                if fault is not None:
                    ex.fault_note = {"injected": "failed", "observed": "upstream_unreachable"}
                self._error(502, "upstream_unreachable", ex.error)
                return
            back = {k: v for k, v in resp.getheaders() if k.lower() not in _SKIP_BACK}
            ex.status = resp.status
            if resp.status != 200:
                payload = resp.read()
                ex.error = _error_message(payload)
                if fault is not None:
                    ex.fault_note = {"injected": "skipped", "observed": f"upstream_{resp.status}"}
                self._send(resp.status, back, payload)
                return
            is_sse = "text/event-stream" in (resp.getheader("Content-Type") or "")
            if fault is not None and fault.mode == MALFORMED_TOOL_CALL:
                self._malformed(ex, resp, is_sse, stream)
            elif is_sse:
                self._relay_stream(ex, resp, back)
            else:
                self._relay_body(ex, resp, back)

        def _parse(self, ex: Any, payload: bytes, is_sse: bool) -> mf.Completion:
            if ex.api == "responses":
                if is_sse:
                    return rs.completion_of_events(mf.parse_sse(payload))
                return rs.completion_of(json.loads(payload))
            if is_sse:
                return mf.Completion.of_chunks(mf.parse_sse(payload))
            return mf.Completion.of_body(json.loads(payload))

        def _completion(self, ex: Any, stream: bool) -> None:
            assert ex.completion is not None
            model, cid = ex.model or "model", f"chatcmpl-proxy-{ex.call_id}"
            if ex.api == "responses":
                response = rs.response_body(ex.completion, model, f"resp_proxy_{ex.call_id}")
                self._answer_response(response, stream)
                return
            if stream:
                self._start_stream()
                self._chunk(mf.sse_bytes(ex.completion.chunks(model, cid)))
                self._end_stream()
            else:
                body = json.dumps(ex.completion.body(model, cid)).encode()
                self._send(200, {"Content-Type": "application/json"}, body)

        def _answer_response(self, response: dict[str, Any], stream: bool) -> None:
            if stream:
                self._start_stream()
                self._chunk(rs.response_events(response))
                self._end_stream()
            else:
                body = json.dumps(response).encode()
                self._send(200, {"Content-Type": "application/json"}, body)

        def _malformed(self, ex: Any, resp: Any, is_sse: bool, stream: bool) -> None:
            payload = resp.read()
            assert ex.fault is not None
            if ex.api == "responses":
                self._malformed_response(ex, payload, is_sse, stream)
                return
            completion = self._parse(ex, payload, is_sse)
            ex.completion = completion
            if not completion.tool_calls:
                ex.fault_note = {
                    "injected": "skipped",
                    "observed": "normal",
                    "reason": "no_tool_call",
                }
            else:
                kind = str(ex.fault.param("malformed_kind"))
                for call in completion.tool_calls:
                    call["arguments"] = mf.spoil_arguments(call["arguments"], kind)
                spoiled = completion.tool_calls[0]["arguments"]
                ex.fault_note = {"observed": "malformed", "payload": spoiled, "kind": kind}
            self._completion(ex, stream)

        def _malformed_response(self, ex: Any, payload: bytes, is_sse: bool, stream: bool) -> None:
            """The upstream's response with every function call's arguments spoiled."""
            response: Any = json.loads(payload) if not is_sse else None
            for event in mf.parse_sse(payload) if is_sse else ():
                if event.get("type") in ("response.completed", "response.incomplete"):
                    response = event.get("response")
            if not isinstance(response, dict) or not rs.completion_of(response).tool_calls:
                ex.completion = rs.completion_of(response)
                ex.fault_note = {
                    "injected": "skipped",
                    "observed": "normal",
                    "reason": "no_tool_call",
                }
                self._answer_response(response if isinstance(response, dict) else {}, stream)
                return
            kind = str(ex.fault.param("malformed_kind"))
            ex.completion = rs.spoil_response(response, lambda a: mf.spoil_arguments(a, kind))
            spoiled = ex.completion.tool_calls[0]["arguments"]
            ex.fault_note = {"observed": "malformed", "payload": spoiled, "kind": kind}
            self._answer_response(response, stream)

        def _cut_after(self, ex: Any) -> int | None:
            if ex.fault is None or ex.fault.mode != STREAM_CUT:
                return None
            return max(1, int(ex.fault.param("cut_after")))

        def _relay_stream(self, ex: Any, resp: Any, back: dict[str, str]) -> None:
            cut = self._cut_after(ex)
            self._start_stream(back)
            sent: list[bytes] = []
            event = b""
            events = 0
            while True:
                line = resp.readline()
                if not line:
                    break
                event += line
                if line not in (b"\n", b"\r\n"):
                    continue
                if cut is not None and events >= cut:
                    break
                self._chunk(event)
                sent.append(event)
                events += 1
                event = b""
            if event and (cut is None or events < cut):
                self._chunk(event)
                sent.append(event)
            if cut is None:
                resp.read()  # at the end of a sized body readline never closes the response
            ex.completion = self._parse(ex, b"".join(sent), True)
            if cut is not None:
                ex.fault_note = {"observed": "stream_cut", "chunks_sent": events}
                ex.error = f"stream cut after {events} chunks"
                proxy.drop_connection()
                self._cut()
                return
            self._end_stream()

        def _relay_body(self, ex: Any, resp: Any, back: dict[str, str]) -> None:
            payload = resp.read()
            try:
                ex.completion = self._parse(ex, payload, False)
            except ValueError:
                ex.completion = None
            if self._cut_after(ex) is None:
                self._send(200, back, payload)
                return
            half = payload[: max(1, len(payload) // 2)]
            ex.fault_note = {"observed": "stream_cut", "bytes_sent": len(half)}
            ex.error = f"response cut after {len(half)} of {len(payload)} bytes"
            self.send_response(200)
            for name, value in back.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(half)
            self._cut()

    return Handler
