"""The ``BaseTool`` hook: tools run from any node, async node, ``Send`` branch or subgraph are faulted once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send

from hbeval.scoring import analyse_trace
from hbeval_core.events import FaultInjected, ToolEnd, ToolStart
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_langgraph import capture, tool_faults
from tests.adapters.langgraph.test_langgraph_fixtures import (
    PARALLEL_SCRIPT,
    TWO_TOOL_SCRIPT,
    ScriptedChatModel,
    custom_node_agent,
    make_tools,
)


def injector(mode: str = "error_5xx", on_calls: tuple[int, ...] = (0,)) -> FaultInjector:
    spec = FaultSpec(id="f", target="*", mode=mode, on_calls=on_calls)
    return FaultInjector(FaultPlan(id="p", seed=7, faults=(spec,)), run_id="r", enabled=True)


def of(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def test_async_node_calling_ainvoke_is_faulted_once_with_a_delivered_receipt() -> None:
    graph = custom_node_agent(use_async=True)
    inj = injector()
    with capture(run_id="r") as handler, tool_faults(graph, inj):
        asyncio.run(graph.ainvoke({"messages": [HumanMessage("go")]}))
    events = handler.events
    assert [f.mode for f in of(events, FaultInjected)] == ["error_5xx"]
    assert analyse_trace(events).faults[0].delivered is True
    assert graph.hbeval_calls == ["add"]  # the faulted lookup never ran
    assert len(of(events, ToolStart)) == len(of(events, ToolEnd)) == 2


def _send_graph(calls: list[str]) -> Any:
    """The model's tool calls fan out with ``Send``; each branch runs one tool in a worker node."""
    model = ScriptedChatModel(responses=list(PARALLEL_SCRIPT))
    tools = {t.name: t for t in make_tools(calls)}

    def think(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def fan_out(state: Any) -> Any:
        calls_ = getattr(state["messages"][-1], "tool_calls", None)
        return [Send("worker", c) for c in calls_] if calls_ else END

    def worker(call: Any) -> dict[str, Any]:
        result = tools[call["name"]].invoke(call["args"])
        return {"messages": [ToolMessage(content=str(result), tool_call_id=call["id"])]}

    g = StateGraph(MessagesState)
    g.add_node("think", think)
    g.add_node("worker", worker)
    g.add_edge(START, "think")
    g.add_conditional_edges("think", fan_out, ["worker", END])
    g.add_edge("worker", "think")
    return g.compile()


def test_send_branches_meet_the_plan() -> None:
    calls: list[str] = []
    graph = _send_graph(calls)
    inj = injector(on_calls=(0, 1))
    with capture(run_id="r") as handler, tool_faults(graph, inj):
        graph.invoke({"messages": [HumanMessage("go")]})
    faults = of(handler.events, FaultInjected)
    assert sorted(f.tool for f in faults) == ["add", "lookup"]
    assert calls == []
    assert all(r.delivered is True for r in analyse_trace(handler.events).faults)


def test_a_subgraph_node_running_tools_is_faulted() -> None:
    calls: list[str] = []
    tools = {t.name: t for t in make_tools(calls)}

    def act(state: Any) -> dict[str, Any]:
        out = []
        for c in state["messages"][-1].tool_calls:
            result = tools[c["name"]].invoke(c["args"])
            out.append(ToolMessage(content=str(result), tool_call_id=c["id"]))
        return {"messages": out}

    inner = StateGraph(MessagesState)
    inner.add_node("act", act)
    inner.add_edge(START, "act")
    inner.add_edge("act", END)
    sub = inner.compile()

    model = ScriptedChatModel(responses=list(TWO_TOOL_SCRIPT))
    g = StateGraph(MessagesState)
    g.add_node("think", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", sub)
    g.add_edge(START, "think")
    g.add_conditional_edges(
        "think", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
    )
    g.add_edge("tools", "think")
    graph = g.compile()
    with capture(run_id="r") as handler, tool_faults(graph, injector("truncated")):
        graph.invoke({"messages": [HumanMessage("go")]})
    assert [f.mode for f in of(handler.events, FaultInjected)] == ["truncated"]
    assert analyse_trace(handler.events).faults[0].delivered is True
    assert calls == ["lookup", "add"]


def test_a_tool_call_input_gets_an_error_tool_message_back() -> None:
    calls: list[str] = []
    lookup = make_tools(calls)[0]
    call = {"name": "lookup", "args": {"query": "x"}, "id": "call_9", "type": "tool_call"}
    with capture(run_id="r") as handler, tool_faults(custom_node_agent(), injector()):
        out = lookup.invoke(call)
        plain = lookup.invoke({"query": "y"})
    assert isinstance(out, ToolMessage) and out.status == "error"
    assert out.tool_call_id == "call_9" and "503" in out.content
    assert plain == "found: y is shipped"  # the plan's one fault was spent
    assert [f.call_id for f in of(handler.events, FaultInjected)] == ["call_9"]


def test_without_an_injector_the_hook_only_delegates() -> None:
    calls: list[str] = []
    lookup = make_tools(calls)[0]
    graph = custom_node_agent()
    with capture(run_id="r") as handler, tool_faults(graph, None):
        assert lookup.invoke({"query": "z"}) == "found: z is shipped"
        graph.invoke({"messages": [HumanMessage("go")]})
    assert not of(handler.events, FaultInjected)
    assert len(of(handler.events, ToolStart)) == 3
    assert "_hooked" in BaseTool.run.__name__  # installed once, left in place: it costs nothing
