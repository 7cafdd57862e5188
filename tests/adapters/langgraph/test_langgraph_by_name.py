"""A hand-built graph run through ``run_battery("langgraph", ...)``, one trial cut mid-graph.

The graph is what a user writes without hbeval in mind: a ``StateGraph`` whose model node calls
a ``BaseChatModel`` subclass of its own, beside LangGraph's ``ToolNode``. One tool call hangs
past the timeout: its trial ends ``timeout`` with the events before the cut, and the trials
after it run on.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore
from hbeval_core.contract import Task
from hbeval_core.faults import Battery

release = threading.Event()
calls = {"n": 0}


class StockModel(BaseChatModel):
    """Asks for two stock checks, then answers."""

    @property
    def _llm_type(self) -> str:
        return "stock-script"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:  # fmt: skip
        n = sum(1 for m in messages if m.type == "tool")
        if n < 2:
            msg = AIMessage(
                content=f"step {n}",
                tool_calls=[{"name": "stock", "args": {"sku": f"S{n}"}, "id": f"t{n}"}],
            )
        else:
            msg = AIMessage(content="stock checked: done")
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def stock(sku: str) -> str:
    """Stock level of a SKU."""
    calls["n"] += 1
    if calls["n"] == 3:  # the second trial's first call hangs
        release.wait(10)
    return f"{sku}: 5"


def factory() -> Any:
    model = StockModel()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([stock], handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def test_a_named_adapter_runs_a_hand_built_graph_and_a_cut_trial_keeps_its_trace() -> None:
    store = InMemoryStore()
    task = Task(id="stock", question="check stock", required=("done",))
    try:
        report = run_battery(
            "langgraph", factory, [task], Battery.hbeval(n_scenarios=6, seed=42), trials=1,
            store=store, run_id="named", timeout=0.5, max_infra_retries=0,
        ).to_dict()  # fmt: skip
    finally:
        release.set()
    outcomes = [t["outcome"] for t in report["trials"]]
    assert outcomes[1] == "timeout" and outcomes.count("timeout") == 1
    assert "infra_error" not in outcomes and len(outcomes) == 6
    cut = [a for a in store.list_attempts("named") if a.outcome == "timeout"]
    assert len(cut) == 1 and cut[0].error_type == "TrialTimeout"
    events = list(store.iter_events("named", cut[0].trial_key, attempt=0))
    kinds = [getattr(e, "kind", None) for e in events]
    # The trace up to the cut: the run began, the model asked for the tool; nothing after.
    assert kinds[0] == "run_start" and "model_end" in kinds and "tool_end" not in kinds
    assert kinds[-1] == "run_end" and events[-1].status == "timeout"  # type: ignore[attr-defined]
    # The trials after the cut ran the graph to its answer.
    assert all(t["usage"]["tool_calls"] == 2 for t in report["trials"][2:])
