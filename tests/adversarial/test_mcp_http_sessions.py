"""Finding 14 (MCP) of the second adversarial pass: MCP HTTP sessions were never capped.

1,000 sessions added 56 MB and none was ever closed. The streamable HTTP server now holds at
most a fixed number of sessions (a request that would open another gets HTTP 503) and closes
one left idle, which frees room for a new one.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests.adversarial._agents import stored_careful_run

_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _open_session(port: int) -> int:
    """POST an initialize request (a new session); the HTTP status."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=json.dumps(_INIT).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_http_sessions_are_capped_and_idle_ones_expire(tmp_path: Path) -> None:
    from mcp.server.fastmcp import FastMCP

    from hbeval.mcp_server._server import _session_limits

    if not _session_limits(FastMCP, 1, 1.0):
        pytest.skip("this mcp SDK has no session cap or idle expiry (mcp>=1.30 has them)")
    db = stored_careful_run(tmp_path, "store.db")
    port = _port()
    code = (
        "from hbeval.mcp_server._server import build_server\n"
        f"build_server({str(db)!r}, port={port}, max_sessions=3, session_idle_seconds=1.5)"
        ".run('streamable-http')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "server did not start"
                time.sleep(0.1)
        assert [_open_session(port) for _ in range(3)] == [200, 200, 200]
        assert _open_session(port) == 503  # the cap: existing sessions are kept
        time.sleep(3.5)  # all three idle past 1.5 s: closed
        assert _open_session(port) == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
