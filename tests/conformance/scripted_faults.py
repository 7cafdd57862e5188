"""Side by side: a real provider client meeting a model fault over HTTP, and a scripted model
meeting the same fault in-process (helpers for the tests).

``HAND_ANSWERS`` are the faults' HTTP answers written out by hand, as a provider sends them
(``ScriptedOpenAIServer`` serves them); ``cut_server`` is an endpoint that closes the
connection half-way through its answer. ``planted`` opens a trial whose desk plants one model
fault on the first model call, for a scripted model called directly. ``assert_same_error``
compares what the two clients raised. ``run_planted`` runs a battery of one planted 429 and
returns the report and the stored trace.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hbeval import run_battery
from hbeval.runner._model_desk import ScriptedModelFaults
from hbeval.store import InMemoryStore
from hbeval.testing import ErrorReply, ScriptedOpenAIServer
from hbeval.testing.conformance import two_tool_task
from hbeval_core.contract import FakeClock, TrialContext, trial_context
from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec

RAISED = ("rate_limit", "model_error", "model_timeout", "context_overflow", "stream_cut")
"""The modes a client meets as an exception."""
PARAMS: dict[str, dict[str, Any]] = {
    "rate_limit": {"retry_after_ms": 50},
    "model_timeout": {"after_ms": 50},
}
HAND_ANSWERS: dict[str, ErrorReply] = {
    "rate_limit": ErrorReply(429, "Rate limit reached; retry after 50 ms.", retry_after_ms=50),
    "model_error": ErrorReply(503, "The model server had an error (503)."),
    "model_timeout": ErrorReply(504, "The model did not answer in time.", delay_ms=50),
    "context_overflow": ErrorReply(
        400,
        "This model's maximum context length is 8192 tokens; your messages resulted in more.",
        code="context_length_exceeded",
    ),
}


@contextmanager
def planted(mode: str) -> Iterator[ScriptedModelFaults]:
    """A trial in which ``mode`` is planted on the first model call (a fake clock: no wait)."""
    spec = ModelFaultSpec("f0", mode, "*", (0,), 1.0, PARAMS.get(mode, {}))
    desk = ScriptedModelFaults(
        ModelFaultPlan("scripted/model", 0, (spec,)), run_id="trial", clock=FakeClock()
    )
    ctx = TrialContext(run_id="run", trial_run_id="trial", trial_key="k", model_faults=desk)
    with trial_context(ctx):
        yield desk


@dataclass(frozen=True)
class _At:
    base_url: str


@contextmanager
def cut_server() -> Iterator[_At]:
    """An endpoint whose every answer promises 400 bytes and closes after 24."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b'Content-Length: 400\r\n\r\n{"id": "chatcmpl-1", "o'
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield _At(f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
    finally:
        stop.set()
        thread.join(2)
        listener.close()


def raised(call: Callable[[], Any]) -> BaseException:
    """What ``call`` raises (it must raise)."""
    try:
        call()
    except Exception as exc:
        return exc
    raise AssertionError("the model call did not raise")


def real_error(mode: str, call: Callable[[Any], Any]) -> BaseException:
    """What a real client raises when the provider answers ``mode``: ``call(endpoint)`` makes
    one model call to ``endpoint.base_url`` (with the client's own retries off)."""
    endpoint: AbstractContextManager[Any] = (
        cut_server() if mode == "stream_cut" else ScriptedOpenAIServer([HAND_ANSWERS[mode]])
    )
    with endpoint as at:
        return raised(lambda: call(at))


def assert_same_error(real: BaseException, scripted: BaseException) -> None:
    """The same exception class, HTTP status and ``Retry-After`` headers."""
    assert type(scripted) is type(real), (type(real), type(scripted))
    assert getattr(scripted, "status_code", None) == getattr(real, "status_code", None)
    real_response = getattr(real, "response", None)
    scripted_response = getattr(scripted, "response", None)
    for header in ("retry-after", "retry-after-ms"):
        assert (real_response is None) == (scripted_response is None)
        if real_response is not None:
            assert scripted_response.headers.get(header) == real_response.headers.get(header)


def run_planted(factory: Callable[[], Any], folder: Path) -> tuple[Any, list[Any]]:
    """One trial of the standard task with a 429 (Retry-After 50 ms) on its first model call:
    the report and the trial's stored events."""
    path = folder / "rate-limit.json"
    scenario = {"name": "rate_limit", "mode": "rate_limit", "when": {"attempts": [0]}}
    scenario["params"] = PARAMS["rate_limit"]
    path.write_text(
        json.dumps({"format": "hbeval-battery-file/1", "name": "429", "scenarios": [scenario]}),
        encoding="utf-8",
    )
    store = InMemoryStore()
    report = run_battery(factory, tasks=[two_tool_task()], battery=str(path), trials=1, store=store)
    assert report.run_id is not None
    return report, list(store.iter_events(report.run_id))
