"""Graphs LangGraph runs only through its async API: a node written ``async def`` that awaits
``tool.ainvoke`` (``graph.invoke`` refuses such a graph). Here the model's calls fan out with
``Send`` to that node, as users write map-reduce agents. hbeval runs the graph with ``astream``,
and faults still reach every tool call.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send, interrupt

from hbeval.scoring import analyse_trace
from hbeval_core.contract import Task, outcome_of
from hbeval_core.events import FaultInjected, RunStart, ToolStart
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_core.live.derive import derive_steps
from hbeval_langgraph import LangGraphAdapter

RAN: list[str] = []


@tool
async def stock(sku: str) -> str:
    """Units in stock for a SKU."""
    RAN.append("stock")
    return f"{sku}: 14 units"


@tool
async def price(sku: str) -> str:
    """Unit price for a SKU."""
    RAN.append("price")
    return f"{sku}: 3.50 EUR"


class Planner(FakeMessagesListChatModel):
    """Asks for both figures in one reply, then reports what came back."""

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            reply = AIMessage(
                "I need the stock and the price of X-1.",
                tool_calls=[
                    {"name": "stock", "args": {"sku": "X-1"}, "id": "c1", "type": "tool_call"},
                    {"name": "price", "args": {"sku": "X-1"}, "id": "c2", "type": "tool_call"},
                ],
            )
        else:
            reply = AIMessage("; ".join(sorted(str(m.content) for m in results)))
        return ChatResult(generations=[ChatGeneration(message=reply)])


class State(TypedDict):
    messages: Annotated[list[Any], operator.add]


def make_graph(checkpointer: Any = None, *, approve: bool = False) -> Any:
    model = Planner(responses=[AIMessage("unused")])
    tools = {"stock": stock, "price": price}

    def plan(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def fan_out(state: State) -> Any:
        last = state["messages"][-1]
        if not getattr(last, "tool_calls", None):
            return END
        if approve:
            interrupt({"run": [c["name"] for c in last.tool_calls]})
        return [Send("work", c) for c in last.tool_calls]

    async def work(call: dict[str, Any]) -> dict[str, Any]:
        try:
            out = await tools[call["name"]].ainvoke(call["args"])
        except Exception as exc:
            return {"messages": [ToolMessage(f"error: {exc}", tool_call_id=call["id"])]}
        return {"messages": [ToolMessage(str(out), tool_call_id=call["id"])]}

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["work", END])
    g.add_edge("work", "plan")
    return g.compile(checkpointer=checkpointer)


def run(target: Any, task: Task, injector: FaultInjector | None = None) -> Any:
    RAN.clear()
    adapter = LangGraphAdapter()
    adapter.fault_hook(injector)
    try:
        return adapter.run_trial(target, task, None, None)
    finally:
        adapter.fault_hook(None)


TASK = Task(id="x1", question="How many X-1 do we have, and at what price?")


def test_the_graph_really_is_async_only() -> None:
    from langchain_core.messages import HumanMessage

    with pytest.raises(TypeError, match="No synchronous function"):
        make_graph().invoke({"messages": [HumanMessage("q")]})


def test_an_async_only_graph_runs_as_one_trial_with_every_call_recorded() -> None:
    result = run(make_graph, TASK)
    assert result.status == "ok", result.error
    assert sorted(RAN) == ["price", "stock"]
    assert outcome_of(result).final_text == "X-1: 14 units; X-1: 3.50 EUR"
    assert len([e for e in result.events if isinstance(e, RunStart)]) == 1
    assert sorted(e.tool for e in result.events if isinstance(e, ToolStart)) == ["price", "stock"]
    steps = derive_steps(result.events)
    assert sorted(s.tool for s in steps) == ["price", "stock"]
    assert all(s.traceable for s in steps)  # linked to the planner's reply


def test_a_fault_reaches_an_awaited_tool_in_a_sent_branch() -> None:
    spec = FaultSpec(id="e", target="price", mode="error_5xx", on_calls=(0,))
    injector = FaultInjector(
        FaultPlan(id="async/error", seed=1, faults=(spec,)), run_id="x1", enabled=True
    )
    result = run(make_graph, TASK, injector)
    assert result.status == "ok", result.error
    assert RAN == ["stock"]  # the faulted price call never ran
    (fault,) = [e for e in result.events if isinstance(e, FaultInjected)]
    assert fault.tool == "price"
    (record,) = analyse_trace(result.events).faults
    assert record.delivered is True, record.receipt
    assert "503" in (outcome_of(result).final_text or "")


def test_an_async_only_graph_that_pauses_resumes_through_the_async_api() -> None:
    task = Task(id="x1", question="Stock and price of X-1?", resume=("go",))
    result = run(lambda checkpointer=None: make_graph(checkpointer, approve=True), task)
    assert result.status == "ok", result.error
    assert sorted(RAN) == ["price", "stock"]


def test_a_trial_started_inside_a_running_event_loop_still_runs() -> None:
    async def notebook_cell() -> Any:
        return run(make_graph, TASK)

    result = asyncio.run(notebook_cell())
    assert result.status == "ok", result.error
    assert sorted(RAN) == ["price", "stock"]
