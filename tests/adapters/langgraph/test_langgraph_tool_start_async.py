"""The async tool boundary records a call's start before the call, as the sync one does.

A graph whose nodes are written ``async def`` is driven with ``astream``, so each way of calling
a tool takes its async path through the injector (``arun_call``): LangGraph's ``ToolNode`` (its
async wrapper), a node of the graph's own awaiting ``tool.ainvoke(call)`` (the tool hook's
async twin), and a node awaiting an async ``faultable`` function. The tool's coroutine hangs past
the runner's 0.5 s timeout: the cut trace holds its ``tool_start`` and no end.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langgraph.graph import MessagesState
from langgraph.prebuilt import ToolNode

from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore
from hbeval_core.contract import SystemClock
from hbeval_core.faults.boundary import faultable

from .test_langgraph_tool_start import (
    ELSEWHERE,
    SEED,
    TASK,
    StockModel,
    agent_and_tools,
    battery,
)


class AsyncShelf:
    """The stock tool's coroutine body: hangs until released when told to."""

    def __init__(self, hang: bool) -> None:
        self.hang = hang
        self.release = threading.Event()
        self.ran: list[str] = []

    async def look(self, sku: str) -> str:
        if self.hang:
            for _ in range(2000):  # at most 20 s, then the abandoned trial thread ends
                if self.release.is_set():
                    break
                await asyncio.sleep(0.01)
        self.ran.append(sku)
        return f"{sku}: 5"


def async_graph_factory(style: str, shelf: AsyncShelf) -> Callable[[], Any]:
    @tool
    async def stock(sku: str) -> str:
        """Stock level of a SKU."""
        return await shelf.look(sku)

    @faultable(name="stock")
    async def stock_fn(sku: str) -> str:
        return await shelf.look(sku)

    def tool_node() -> Any:
        if style == "toolnode":
            return ToolNode([stock], handle_tool_errors=True)

        async def own_tools(state: MessagesState) -> dict[str, Any]:
            out: list[Any] = []
            for call in state["messages"][-1].tool_calls:  # type: ignore[union-attr]
                if style == "ainvoke":
                    out.append(await stock.ainvoke({**call, "type": "tool_call"}))
                else:
                    text = await stock_fn(**call["args"])
                    out.append(ToolMessage(content=text, tool_call_id=call["id"]))
            return {"messages": out}

        return own_tools

    def factory() -> Any:
        model = StockModel()

        async def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        return agent_and_tools(agent, tool_node())

    return factory


@pytest.fixture
def shelves() -> Iterator[list[AsyncShelf]]:
    made: list[AsyncShelf] = []
    yield made
    for shelf in made:
        shelf.release.set()


def run(style: str, shelf: AsyncShelf, *scenarios: dict[str, Any], **kwargs: Any) -> Any:
    store = InMemoryStore()
    report = run_battery(
        "langgraph", async_graph_factory(style, shelf), [TASK], battery(*scenarios), trials=1,
        seed=SEED, store=store, run_id="shelf", timeout=0.5, max_infra_retries=0, **kwargs,
    ).to_dict()  # fmt: skip
    (attempt,) = store.list_attempts("shelf")
    return report, list(store.iter_events("shelf", attempt.trial_key, attempt=0))


def _call_id(style: str) -> str:
    return "stock#1" if style == "faultable" else "t0"


STYLES = ("toolnode", "ainvoke", "faultable")


@pytest.mark.parametrize("style", STYLES)
def test_an_async_tool_hanging_past_the_timeout_shows_as_started(
    style: str, shelves: list[AsyncShelf]
) -> None:
    shelf = AsyncShelf(hang=True)
    shelves.append(shelf)
    report, events = run(style, shelf, ELSEWHERE)
    assert [t["outcome"] for t in report["trials"]] == ["timeout"]
    kinds = [e.kind for e in events]
    starts = [e for e in events if e.kind == "tool_start"]
    assert [(e.tool, e.call_id, e.args) for e in starts] == [("stock", _call_id(style), {"sku": "S0"})], kinds  # type: ignore[attr-defined]  # fmt: skip
    assert "synthetic" not in starts[0].attrs
    assert kinds.index("model_end") < kinds.index("tool_start")
    assert not any(e.kind in ("tool_end", "tool_error", "fault_injected") for e in events)
    assert kinds[-1] == "run_end" and events[-1].status == "timeout"  # type: ignore[attr-defined]
    assert shelf.ran == []


@pytest.mark.parametrize("style", STYLES)
def test_an_async_faulted_tool_that_hangs_shows_its_start_and_its_fault(
    style: str, shelves: list[AsyncShelf]
) -> None:
    shelf = AsyncShelf(hang=False)
    shelves.append(shelf)
    slow = {"name": "slow", "mode": "timeout", "tools": ["stock"], "params": {"after_ms": 3000}}
    report, events = run(style, shelf, slow, clock=SystemClock())
    assert [t["outcome"] for t in report["trials"]] == ["timeout"]
    kinds = [e.kind for e in events]
    at = kinds.index("tool_start")
    start, fault = events[at], events[at + 1]
    assert (start.tool, start.call_id, start.args) == ("stock", _call_id(style), {"sku": "S0"})  # type: ignore[attr-defined]  # fmt: skip
    assert start.attrs.get("synthetic") is True
    assert fault.kind == "fault_injected" and fault.call_id == start.call_id  # type: ignore[attr-defined]
    assert not any(e.kind in ("tool_end", "tool_error") for e in events)
    assert kinds[-1] == "run_end"


@pytest.mark.parametrize("style", STYLES)
def test_async_calls_that_return_keep_their_start_before_their_end(style: str) -> None:
    shelf = AsyncShelf(hang=False)
    report, events = run(style, shelf, ELSEWHERE)
    assert [t["outcome"] for t in report["trials"]] == ["pass"]
    assert shelf.ran == ["S0", "S1"]
    calls = [(e.kind, e.call_id) for e in events if e.kind in ("tool_start", "tool_end")]  # type: ignore[attr-defined]
    ids = ["stock#1", "stock#2"] if style == "faultable" else ["t0", "t1"]
    assert calls == [("tool_start", ids[0]), ("tool_end", ids[0]), ("tool_start", ids[1]), ("tool_end", ids[1])]  # fmt: skip
