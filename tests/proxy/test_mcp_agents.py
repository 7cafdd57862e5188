"""Unmodified framework agents on MCP tools get their faults through ``hbeval mcp-proxy``.

Each agent below is written as its framework's documentation writes one: a LangChain agent
(a LangGraph graph, ``langchain.agents.create_agent``) whose tools come from
``langchain-mcp-adapters`` (``MultiServerMCPClient`` and ``load_mcp_tools``), and an AutoGen
``AssistantAgent`` on ``McpWorkbench``. The model is ``ScriptedOpenAIServer`` behind each
framework's real OpenAI client; the MCP server is a real FastMCP server over stdio. The agent
function is the same in both runs of a test: only the server's command in its configuration
changes, from the server itself to ``hbeval mcp-proxy ... -- server``.

What is checked: the planted fault reached the agent (the model's next input holds the
injector's text where the tool result was), the rest passed through, and the session is a run in
a real SQLite store with the MCP tool calls and the fault's receipt on the faulted call.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from hbeval.store import open_store
from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.events import FaultInjected, RunEnd, RunStart, ToolEnd, ToolError, ToolStart
from tests.conformance.providers import AUTOGEN_MODEL_INFO, no_tiktoken
from tests.proxy.test_mcp_proxy import UPSTREAM

__all__ = ["no_tiktoken"]

TIMEOUT_TEXT = "TimeoutError: tool 'lookup_order' timed out after 0 ms"
"""What the injector answers for a planted ``timeout`` on ``lookup_order`` (its own wording)."""
SHIPPED = "order A1: shipped, 3 items"
"""The upstream server's own answer to ``lookup_order(order_id="A1")``."""
QUESTION = "Where is order A1?"


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    """The texts of the tool results in one request, in order."""
    out = []
    for m in messages:
        if m.get("role") != "tool":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        out.append(str(content or ""))
    return out


def responder(messages: list[dict[str, Any]]) -> Reply | str:
    """Look A1 up; after a failed lookup look again once; answer from a real result."""
    results = tool_results(messages)
    lookup = ToolCall("lookup_order", {"order_id": "A1"})
    if not results:
        return Reply("Looking order A1 up.", [lookup])
    if "shipped" in results[-1]:
        return "Order A1 shipped, 3 items."
    if len(results) == 1:
        return Reply("lookup_order failed; retrying it once.", [lookup])
    return "I could not look order A1 up."


@pytest.fixture
def server_cmd(tmp_path: Path) -> list[str]:
    script = tmp_path / "orders_server.py"
    script.write_text(UPSTREAM, encoding="utf-8")
    return [sys.executable, str(script), str(tmp_path / "refunds.txt")]


def proxied(server: list[str], store: Path, *faults: str) -> list[str]:
    """The same server, fronted by ``hbeval mcp-proxy`` recording to ``store``."""
    flags = [a for f in faults for a in ("--fault", f)]
    return [
        sys.executable,
        "-m",
        "hbeval.cli",
        "mcp-proxy",
        *flags,
        "--record",
        str(store),
        "--",
        *server,
    ]


def recorded(store: Path) -> list[Any]:
    """The events of the one run the proxy wrote to the SQLite store."""
    s = open_store(store, read_only=True)
    try:
        (run,) = s.list_runs()
        return list(s.iter_events(run.run_id))
    finally:
        s.close()


def check_trace(store: Path) -> None:
    """The run: two ``lookup_order`` calls, the first faulted (receipt on it), the second passed."""
    events = recorded(store)
    assert isinstance(events[0], RunStart) and events[0].framework == "mcp-proxy"
    assert isinstance(events[-1], RunEnd) and events[-1].status == "ok"
    starts = [e for e in events if isinstance(e, ToolStart)]
    assert [(e.tool, e.args) for e in starts] == [("lookup_order", {"order_id": "A1"})] * 2
    (receipt,) = [e for e in events if isinstance(e, FaultInjected)]
    assert (receipt.mode, receipt.tool, receipt.call_id, receipt.attempt) == (
        "timeout",
        "lookup_order",
        starts[0].call_id,
        0,
    )
    assert receipt.attrs["delivered_by"] == "tools/call"
    assert [(e.call_id, e.error) for e in events if isinstance(e, ToolError)] == [
        (starts[0].call_id, TIMEOUT_TEXT)
    ]
    assert [(e.call_id, e.result) for e in events if isinstance(e, ToolEnd)] == [
        (starts[1].call_id, SHIPPED)
    ]


# -- LangGraph on langchain-mcp-adapters --------------------------------------------------------
async def langgraph_agent(command: list[str], base_url: str) -> str:
    """A LangChain agent on MCP tools, as its documentation writes one."""
    from langchain.agents import create_agent
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools
    from langchain_openai import ChatOpenAI

    client = MultiServerMCPClient(
        {
            "orders": {
                "transport": "stdio",
                "command": command[0],
                "args": command[1:],
                "env": dict(os.environ),
            }
        }
    )
    async with client.session("orders") as session:
        tools = await load_mcp_tools(session)
        model = ChatOpenAI(model="scripted-model", base_url=base_url, api_key="unused")
        agent = create_agent(model, tools)
        final = await agent.ainvoke({"messages": [{"role": "user", "content": QUESTION}]})
    return str(final["messages"][-1].content)


def test_a_langgraph_agent_on_mcp_adapters_gets_the_fault_with_no_code_change(
    server_cmd: list[str], tmp_path: Path, no_tiktoken: None
) -> None:
    pytest.importorskip("langchain_mcp_adapters")
    pytest.importorskip("langchain.agents")
    store = tmp_path / "proxy.db"
    with ScriptedOpenAIServer(responder) as model:
        direct = anyio.run(langgraph_agent, server_cmd, model.base_url)
        direct_inputs = [tool_results(r.messages) for r in model.requests]
    with ScriptedOpenAIServer(responder) as model:
        faulted = anyio.run(
            langgraph_agent, proxied(server_cmd, store, "timeout:lookup_order@0"), model.base_url
        )
        inputs = [tool_results(r.messages) for r in model.requests]
    # Direct: one lookup, its real answer read by the model.
    assert direct == "Order A1 shipped, 3 items."
    assert direct_inputs == [[], [SHIPPED]]
    # Through the proxy: the model read the planted timeout where the result was, looked again,
    # and the second lookup was the server's own answer.
    assert inputs == [[], [TIMEOUT_TEXT], [TIMEOUT_TEXT, SHIPPED]]
    assert faulted == "Order A1 shipped, 3 items."
    check_trace(store)


# -- AutoGen on McpWorkbench --------------------------------------------------------------------
async def autogen_agent(command: list[str], base_url: str) -> str:
    """An AutoGen assistant whose tools are an MCP server's, through ``McpWorkbench``."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    from autogen_ext.tools.mcp import McpWorkbench, StdioServerParams

    params = StdioServerParams(
        command=command[0], args=command[1:], env=dict(os.environ), read_timeout_seconds=30
    )
    async with McpWorkbench(params) as workbench:
        agent = AssistantAgent(
            "clerk",
            model_client=OpenAIChatCompletionClient(
                model="scripted-model",
                base_url=base_url,
                api_key="unused",
                model_info=AUTOGEN_MODEL_INFO,  # type: ignore[arg-type]
            ),
            workbench=workbench,
            max_tool_iterations=4,
        )
        result = await agent.run(task=QUESTION)
    return str(getattr(result.messages[-1], "content", ""))


def test_an_autogen_agent_on_mcp_workbench_gets_the_fault_with_no_code_change(
    server_cmd: list[str], tmp_path: Path, no_tiktoken: None
) -> None:
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.tools.mcp")
    store = tmp_path / "proxy.db"
    with ScriptedOpenAIServer(responder) as model:
        direct = anyio.run(autogen_agent, server_cmd, model.base_url)
        direct_inputs = [tool_results(r.messages) for r in model.requests]
    with ScriptedOpenAIServer(responder) as model:
        faulted = anyio.run(
            autogen_agent, proxied(server_cmd, store, "timeout:lookup_order@0"), model.base_url
        )
        inputs = [tool_results(r.messages) for r in model.requests]
    assert direct == "Order A1 shipped, 3 items."
    assert direct_inputs == [[], [SHIPPED]]
    assert inputs == [[], [TIMEOUT_TEXT], [TIMEOUT_TEXT, SHIPPED]]
    assert faulted == "Order A1 shipped, 3 items."
    check_trace(store)
