"""Scripted LangGraph agents shared by the LangGraph tests (no tests here).

Every agent is built with ``langchain.agents.create_agent`` on a fake chat model whose
``bind_tools`` returns itself (the stock fake raises ``NotImplementedError``). Tools record their
real invocations in ``graph.hbeval_calls`` so tests can tell a skipped tool from one that ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool

from hbeval_langgraph.testing import ScriptedChatModel, tool_call

call = tool_call


TWO_TOOL_SCRIPT: list[BaseMessage] = [
    AIMessage(
        "I'll look up order A1 first.",
        tool_calls=[call("lookup", {"query": "order A1"}, "call_lookup_1")],
    ),
    AIMessage("Now I'll add 2 and 3.", tool_calls=[call("add", {"a": 2, "b": 3}, "call_add_1")]),
    AIMessage("done"),
]

PARALLEL_SCRIPT: list[BaseMessage] = [
    AIMessage(
        "I'll look up order A1 and add 2 and 3 at once.",
        tool_calls=[
            call("lookup", {"query": "order A1"}, "call_lookup_1"),
            call("add", {"a": 2, "b": 3}, "call_add_1"),
        ],
    ),
    AIMessage("done"),
]


def make_tools(calls: list[str]) -> list[BaseTool]:
    """``lookup`` and ``add``, recording each real invocation in ``calls``."""

    def lookup(query: str) -> str:
        """Look something up."""
        calls.append("lookup")
        return f"found: {query} is shipped"

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        calls.append("add")
        return a + b

    return [StructuredTool.from_function(lookup), StructuredTool.from_function(add)]


def scripted_agent(script: list[BaseMessage] | None = None, **kwargs: Any) -> Any:
    """A create_agent graph on a scripted model; ``graph.hbeval_calls`` lists real tool runs."""
    calls: list[str] = []
    model = ScriptedChatModel(responses=list(script or TWO_TOOL_SCRIPT))
    graph = create_agent(model, make_tools(calls), **kwargs)
    graph.hbeval_calls = calls
    return graph


def inputs(question: str = "Look up order A1, then add 2 and 3.") -> dict[str, Any]:
    return {"messages": [HumanMessage(question)]}


def custom_node_agent(script: list[BaseMessage] | None = None, *, use_async: bool = False) -> Any:
    """A hand-built ``StateGraph`` whose own node runs the tools: ``tool.invoke(args)``, no ToolNode.

    The node passes the model's bare arguments (not the tool call), so LangChain gives each tool
    run its own run id and no tool-call id, as agents written by hand usually do. With
    ``use_async`` the node is a coroutine calling ``await tool.ainvoke(args)``.
    """
    model = ScriptedChatModel(responses=list(script or TWO_TOOL_SCRIPT))
    return hand_built_graph(lambda tools: model, use_async=use_async)


def hand_built_graph(model_for: Callable[[list[Any]], Any], *, use_async: bool = False) -> Any:
    """The graph of :func:`custom_node_agent` on the model ``model_for(tools)`` returns."""
    from langchain_core.messages import ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    calls: list[str] = []
    tools = {t.name: t for t in make_tools(calls)}
    model = model_for(list(tools.values()))

    def think(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def act(state: Any) -> dict[str, Any]:
        out = []
        for c in state["messages"][-1].tool_calls:
            result = tools[c["name"]].invoke(c["args"])
            out.append(ToolMessage(content=str(result), tool_call_id=c["id"], name=c["name"]))
        return {"messages": out}

    async def aact(state: Any) -> dict[str, Any]:
        out = []
        for c in state["messages"][-1].tool_calls:
            result = await tools[c["name"]].ainvoke(c["args"])
            out.append(ToolMessage(content=str(result), tool_call_id=c["id"], name=c["name"]))
        return {"messages": out}

    def route(state: Any) -> str:
        return "act" if getattr(state["messages"][-1], "tool_calls", None) else END

    builder = StateGraph(MessagesState)
    builder.add_node("think", think)
    builder.add_node("act", aact if use_async else act)
    builder.add_edge(START, "think")
    builder.add_conditional_edges("think", route, ["act", END])
    builder.add_edge("act", "think")
    graph = builder.compile()
    graph.hbeval_calls = calls
    return graph


def subgraph_agent() -> Any:
    """The standard ``create_agent`` graph as one node of an outer graph."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    inner = scripted_agent()
    outer = StateGraph(MessagesState)
    outer.add_node("desk", inner)
    outer.add_edge(START, "desk")
    outer.add_edge("desk", END)
    graph = outer.compile()
    graph.hbeval_calls = inner.hbeval_calls
    return graph


def pausing_agent() -> Any:
    """The standard script, with a person approving each tool call through ``interrupt()``.

    Compiled with its own ``InMemorySaver``; a trial resumes it with ``("approve", "approve")``.
    """
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.types import Command, interrupt

    calls: list[str] = []
    model = ScriptedChatModel(responses=list(TWO_TOOL_SCRIPT))

    def think(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: Any) -> Command:  # type: ignore[type-arg]
        interrupt({"approve": [c["name"] for c in state["messages"][-1].tool_calls]})
        return Command(goto="tools")

    builder = StateGraph(MessagesState)
    builder.add_node("think", think)
    builder.add_node("approve", approve)
    builder.add_node("tools", ToolNode(make_tools(calls)))
    builder.add_edge(START, "think")
    builder.add_conditional_edges(
        "think",
        lambda s: "approve" if getattr(s["messages"][-1], "tool_calls", None) else END,
        ["approve", END],
    )
    builder.add_edge("tools", "think")
    graph = builder.compile(checkpointer=InMemorySaver())
    graph.hbeval_calls = calls
    return graph
