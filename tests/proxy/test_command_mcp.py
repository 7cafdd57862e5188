"""A process whose tools are on an MCP server: ``--via-proxy openai --via-proxy mcp=SERVER``.

The target is a small Python script on the real ``mcp`` client and plain HTTP for the model
(urllib, no SDK, no hbeval): it starts the MCP server the runner gives it
(``$HBEVAL_MCP_ARGV``), offers the server's tools to the model, and runs the calls the model
makes on the server. The MCP server is a real FastMCP server; the model is
ScriptedOpenAIServer behind the per-trial OpenAI proxy. The trial's tool fault is planted by
the MCP proxy, where the tool runs.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from hbeval.proxy._command import CommandAdapter, CommandTarget
from hbeval.runner import run_battery
from hbeval.store import InMemoryStore
from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.contract import Task
from hbeval_core.events import FaultInjected, ModelStart, RunStart, ToolEnd, ToolError, ToolStart
from hbeval_core.faults.userbattery import parse_battery
from tests.proxy.test_mcp_proxy import UPSTREAM

AGENT = r"""
import asyncio, json, os, sys, urllib.request
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BASE, KEY = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
ARGV = json.loads(os.environ["HBEVAL_MCP_ARGV"])

def chat(messages, tools):
    body = json.dumps({"model": "m", "messages": messages, "tools": tools}).encode()
    req = urllib.request.Request(BASE + "/chat/completions", data=body, headers={
        "Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)["choices"][0]["message"]

async def main():
    question = sys.stdin.read()
    params = StdioServerParameters(command=ARGV[0], args=ARGV[1:], env=dict(os.environ))
    async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        listed = await session.list_tools()
        tools = [{"type": "function", "function": {"name": t.name, "parameters": t.inputSchema}}
                 for t in listed.tools]
        messages = [{"role": "user", "content": question}]
        for _ in range(5):
            reply = chat(messages, tools)
            messages.append(reply)
            if not reply.get("tool_calls"):
                print(reply.get("content") or "")
                return
            for call in reply["tool_calls"]:
                args = json.loads(call["function"]["arguments"] or "{}")
                result = await session.call_tool(call["function"]["name"], args)
                text = "\n".join(c.text for c in result.content if getattr(c, "text", None))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})

asyncio.run(main())
"""

LOOKUP = ToolCall("lookup_order", {"order_id": "A1"})


def responder(messages: list[dict[str, Any]]) -> Any:
    """Look the order up; after a failed lookup say so and look again once; then answer."""
    last = messages[-1]
    if last.get("role") != "tool":
        return Reply("Looking order A1 up.", [LOOKUP])
    if "shipped" in str(last.get("content")):
        return "Order A1 shipped, 3 items."
    return Reply("lookup_order timed out; retrying it once.", [LOOKUP])


BATTERY = {
    "format": "hbeval-battery-file/1",
    "name": "mcp",
    "scenarios": [
        {"name": "base", "mode": "none"},
        {"name": "slow", "mode": "timeout", "tools": ["lookup_order"], "when": {"attempts": [0]}},
    ],
}


def test_a_process_gets_its_tool_faults_on_its_mcp_server(tmp_path: Path) -> None:
    server = tmp_path / "orders_server.py"
    server.write_text(UPSTREAM, encoding="utf-8")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    mcp_cmd = shlex.join([sys.executable, str(server), str(tmp_path / "refunds.txt")])
    task = Task(id="t1", question="Where is order A1?", required=("shipped",))
    store = InMemoryStore()
    with ScriptedOpenAIServer(responder) as up:
        target = CommandTarget(f"{sys.executable} {agent}", up.base_url, mcp_server=mcp_cmd)
        report = run_battery(
            CommandAdapter(), target, [task], parse_battery(BATTERY, seed=3),
            trials=1, seed=3, store=store,
        )  # fmt: skip
        requests = up.requests
    (run,) = store.list_runs()
    trials = {t.trial_key: t for t in store.list_trials(run.run_id)}
    events = {k: list(store.iter_events(run.run_id, k)) for k in trials}
    assert {k: t.outcome for k, t in trials.items()} == {"s000-t0": "pass", "s001-t0": "pass"}
    # Nominal: one lookup, run on the MCP server, recorded once (not again as the model saw it).
    nominal = events["s000-t0"]
    starts = [e for e in nominal if isinstance(e, ToolStart)]
    assert [e.tool for e in starts] == ["lookup_order"]
    assert [e.result for e in nominal if isinstance(e, ToolEnd)] == ["order A1: shipped, 3 items"]
    assert not [e for e in nominal if isinstance(e, FaultInjected)]
    # Faulted: the MCP proxy answered the first lookup with the planted timeout, the model read
    # it in its next input (delivered), and the second lookup ran on the server.
    faulted = events["s001-t0"]
    (receipt,) = [e for e in faulted if isinstance(e, FaultInjected)]
    assert receipt.mode == "timeout" and receipt.tool == "lookup_order"
    errors = [e for e in faulted if isinstance(e, ToolError)]
    assert len(errors) == 1 and "TimeoutError" in (errors[0].error or "")
    assert [e.tool for e in faulted if isinstance(e, ToolStart)] == ["lookup_order"] * 2
    later = [e for e in faulted if isinstance(e, ModelStart) and e.seq > receipt.seq]
    assert any("TimeoutError" in (m.content or "") for e in later for m in e.messages)
    (fault,) = trials["s001-t0"].verdict["faults"]
    assert fault["delivered"] is True and fault["receipt"] == "payload_seen"
    # One trace per trial, in time order, seen only through the two proxies.
    assert [e.seq for e in faulted] == list(range(len(faulted)))
    start = faulted[0]
    assert isinstance(start, RunStart)
    assert start.attrs["evidence"]["note"] == (
        "the trace was seen only through hbeval proxy openai and hbeval mcp-proxy"
    )
    # By hand: one faulted trial, recovered: FRR 1/1. The retry repeats the timed-out call
    # identically, once, and the reply before it names the tool and its timeout: the bounded
    # retry of a transient fault, deliberate: IRS 1.0.
    assert report.metrics.frr == 1.0 and report.defined_counts["frr"] == 1
    assert report.metrics.irs == 1.0 and report.defined_counts["irs"] == 1
    assert len(requests) == 2 + 3


def test_cli_mcp_flags(tmp_path: Path) -> None:
    args = ["battery", "run", "--command", "python a.py", "--via-proxy", "mcp=", "--db",
            str(tmp_path / "x.db")]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "--via-proxy mcp=SERVER: SERVER is empty" in done.stderr
    assert not (tmp_path / "x.db").exists()
