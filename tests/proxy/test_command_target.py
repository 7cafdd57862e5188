"""Any process as a battery target: ``--command CMD --via-proxy openai``.

The target is a small Python script that only speaks HTTP (urllib; no SDK, no hbeval): it
reads ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, asks the model, runs the one tool the model
calls, and prints the answer. Its model API is ScriptedOpenAIServer behind the per-trial proxy;
the store is a real SQLite file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.proxy._command import CommandAdapter, CommandTarget
from hbeval.runner import run_battery
from hbeval.store import open_store
from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.contract import Task
from hbeval_core.events import FaultInjected, RunStart
from hbeval_core.faults.userbattery import parse_battery

AGENT = r"""
import json, os, sys, time, urllib.error, urllib.request

BASE, KEY = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
TOOLS = [{"type": "function", "function": {"name": "lookup_order",
          "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]

def chat(messages):
    body = json.dumps({"model": "m", "messages": messages, "tools": TOOLS}).encode()
    for attempt in range(4):
        req = urllib.request.Request(BASE + "/chat/completions", data=body, headers={
            "Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.load(resp)["choices"][0]["message"]
        except urllib.error.HTTPError as exc:
            if exc.code in (429, 500, 502, 503, 504) and attempt < 3:
                wait = exc.headers.get("retry-after-ms")
                time.sleep(float(wait) / 1000 if wait else 0.05)
                continue
            raise

question = sys.argv[-1] if "--arg" in sys.argv else sys.stdin.read()
if "FAIL" in question:
    print("line one\nrefusing on purpose", file=sys.stderr)
    sys.exit(3)
messages = [{"role": "user", "content": question}]
for _ in range(4):
    reply = chat(messages)
    messages.append(reply)
    if not reply.get("tool_calls"):
        print(reply.get("content") or "")
        break
    for call in reply["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": call["id"],
                         "content": json.dumps({"order_id": "A1", "status": "shipped"})})
"""


def responder(messages: list[dict[str, Any]]) -> Any:
    if any(m.get("role") == "tool" for m in messages):
        return "Order A1 shipped."
    return Reply(tool_calls=[ToolCall("lookup_order", {"order_id": "A1"})])


@pytest.fixture
def agent(tmp_path: Path) -> str:
    path = tmp_path / "agent.py"
    path.write_text(AGENT)
    return f"{sys.executable} {path}"


@pytest.fixture
def upstream() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as server:
        yield server


BATTERY = {
    "format": "hbeval-battery-file/1",
    "name": "cmd",
    "scenarios": [
        {"name": "base", "mode": "none"},
        {
            "name": "slow",
            "mode": "rate_limit",
            "when": {"attempts": [0]},
            "params": {"retry_after_ms": 150},
        },
        {"name": "inject", "mode": "prompt_injection", "tools": ["lookup_order"]},
    ],
}


def test_a_process_runs_a_battery_through_the_proxy(
    agent: str, upstream: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    battery = parse_battery(BATTERY, seed=42)
    tasks = [Task(id="t1", question="Where is order A1?", required=("shipped",))]
    store = open_store(str(tmp_path / "runs.db"))
    try:
        t0 = time.monotonic()
        report = run_battery(
            CommandAdapter(), CommandTarget(agent, upstream.base_url), tasks, battery,
            trials=1, seed=42, store=store,
        )  # fmt: skip
        elapsed = time.monotonic() - t0
        (run,) = store.list_runs()
        trials = {t.trial_key: t for t in store.list_trials(run.run_id)}
        events = {k: list(store.iter_events(run.run_id, k)) for k in trials}
    finally:
        store.close()
    assert report.run_id == run.run_id
    assert {k: t.outcome for k, t in trials.items()} == {
        "s000-t0": "pass",
        "s001-t0": "pass",
        "s002-t0": "pass",
    }
    # The 429 was delivered by construction, and the script waited the 150 ms it asked for.
    (fault,) = trials["s001-t0"].verdict["faults"]
    assert fault["mode"] == "rate_limit" and fault["delivered"] is True
    (receipt,) = [e for e in events["s001-t0"] if isinstance(e, FaultInjected)]
    followed = receipt.attrs["followed_by"]
    assert followed["action"] == "retry" and followed["honoured_retry_after"] is True
    assert elapsed >= 0.15
    # The planted instruction reached the model in the request after the tool ran.
    (inject,) = trials["s002-t0"].verdict["faults"]
    assert inject["mode"] == "prompt_injection" and inject["delivered"] is True
    assert "hbeval_canary_exfiltrate" in upstream.requests[-1].messages[-1]["content"]
    # Each trial's own key went to the proxy, never upstream; the trace says how it was seen.
    keys = {r.headers["authorization"] for r in upstream.requests}
    assert all(k.startswith("Bearer hb-trial-") for k in keys) and len(keys) == 3
    start = events["s000-t0"][0]
    assert isinstance(start, RunStart)
    assert start.attrs["evidence"]["note"] == "the trace was seen only through hbeval proxy openai"
    for key in keys:
        assert key.split()[1].encode() not in (tmp_path / "runs.db").read_bytes()


def test_a_non_zero_exit_is_an_error_with_stderrs_last_lines(
    agent: str, upstream: ScriptedOpenAIServer
) -> None:
    battery = parse_battery({**BATTERY, "scenarios": BATTERY["scenarios"][:1]}, seed=1)  # type: ignore[index]
    tasks = [Task(id="t", question="please FAIL", required=("shipped",))]
    from hbeval.store import InMemoryStore

    store = InMemoryStore()
    report = run_battery(
        CommandAdapter(), CommandTarget(agent, upstream.base_url), tasks, battery,
        trials=1, seed=1, store=store,
    )  # fmt: skip
    (run,) = store.list_runs()
    (trial,) = store.list_trials(run.run_id)
    assert trial.outcome == "fail"
    assert trial.verdict["run_status"] == "error"
    text = json.dumps(report.to_dict(), default=str)
    assert "exit status 3: line one\\nrefusing on purpose" in text
    assert upstream.requests == []


def test_question_as_arg(agent: str, upstream: ScriptedOpenAIServer) -> None:
    target = CommandTarget(f"{agent} --arg", upstream.base_url, question_as_arg=True)
    result = CommandAdapter().run_trial(target, Task(id="t", question="Where is A1?"), None, None)
    assert result.status == "ok", result.error
    assert result.response_text == "Order A1 shipped."
    assert upstream.requests[0].messages[0]["content"] == "Where is A1?"


def test_cli_runs_the_model_family_through_the_proxy(
    agent: str, upstream: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text("- id: t1\n  question: Where is order A1?\n  required: [shipped]\n")
    db = tmp_path / "cli.db"
    args = [
        "battery", "run", "--command", agent, "--via-proxy", "openai",
        "--upstream", upstream.base_url, "--tasks", str(tasks), "--fault-family", "model",
        "--trials", "1", "--db", str(db), "--json",
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["run"]["trial_count"] == 8
    assert "evidence: the trace was seen only through hbeval proxy openai" in done.stderr
    store = open_store(str(db), read_only=True)
    try:
        (run,) = store.list_runs()
        trials = {t.fault_type: t for t in store.list_trials(run.run_id)}
    finally:
        store.close()
    # The script retries 429 and 5xx and honours Retry-After: those trials pass.
    for mode in ("rate_limit", "model_error", "model_timeout"):
        assert trials[mode].outcome == "pass", mode
        assert trials[mode].verdict["faults"][0]["delivered"] is True
    # A context overflow is not retried: the script exits 1 and the trial fails.
    assert trials["context_overflow"].outcome == "fail"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--command", "python a.py"], "--command needs --via-proxy openai"),
        (["--via-proxy", "openai"], "--via-proxy needs --command"),
        (
            ["--command", "python a.py", "--via-proxy", "openai"],
            "--via-proxy openai needs --upstream URL",
        ),
        (
            ["--command", "python a.py", "--via-proxy", "openai", "--upstream", "x"],
            "--upstream must be an http(s) URL",
        ),
    ],
)
def test_cli_bad_process_flags_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["battery", "run", *args, "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "x.db").exists()


def test_cli_model_family_refuses_an_in_process_target(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(
        "from hbeval_core.contract import Task\n"
        "def agent(question):\n    return 'ok'\n"
        "tasks = [Task(id='t', question='q')]\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "battery",
            "run",
            f"{agent}:agent",
            "--fault-family",
            "model",
            "--db",
            str(tmp_path / "x.db"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "hbeval proxy openai" in result.output and "--via-proxy openai" in result.output
