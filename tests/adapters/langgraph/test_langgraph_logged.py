"""A handler nothing watches live logs its callbacks and records them on first read.

What it records must be exactly what recording each callback as it came records: the same
events in the same order, the same metrics and monitor signals, timestamps and latencies as of
when each callback came, and what the caller changes after the run does not leak in. Each test
runs the same scripted graph under a logging handler (``HBEvalCallbackHandler()``) and a live
one (given a ``Monitor``, so it records at once) and compares.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool, ToolException

from hbeval_core.events import Directive, RunEnd, RunStart, ToolEnd, dump_event
from hbeval_core.live.monitor import Monitor
from hbeval_langgraph import HBEvalCallbackHandler
from tests.adapters.langgraph.test_langgraph_fixtures import (
    PARALLEL_SCRIPT,
    call,
    custom_node_agent,
    inputs,
    scripted_agent,
    subgraph_agent,
)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CLOCKED = {"ts", "latency_ms", "hbeval.latency_ms"}


def _shape(events: list[Any]) -> list[Any]:
    """Events as data, run ids numbered by first appearance, clock readings dropped."""
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"id{len(names)}")

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _CLOCKED}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(json.loads(_UUID.sub(rename, dump_event(e)))) for e in events]


def _both(run: Any) -> tuple[HBEvalCallbackHandler, HBEvalCallbackHandler]:
    logged, live = HBEvalCallbackHandler(), HBEvalCallbackHandler(monitor=Monitor())
    run(logged)
    run(live)
    return logged, live


def _unordered(events: list[Any]) -> list[str]:
    """Events as sorted text, every run id alike and no ``seq``: parallel tool calls run on
    threads, so two runs of the same graph may interleave their callbacks differently."""
    out = []
    for e in _shape(events):
        e.pop("seq")
        out.append(re.sub(r'"id\d+"', '"id"', json.dumps(e, sort_keys=True)))
    return sorted(out)


def _same(logged: HBEvalCallbackHandler, live: HBEvalCallbackHandler, ordered: bool = True) -> None:
    if ordered:
        assert _shape(logged.events) == _shape(live.events)
    else:
        assert _unordered(logged.events) == _unordered(live.events)
    for monitor in (logged.monitor, live.monitor):
        assert monitor.step_count > 0
    assert logged.monitor.metrics == live.monitor.metrics
    assert logged.monitor.undefined == live.monitor.undefined
    assert logged.monitor.step_count == live.monitor.step_count
    assert logged.errors == live.errors == []


def _failing_tools() -> list[Any]:
    def lookup(query: str) -> str:
        """Look something up."""
        if query.startswith("bad"):
            raise ToolException(f"backend down for {query}")
        return f"found {query}"

    return [StructuredTool.from_function(lookup, handle_tool_error=True)]


# Three calls that work, then calls that fail: PEI falls below the re-plan floor.
FAILING_SCRIPT = [
    AIMessage(f"Look up {q}.", tool_calls=[call("lookup", {"query": q}, f"c{i}")])
    for i, q in enumerate(["A1", "A2", "A3", "bad1", "bad2", "bad3", "bad4", "bad5"])
] + [AIMessage("I could not find everything.")]


@pytest.mark.parametrize(
    ("make", "ordered"),
    [
        pytest.param(scripted_agent, True, id="two-tools"),
        pytest.param(lambda: scripted_agent(PARALLEL_SCRIPT), False, id="parallel-tools"),
        pytest.param(subgraph_agent, True, id="nested-graph"),
        pytest.param(custom_node_agent, True, id="custom-tool-node"),
    ],
)
def test_logged_records_what_live_records(make: Any, ordered: bool) -> None:
    def run(handler: HBEvalCallbackHandler) -> None:
        graph = make()
        for question in ("Look up order A1, then add 2 and 3.", "And again."):
            graph.invoke(inputs(question), config={"callbacks": [handler]})

    _same(*_both(run), ordered=ordered)


def test_monitor_signals_are_recorded_in_place() -> None:
    """Failing tool calls make the stock monitor re-plan: the directive events sit where the
    live handler put them, stamped when their step happened, not when the log was read."""
    from langchain.agents import create_agent

    from hbeval_langgraph.testing import ScriptedChatModel

    spans: dict[str, tuple[float, float]] = {}

    def run(handler: HBEvalCallbackHandler) -> None:
        graph = create_agent(ScriptedChatModel(responses=list(FAILING_SCRIPT)), _failing_tools())
        t0 = time.time()
        graph.invoke(inputs("Find A1."), config={"callbacks": [handler]})
        spans[str(id(handler))] = (t0, time.time())

    logged, live = _both(run)
    time.sleep(0.05)
    _same(logged, live)
    directives = [e for e in logged.events if isinstance(e, Directive)]
    assert directives, "failing calls after working ones should make the monitor re-plan"
    t0, t1 = spans[str(id(logged))]
    assert all(t0 <= e.ts <= t1 for e in logged.events)


def test_async_runs_are_recorded_alike() -> None:
    def run(handler: HBEvalCallbackHandler) -> None:
        graph = scripted_agent(PARALLEL_SCRIPT)
        asyncio.run(graph.ainvoke(inputs(), config={"callbacks": [handler]}))

    _same(*_both(run), ordered=False)


def test_times_are_when_each_callback_came() -> None:
    def slow(query: str) -> str:
        """Take a while."""
        time.sleep(0.03)
        return "ok"

    from langchain.agents import create_agent

    from hbeval_langgraph.testing import ScriptedChatModel

    script = [AIMessage("", tool_calls=[call("slow", {"query": "x"}, "c1")]), AIMessage("done")]
    graph = create_agent(ScriptedChatModel(responses=script), [StructuredTool.from_function(slow)])
    handler = HBEvalCallbackHandler()
    t0 = time.time()
    graph.invoke(inputs(), config={"callbacks": [handler]})
    t1 = time.time()
    time.sleep(0.1)  # the log is recorded after this
    assert handler.events
    assert all(t0 <= e.ts <= t1 for e in handler.events)
    end = next(e for e in handler.events if isinstance(e, ToolEnd))
    assert 30.0 <= end.latency_ms <= (t1 - t0) * 1000.0


def test_what_the_caller_changes_after_the_run_does_not_leak_in() -> None:
    handler = HBEvalCallbackHandler()
    question = inputs("Where is order A1?")
    out = scripted_agent().invoke(question, config={"callbacks": [handler]})
    question["messages"].append(HumanMessage("something else entirely"))
    out["messages"].append(AIMessage("an answer nobody gave"))
    start = next(e for e in handler.events if isinstance(e, RunStart))
    end = next(e for e in handler.events if isinstance(e, RunEnd))
    assert start.input == "Where is order A1?"
    assert end.output == "done"


def test_a_monitor_taken_before_the_run_sees_every_step() -> None:
    """Whoever holds the monitor may read it at any time: taking it stops logging."""
    handler, live = HBEvalCallbackHandler(), HBEvalCallbackHandler(monitor=Monitor())
    monitor = handler.monitor
    scripted_agent().invoke(inputs(), config={"callbacks": [handler]})
    scripted_agent().invoke(inputs(), config={"callbacks": [live]})
    assert monitor.metrics == live.monitor.metrics
    assert monitor.step_count == live.monitor.step_count == 2


def test_an_event_window_is_kept_alike() -> None:
    """``max_events`` trims at each run's end, as the log is recorded: the same window."""

    def run(handler: HBEvalCallbackHandler) -> None:
        graph = scripted_agent()
        for _ in range(3):
            graph.invoke(inputs(), config={"callbacks": [handler]})

    logged = HBEvalCallbackHandler(max_events=25)
    live = HBEvalCallbackHandler(max_events=25, monitor=Monitor())
    run(logged)
    run(live)
    assert len(live.events) == 25
    _same(logged, live)


def test_a_long_log_is_recorded_as_it_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``LOG_LIMIT`` callbacks the handler records its log at once (bounded memory)."""
    from hbeval_langgraph import _logged

    monkeypatch.setattr(_logged, "LOG_LIMIT", 3)
    handler = HBEvalCallbackHandler()

    def run(h: HBEvalCallbackHandler) -> None:
        scripted_agent().invoke(inputs(), config={"callbacks": [h]})

    run(handler)
    assert len(handler._log or ()) <= 4  # recorded as it went, not all at the first read
    live = HBEvalCallbackHandler(monitor=Monitor())
    run(live)
    _same(handler, live)


def test_a_sink_set_after_the_handler_was_made_gets_each_event_as_it_comes() -> None:
    handler = HBEvalCallbackHandler()
    scripted_agent().invoke(inputs(), config={"callbacks": [handler]})  # logged
    seen: list[Any] = []
    handler.on_event = seen.append  # from now on each event goes to the sink as it comes
    assert handler.on_event == seen.append
    scripted_agent().invoke(inputs(), config={"callbacks": [handler]})
    live = HBEvalCallbackHandler(monitor=Monitor())
    scripted_agent().invoke(inputs(), config={"callbacks": [live]})
    first = len(live.events)
    scripted_agent().invoke(inputs(), config={"callbacks": [live]})
    # Every event of the second run reached the sink before anything was read.
    assert _shape(seen) == _shape(live.events[first:])
    _same(handler, live)
