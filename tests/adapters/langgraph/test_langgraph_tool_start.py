"""A tool call that never returns still shows as started in a battery trial's trace.

Hand-built graphs (a ``StateGraph`` whose model node calls a ``BaseChatModel`` subclass of its
own) run through ``run_battery("langgraph", ...)`` under a user battery, so every tool call goes
through the fault injector: by LangGraph's ``ToolNode``, by a node of the graph's own calling
``tool.invoke(call)``, and by a node calling a ``faultable`` function. The tool hangs past the
runner's 0.5 s timeout: the cut trace holds the call's ``tool_start`` (its name, call id and
arguments) and no end. A call that returns keeps exactly the events it always had, in the order
the script implies, with a start stamped before the tool's body ran.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore
from hbeval_core.contract import SystemClock, Task
from hbeval_core.faults.boundary import faultable
from hbeval_core.faults.userbattery import parse_battery

SEED = 42
TASK = Task(id="stock", question="check stock", required=("done",))


class StockModel(BaseChatModel):
    """Asks for two stock checks, one per turn, then answers."""

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


class Shelf:
    """The stock tool's body: hangs until released when told to, and notes when it ran."""

    def __init__(self, hang: bool, escape: BaseException | None = None) -> None:
        self.hang = hang
        self.escape = escape
        self.release = threading.Event()
        self.ran: list[tuple[str, float, float]] = []  # (sku, entered, left), wall clock

    def look(self, sku: str) -> str:
        entered = time.time()
        if self.escape is not None:
            raise self.escape
        if self.hang:
            self.release.wait(20)
        time.sleep(0.02)
        self.ran.append((sku, entered, time.time()))
        return f"{sku}: 5"


def graph_factory(style: str, shelf: Shelf) -> Callable[[], Any]:
    """A fresh graph per trial; ``style`` says how its tool node runs the tool."""

    @tool
    def stock(sku: str) -> str:
        """Stock level of a SKU."""
        return shelf.look(sku)

    @faultable(name="stock")
    def stock_fn(sku: str) -> str:
        return shelf.look(sku)

    def tool_node() -> Any:
        if style == "toolnode":
            return ToolNode([stock], handle_tool_errors=True)

        def own_tools(state: MessagesState) -> dict[str, Any]:
            out: list[Any] = []
            for call in state["messages"][-1].tool_calls:  # type: ignore[union-attr]
                if style == "invoke":
                    out.append(stock.invoke({**call, "type": "tool_call"}))
                else:
                    out.append(ToolMessage(content=stock_fn(**call["args"]), tool_call_id=call["id"]))  # fmt: skip
            return {"messages": out}

        return own_tools

    def factory() -> Any:
        model = StockModel()

        def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        return agent_and_tools(agent, tool_node())

    return factory


def agent_and_tools(agent: Any, tools: Any) -> Any:
    """The graph both test files build: the model node, then tools while it asks for them."""
    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def battery(*scenarios: dict[str, Any]) -> Any:
    return parse_battery(
        {"format": "hbeval-battery-file/1", "name": "shelf", "scenarios": list(scenarios)},
        seed=SEED,
    )


# A plan that faults a tool the agent never calls: every stock call meets the injector and
# passes it untouched.
ELSEWHERE = {"name": "elsewhere", "mode": "error_5xx", "tools": ["audit"]}


@pytest.fixture
def shelves() -> Iterator[list[Shelf]]:
    made: list[Shelf] = []
    yield made
    for shelf in made:
        shelf.release.set()


def run(style: str, shelf: Shelf, *scenarios: dict[str, Any], **kwargs: Any) -> tuple[Any, ...]:
    store = InMemoryStore()
    report = run_battery(
        "langgraph", graph_factory(style, shelf), [TASK], battery(*scenarios), trials=1,
        seed=SEED, store=store, run_id="shelf", timeout=0.5, max_infra_retries=0, **kwargs,
    ).to_dict()  # fmt: skip
    attempts = store.list_attempts("shelf")
    traces = [list(store.iter_events("shelf", a.trial_key, attempt=0)) for a in attempts]
    return report, attempts, traces


def _call_id(style: str, n: int) -> str:
    # A faultable function has no model-given id: the boundary numbers calls per tool.
    return f"stock#{n + 1}" if style == "faultable" else f"t{n}"


STYLES = ("toolnode", "invoke", "faultable")


@pytest.mark.parametrize("style", STYLES)
def test_a_tool_hanging_past_the_timeout_shows_as_started(style: str, shelves: list[Shelf]) -> None:
    shelf = Shelf(hang=True)
    shelves.append(shelf)
    report, attempts, traces = run(style, shelf, ELSEWHERE)
    assert [t["outcome"] for t in report["trials"]] == ["timeout"]
    assert attempts[0].outcome == "timeout" and attempts[0].error_type == "TrialTimeout"
    events = traces[0]
    kinds = [e.kind for e in events]
    starts = [e for e in events if e.kind == "tool_start"]
    assert len(starts) == 1, kinds
    start = starts[0]
    assert (start.tool, start.call_id, start.args) == ("stock", _call_id(style, 0), {"sku": "S0"})  # type: ignore[attr-defined]  # fmt: skip
    assert "synthetic" not in start.attrs
    # The model asked for it, the call began, then nothing until the cut.
    assert kinds.index("model_end") < kinds.index("tool_start")
    assert not any(e.kind in ("tool_end", "tool_error", "fault_injected") for e in events)
    assert kinds[-1] == "run_end" and events[-1].status == "timeout"  # type: ignore[attr-defined]
    assert shelf.ran == []  # the body is still waiting


@pytest.mark.parametrize("style", STYLES)
def test_a_tool_raising_an_exception_that_escapes_the_agent_shows_as_started(
    style: str, shelves: list[Shelf]
) -> None:
    shelf = Shelf(hang=False, escape=SystemExit(3))
    shelves.append(shelf)
    report, attempts, traces = run(style, shelf, ELSEWHERE)
    assert attempts[0].error_type == "SystemExit"
    assert [t["outcome"] for t in report["trials"]] == ["fail"]
    starts = [e for e in traces[0] if e.kind == "tool_start"]
    assert [(e.tool, e.call_id, e.args) for e in starts] == [("stock", _call_id(style, 0), {"sku": "S0"})]  # type: ignore[attr-defined]  # fmt: skip
    assert not any(e.kind in ("tool_end", "tool_error") for e in traces[0])
    # The run's end is recorded once: by the capture as the exit left the graph, and not
    # again by the runner, whose message stays the attempt's error.
    ends = [e for e in traces[0] if e.kind == "run_end"]
    assert len(ends) == 1 and ends[0].status == "error", [e.kind for e in traces[0]]  # type: ignore[attr-defined]
    assert "SystemExit(3)" in (attempts[0].error or "")


@pytest.mark.parametrize("style", ["toolnode", "invoke"])
def test_a_hanging_tool_whose_result_a_fault_would_spoil_shows_its_start(
    style: str, shelves: list[Shelf]
) -> None:
    shelf = Shelf(hang=True)
    shelves.append(shelf)
    garbled = {"name": "garbled", "mode": "malformed", "tools": ["stock"]}
    report, _, traces = run(style, shelf, garbled)
    assert [t["outcome"] for t in report["trials"]] == ["timeout"]
    kinds = [e.kind for e in traces[0]]
    # The receipt depends on the result the tool never gave: only the start can show.
    assert kinds.count("tool_start") == 1 and "fault_injected" not in kinds
    assert "tool_end" not in kinds and kinds[-1] == "run_end"


@pytest.mark.parametrize("style", STYLES)
def test_a_faulted_tool_that_hangs_shows_its_start_and_its_fault(
    style: str, shelves: list[Shelf]
) -> None:
    shelf = Shelf(hang=False)
    shelves.append(shelf)
    # A timeout fault that really waits (a real clock): the tool hangs 3 s, then fails.
    slow = {"name": "slow", "mode": "timeout", "tools": ["stock"], "params": {"after_ms": 3000}}
    report, _, traces = run(style, shelf, slow, clock=SystemClock())
    assert [t["outcome"] for t in report["trials"]] == ["timeout"]
    events = traces[0]
    kinds = [e.kind for e in events]
    at = kinds.index("tool_start")
    start, fault = events[at], events[at + 1]
    assert (start.tool, start.call_id, start.args) == ("stock", _call_id(style, 0), {"sku": "S0"})  # type: ignore[attr-defined]  # fmt: skip
    assert start.attrs.get("synthetic") is True  # the real tool will not run
    assert fault.kind == "fault_injected"
    assert (fault.call_id, fault.tool, fault.mode) == (start.call_id, "stock", "timeout")  # type: ignore[attr-defined]  # fmt: skip
    assert fault.parent_id == start.parent_id
    assert not any(e.kind in ("tool_end", "tool_error") for e in events)
    assert kinds[-1] == "run_end" and events[-1].status == "timeout"  # type: ignore[attr-defined]


def _expected_kinds(faulted: dict[int, bool]) -> list[str]:
    """The trace the script implies: three model turns around two tool turns."""
    kinds = ["run_start", "span_start"]
    for turn in range(3):
        kinds += ["span_start", "model_start", "model_end", "span_end"]
        if turn < 2:
            kinds += ["span_start", "tool_start"]
            kinds += ["fault_injected"] if faulted[turn] else []
            kinds += ["tool_end", "span_end"]
    return [*kinds, "span_end", "run_end"]


OUTAGE = {"name": "outage", "mode": "error_5xx", "tools": ["stock"], "when": {"attempts": [0]}}
GARBLED = {"name": "garbled", "mode": "malformed", "tools": ["stock"], "when": {"attempts": [1]}}


@pytest.mark.parametrize("style", ["toolnode", "invoke"])
def test_calls_that_return_keep_their_events_and_start_before_the_tool_runs(
    style: str, shelves: list[Shelf]
) -> None:
    shelf = Shelf(hang=False)
    shelves.append(shelf)
    report, _, traces = run(style, shelf, OUTAGE, GARBLED)
    assert [t["outcome"] for t in report["trials"]] == ["pass", "pass"]
    outage, garbled = traces
    assert [e.kind for e in outage] == _expected_kinds({0: True, 1: False})
    assert [e.kind for e in garbled] == _expected_kinds({0: False, 1: True})
    for events in traces:
        assert [e.seq for e in events] == list(range(len(events)))

    def calls(events: list[Any]) -> list[tuple[Any, ...]]:
        return [
            (e.kind, e.call_id, e.tool, getattr(e, "args", None), getattr(e, "status", None),
             getattr(e, "result", None), getattr(e, "mode", None), e.attrs.get("synthetic"))
            for e in events
            if e.kind in ("tool_start", "fault_injected", "tool_end")
        ]  # fmt: skip

    error = "HTTPError: 503 Service Unavailable returned by tool 'stock'"
    spoiled = '{"unexpected_field": true, "reason": "schema_mismatch"}'
    assert calls(outage) == [
        ("tool_start", "t0", "stock", {"sku": "S0"}, None, None, None, True),
        ("fault_injected", "t0", "stock", None, None, None, "error_5xx", None),
        ("tool_end", "t0", "stock", None, "error", error, None, True),
        ("tool_start", "t1", "stock", {"sku": "S1"}, None, None, None, None),
        ("tool_end", "t1", "stock", None, "ok", "S1: 5", None, None),
    ]
    assert calls(garbled) == [
        ("tool_start", "t0", "stock", {"sku": "S0"}, None, None, None, None),
        ("tool_end", "t0", "stock", None, "ok", "S0: 5", None, None),
        ("tool_start", "t1", "stock", {"sku": "S1"}, None, None, None, None),
        ("fault_injected", "t1", "stock", None, None, None, "malformed", None),
        ("tool_end", "t1", "stock", None, "ok", spoiled, None, None),
    ]
    # Every tool event sits under its tool node's span, and each end reports a latency that
    # covers the body it waited for.
    for events in traces:
        tool_spans = {e.span_id for e in events if e.kind == "span_start" and e.name == "tools"}  # type: ignore[attr-defined]  # fmt: skip
        for e in events:
            if e.kind in ("tool_start", "fault_injected", "tool_end"):
                assert e.parent_id in tool_spans
            if e.kind == "tool_end" and e.status == "ok":  # type: ignore[attr-defined]
                assert e.latency_ms >= 20.0  # type: ignore[attr-defined]
    # The start is stamped before the body ran, the end after it left (the bodies that ran:
    # outage's t1, then garbled's t0 and t1).
    ran = [(outage, "t1"), (garbled, "t0"), (garbled, "t1")]
    for (events, call_id), (sku, entered, left) in zip(ran, shelf.ran, strict=True):
        start = next(e for e in events if e.kind == "tool_start" and e.call_id == call_id)  # type: ignore[attr-defined]  # fmt: skip
        end = next(e for e in events if e.kind == "tool_end" and e.call_id == call_id)  # type: ignore[attr-defined]  # fmt: skip
        assert sku == f"S{call_id[1]}"
        assert start.ts <= entered and end.ts >= left
