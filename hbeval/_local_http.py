"""The base of hbeval's own HTTP/1.1 handlers on 127.0.0.1 (the OpenAI proxy, the scripted server).

Quiet (no access log on stderr), keep-alive, Nagle off (headers and body go out as separate
writes, which a delayed ACK would otherwise hold back tens of milliseconds), and the two ways
they answer: a body with its length, and a JSON body.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class LocalHandler(BaseHTTPRequestHandler):
    """A quiet keep-alive handler that sends whole bodies with their length."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._send(status, {"Content-Type": "application/json"}, json.dumps(body).encode())

    def _body(self) -> bytes:
        """The request body (``Content-Length`` bytes; empty without one)."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""
