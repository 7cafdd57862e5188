"""Finding 6 of the second adversarial pass: ``export otlp`` followed redirects with its headers.

On a 302, urllib re-sent ``--header Authorization=...`` to the other origin as a GET, and the
export exited 0 though nothing was delivered; a password in ``--endpoint`` was echoed in error
messages. A redirect is now an error naming its Location, nothing goes to the other origin, and
a password in a URL is masked everywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from tests.adversarial._agents import stored_careful_run

SECRET = "Bearer tok-4711-secret"


class _Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, str | None]]
    location: str | None = None

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if self.location is not None:
            self.send_response(302)
            self.send_header("Location", self.location + self.path)
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        return


def _serve(location: str | None) -> tuple[ThreadingHTTPServer, list[Any]]:
    seen: list[Any] = []
    handler = type("Handler", (_Recorder,), {"seen": seen, "location": location})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, seen


@pytest.fixture
def servers() -> Iterator[dict[str, Any]]:
    other, other_seen = _serve(None)
    other_url = f"http://127.0.0.1:{other.server_address[1]}"
    redirecting, first_seen = _serve(other_url)
    try:
        yield {
            "endpoint": f"http://127.0.0.1:{redirecting.server_address[1]}",
            "port": redirecting.server_address[1],
            "other": other_url,
            "first_seen": first_seen,
            "other_seen": other_seen,
        }
    finally:
        for server in (other, redirecting):
            server.shutdown()
            server.server_close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export")
    stored_careful_run(root, "store.db")
    return root / "report.json"


def hb(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


def test_a_redirect_is_an_error_and_the_headers_never_reach_the_other_origin(
    servers: dict[str, Any], report: Path
) -> None:
    res = hb([
        "export", "otlp", str(report), "--endpoint", servers["endpoint"],
        "--header", f"Authorization={SECRET}",
    ])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "302" in res.output and f"{servers['other']}/v1/traces" in res.output
    assert servers["first_seen"] == [("POST", "/v1/traces", SECRET)]
    assert servers["other_seen"] == []


def test_a_password_in_the_endpoint_is_masked_in_messages(
    servers: dict[str, Any], report: Path
) -> None:
    endpoint = f"http://alice:hunter2@127.0.0.1:{servers['port']}"
    res = hb(["export", "otlp", str(report), "--endpoint", endpoint])
    assert res.exit_code == 2, res.output
    assert "hunter2" not in res.output and "alice:***@" in res.output
    bad = hb(["export", "otlp", str(report), "--endpoint", "ftp://bob:pw-9@host/x"])
    assert bad.exit_code == 2 and "pw-9" not in bad.output


@pytest.mark.parametrize(
    "args",
    [
        ["--header", "X-A=1\r\nX-Injected: 2"],
        ["--timeout", "nan"],
        ["--timeout", "0"],
    ],
)
def test_header_line_breaks_and_bad_timeouts_are_refused(
    servers: dict[str, Any], report: Path, args: list[str]
) -> None:
    res = hb(["export", "otlp", str(report), "--endpoint", servers["endpoint"], *args])
    assert res.exit_code == 2, res.output
    assert servers["first_seen"] == []
