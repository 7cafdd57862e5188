"""HBEvalCallbackHandler: what a LangGraph run looks like as hbeval events."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Annotated, Any, ClassVar, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from hbeval_core.events import (
    Directive,
    ModelEnd,
    ModelStart,
    RunEnd,
    SpanEnd,
    SpanStart,
    ToolEnd,
    ToolError,
    ToolStart,
    dump_event,
    parse_event,
)
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_core.live.monitor import Monitor
from hbeval_langgraph import (
    HBEvalCallbackHandler,
    capture,
    current_handler,
    instrument,
    is_instrumented,
    tool_faults,
    uninstrument,
)
from tests.adapters.langgraph.test_langgraph_fixtures import (
    PARALLEL_SCRIPT,
    ScriptedChatModel,
    call,
    inputs,
    scripted_agent,
)


def kinds(events: list[Any]) -> Counter[str]:
    return Counter(e.kind for e in events)


def check_well_formed(events: list[Any]) -> None:
    for e in events:
        line = dump_event(e)
        assert dump_event(parse_event(line)) == line


class TestTwoToolRun:
    def test_exact_counts(self) -> None:
        handler = HBEvalCallbackHandler(strict=True)
        scripted_agent().invoke(inputs(), config={"callbacks": [handler]})
        assert kinds(handler.events) == Counter(
            run_start=1,
            run_end=1,
            span_start=6,  # graph root + model x3 + tools x2
            span_end=6,
            model_start=3,
            model_end=3,
            tool_start=2,
            tool_end=2,
        )
        check_well_formed(handler.events)

    def test_parent_ids_follow_the_run_tree(self) -> None:
        handler = HBEvalCallbackHandler(strict=True)
        scripted_agent().invoke(inputs(), config={"callbacks": [handler]})
        spans = {e.span_id: e for e in handler.events if isinstance(e, SpanStart)}
        root = next(s for s in spans.values() if s.scope == "graph")
        assert root.parent_id is None
        for s in spans.values():
            if s.scope == "node":
                assert s.parent_id == root.span_id
        for e in handler.events:
            if isinstance(e, (ModelStart, ModelEnd)):
                assert spans[e.parent_id].name == "model"
            if isinstance(e, (ToolStart, ToolEnd)):
                assert spans[e.parent_id].name == "tools"
        # Keyed on full LangChain ids: every span id is a whole UUID.
        assert all(len(span_id) == 36 for span_id in spans)

    def test_model_and_tool_payloads(self) -> None:
        handler = HBEvalCallbackHandler(strict=True)
        handler.events.clear()
        scripted_agent().invoke(inputs(), config={"callbacks": [handler]})
        starts = [e for e in handler.events if isinstance(e, ModelStart)]
        ends = [e for e in handler.events if isinstance(e, ModelEnd)]
        assert [m.role for m in starts[0].messages] == ["user"]
        assert [m.role for m in starts[2].messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
        ]
        assert starts[2].messages[2].tool_call_id == "call_lookup_1"
        assert starts[2].messages[2].content == "found: order A1 is shipped"
        assert ends[0].text == "I'll look up order A1 first."
        assert [(c.id, c.name, c.args) for c in ends[0].tool_calls] == [
            ("call_lookup_1", "lookup", {"query": "order A1"})
        ]
        assert all(e.latency_ms is not None and e.latency_ms >= 0 for e in ends)
        tool_start = next(e for e in handler.events if isinstance(e, ToolStart))
        tool_end = next(e for e in handler.events if isinstance(e, ToolEnd))
        assert (tool_start.tool, tool_start.args, tool_start.call_id) == (
            "lookup",
            {"query": "order A1"},
            "call_lookup_1",
        )
        assert tool_end.result == "found: order A1 is shipped" and tool_end.status == "ok"
        assert handler.monitor.metrics["ti"] == 5.0
        assert handler.monitor.step_count == 2

    def test_usage_and_reasoning(self) -> None:
        reply = AIMessage(
            content=[
                {"type": "reasoning", "reasoning": "the user wants nothing"},
                {"type": "text", "text": "ok"},
            ],
            usage_metadata={"input_tokens": 11, "output_tokens": 3, "total_tokens": 14},
        )
        handler = HBEvalCallbackHandler(strict=True)
        scripted_agent([reply]).invoke(inputs(), config={"callbacks": [handler]})
        end = next(e for e in handler.events if isinstance(e, ModelEnd))
        assert end.text == "ok"
        assert end.reasoning == "the user wants nothing"
        assert end.usage is not None and (end.usage.input_tokens, end.usage.output_tokens) == (
            11,
            3,
        )


class TestInvocationStyles:
    EXPECTED: ClassVar[Counter[str]] = Counter(
        run_start=1,
        run_end=1,
        span_start=6,
        span_end=6,
        model_start=3,
        model_end=3,
        tool_start=2,
        tool_end=2,
    )

    def test_invoke_ainvoke_stream_astream(self) -> None:
        async def arun(graph: Any, handler: Any, mode: str) -> None:
            config = {"callbacks": [handler]}
            if mode == "ainvoke":
                await graph.ainvoke(inputs(), config=config)
            else:
                async for _ in graph.astream(inputs(), config=config, stream_mode="updates"):
                    pass

        for mode in ("invoke", "stream", "ainvoke", "astream"):
            handler = HBEvalCallbackHandler(strict=True)
            graph = scripted_agent()
            if mode == "invoke":
                graph.invoke(inputs(), config={"callbacks": [handler]})
            elif mode == "stream":
                for _ in graph.stream(inputs(), config={"callbacks": [handler]}):
                    pass
            else:
                asyncio.run(arun(graph, handler, mode))
            assert kinds(handler.events) == self.EXPECTED, mode
            assert len(handler.run_ids) == 1

    def test_batch_keeps_runs_apart(self) -> None:
        handler = HBEvalCallbackHandler(strict=True)
        graph = scripted_agent(PARALLEL_SCRIPT)
        graph.batch([inputs(), inputs()], config={"callbacks": [handler]})
        assert len(handler.run_ids) == 2
        for run_id in handler.run_ids:
            mine = handler.events_of(run_id)
            c = kinds(mine)
            assert (c["run_start"], c["run_end"], c["tool_start"], c["tool_end"]) == (1, 1, 2, 2)
            assert c["model_start"] == c["model_end"] >= 1


class TestConcurrency:
    def test_parallel_tool_calls_from_worker_threads(self) -> None:
        seen_threads: set[str] = set()

        class Spy(HBEvalCallbackHandler):
            def on_tool_start(self, *args: Any, **kwargs: Any) -> None:
                seen_threads.add(threading.current_thread().name)
                super().on_tool_start(*args, **kwargs)

        handler = Spy(strict=True)
        scripted_agent(PARALLEL_SCRIPT).invoke(inputs(), config={"callbacks": [handler]})
        c = kinds(handler.events)
        assert (c["tool_start"], c["tool_end"], c["model_start"]) == (2, 2, 2)
        assert (
            len([e for e in handler.events if isinstance(e, SpanStart) and e.name == "tools"]) == 2
        )
        assert seen_threads and all(name != "MainThread" for name in seen_threads)
        seqs = [e.seq for e in handler.events]
        assert seqs == list(range(len(seqs)))  # numbered under the lock: no gaps, no repeats
        steps = handler.monitor.step_count
        assert steps == 2 and handler.monitor.metrics["ti"] == 5.0

    def test_many_concurrent_runs_share_one_handler(self) -> None:
        handler = HBEvalCallbackHandler(strict=True)
        graphs = [scripted_agent(PARALLEL_SCRIPT) for _ in range(6)]
        threads = [
            threading.Thread(
                target=g.invoke, args=(inputs(),), kwargs={"config": {"callbacks": [handler]}}
            )
            for g in graphs
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(handler.run_ids) == 6
        assert kinds(handler.events)["tool_end"] == 12


class S(TypedDict):
    messages: Annotated[list[Any], add_messages]


class TestNesting:
    def nested_graph(self) -> Any:
        """An outer graph: an agent as a node, then a node whose function invokes another agent."""
        as_node = scripted_agent(name="inner_as_node")
        called = scripted_agent(name="inner_called")

        def call_inner(state: S) -> dict[str, Any]:
            out = called.invoke({"messages": state["messages"][:1]})  # no config passed on purpose
            return {"messages": [out["messages"][-1]]}

        b = StateGraph(S)
        b.add_node("as_node", as_node)
        b.add_node("fn_node", call_inner)
        b.add_edge(START, "as_node")
        b.add_edge("as_node", "fn_node")
        b.add_edge("fn_node", END)
        return b.compile()

    def test_handlers_reach_nested_graphs(self) -> None:
        handler = HBEvalCallbackHandler(strict=True)
        self.nested_graph().invoke(inputs(), config={"callbacks": [handler]})
        c = kinds(handler.events)
        assert (c["run_start"], c["run_end"]) == (1, 1)  # one run, however deep
        assert (c["tool_start"], c["tool_end"], c["model_start"]) == (4, 4, 6)
        graphs = [e for e in handler.events if isinstance(e, SpanStart) and e.scope == "graph"]
        assert [g.name for g in graphs] == ["LangGraph", "inner_as_node", "inner_called"]
        span_ids = {e.span_id for e in handler.events if isinstance(e, SpanStart)}
        for e in handler.events:
            if e.parent_id is not None and not isinstance(e, (RunEnd,)):
                assert e.parent_id in span_ids
        assert c["span_start"] == c["span_end"]
        assert len(handler.run_ids) == 1

    def test_agent_used_as_a_tool_is_captured(self) -> None:
        inner = scripted_agent(name="helper")

        def ask_helper(question: str) -> str:
            """Ask the helper agent."""
            return str(inner.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content)

        outer_script = [
            AIMessage(
                "I'll ask the helper.",
                tool_calls=[call("ask_helper", {"question": "q"}, "c-helper")],
            ),
            AIMessage("done"),
        ]
        from langchain.agents import create_agent

        outer = create_agent(
            ScriptedChatModel(responses=outer_script), [StructuredTool.from_function(ask_helper)]
        )
        handler = HBEvalCallbackHandler(strict=True)
        outer.invoke(inputs(), config={"callbacks": [handler]})
        tools = [e.tool for e in handler.events if isinstance(e, ToolStart)]
        assert tools == ["ask_helper", "lookup", "add"]
        graphs = [e.name for e in handler.events if isinstance(e, SpanStart) and e.scope == "graph"]
        assert graphs == ["LangGraph", "helper"]
        assert len(handler.run_ids) == 1


class TestToolErrors:
    def test_tool_message_with_error_status_is_an_errored_call(self) -> None:
        def flaky(x: int) -> str:
            """Always fails, gracefully."""
            raise ToolException("backend 500")

        tool = StructuredTool.from_function(flaky, handle_tool_error=True)
        from langchain.agents import create_agent

        script = [
            AIMessage("Trying flaky.", tool_calls=[call("flaky", {"x": 1}, "c1")]),
            AIMessage("gave up"),
        ]
        graph = create_agent(ScriptedChatModel(responses=script), [tool])
        handler = HBEvalCallbackHandler(strict=True)
        graph.invoke(inputs(), config={"callbacks": [handler]})
        end = next(e for e in handler.events if isinstance(e, ToolEnd))
        assert end.status == "error" and "backend 500" in str(end.result)
        assert handler.monitor.metrics["frr"] == 0.0

    def test_raising_tool_gives_tool_error_and_error_run_end(self) -> None:
        def broken(x: int) -> str:
            """Raises."""
            raise ValueError("boom")

        from langchain.agents import create_agent

        script = [
            AIMessage("Trying.", tool_calls=[call("broken", {"x": 1}, "c1")]),
            AIMessage("never"),
        ]
        graph = create_agent(
            ScriptedChatModel(responses=script), [StructuredTool.from_function(broken)]
        )
        handler = HBEvalCallbackHandler(strict=True)
        with pytest.raises(ValueError):
            graph.invoke(inputs(), config={"callbacks": [handler]})
        err = next(e for e in handler.events if isinstance(e, ToolError))
        assert err.error_type == "ValueError" and err.call_id == "c1"
        end = next(e for e in handler.events if isinstance(e, RunEnd))
        assert end.status == "error"
        assert any(isinstance(e, SpanEnd) and e.status == "error" for e in handler.events)


class TestSafety:
    def test_errors_in_handler_are_swallowed(self, caplog: pytest.LogCaptureFixture) -> None:
        def bad_sink(event: Any) -> None:
            raise RuntimeError("sink down")

        handler = HBEvalCallbackHandler(on_event=bad_sink)
        out = scripted_agent().invoke(inputs(), config={"callbacks": [handler]})
        assert out["messages"][-1].content == "done"
        assert handler.errors and "sink down" in handler.errors[0]
        assert kinds(handler.events)["tool_end"] == 2  # capture itself went on

    def test_strict_mode_reraises(self) -> None:
        def bad_sink(event: Any) -> None:
            raise RuntimeError("sink down")

        handler = HBEvalCallbackHandler(on_event=bad_sink, strict=True)
        with pytest.raises(RuntimeError, match="sink down"):
            scripted_agent().invoke(inputs(), config={"callbacks": [handler]})

    def test_broken_internals_never_break_the_agent(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from hbeval_langgraph import _convert

        def boom(*args: Any, **kwargs: Any) -> Any:
            raise KeyError("internal")

        for name in ("chat_messages", "tool_args", "tool_output", "tool_calls", "content_text"):
            monkeypatch.setattr(_convert, name, boom)
        handler = HBEvalCallbackHandler()
        out = scripted_agent().invoke(inputs(), config={"callbacks": [handler]})
        assert out["messages"][-1].content == "done"
        assert handler.errors


class TestNoCodeChange:
    def test_instrument_captures_without_config_and_uninstrument_stops(self) -> None:
        assert not is_instrumented()
        handler = instrument()
        try:
            assert instrument() is handler  # idempotent
            assert current_handler() is handler
            scripted_agent().invoke(inputs())
            assert kinds(handler.events)["tool_end"] == 2
        finally:
            uninstrument()
            uninstrument()
        assert current_handler() is None and not is_instrumented()
        n = len(handler.events)
        scripted_agent().invoke(inputs())
        assert len(handler.events) == n

    def test_instrument_coexists_with_user_callbacks(self) -> None:
        mine = HBEvalCallbackHandler(strict=True)
        handler = instrument()
        try:
            scripted_agent().invoke(inputs(), config={"callbacks": [mine]})
        finally:
            uninstrument()
        assert kinds(handler.events) == kinds(mine.events)

    def test_hook_is_registered_once(self) -> None:
        from langchain_core.tracers import context as lc_context

        from hbeval_langgraph._hook import HANDLER_VAR

        with capture():
            pass
        n = len(lc_context._configure_hooks)
        for _ in range(3):
            instrument()
            uninstrument()
            with capture():
                pass
        assert len(lc_context._configure_hooks) == n
        assert sum(1 for hook in lc_context._configure_hooks if hook[0] is HANDLER_VAR) == 1

    def test_capture_scope_attributes_runs_and_ends_with_the_block(self) -> None:
        with capture(run_id="trial-7") as handler:
            scripted_agent().invoke(inputs())
            asyncio.run(scripted_agent().ainvoke(inputs()))
        assert {e.run_id for e in handler.events} == {"trial-7"}
        assert kinds(handler.events)["run_start"] == 2
        n = len(handler.events)
        scripted_agent().invoke(inputs())
        assert len(handler.events) == n


class TestLiveSignals:
    THREE_CALLS: ClassVar[list[AIMessage]] = [
        AIMessage("Step one.", tool_calls=[call("lookup", {"query": "a"}, "c1")]),
        AIMessage("Step two.", tool_calls=[call("lookup", {"query": "b"}, "c2")]),
        AIMessage("Step three.", tool_calls=[call("add", {"a": 1, "b": 2}, "c3")]),
        AIMessage("Step four.", tool_calls=[call("add", {"a": 2, "b": 2}, "c4")]),
        AIMessage("done"),
    ]

    def test_adapt_plan_directive_reaches_user_callback_and_trace(self) -> None:
        received: list[Any] = []
        handler = HBEvalCallbackHandler(strict=True, on_directive=received.append)
        graph = scripted_agent(self.THREE_CALLS)
        plan = FaultPlan(
            id="p", seed=1, faults=(FaultSpec(id="f", target="*", mode="error_5xx", on_calls=(2,)),)
        )
        with tool_faults(graph, FaultInjector(plan, enabled=True)):
            graph.invoke(inputs(), config={"callbacks": [handler]})
        assert [d.action for d in received] == ["replan"]  # PEI fell below 0.70 at step 3
        directives = [e for e in handler.events if isinstance(e, Directive)]
        assert len(directives) == 1 and directives[0].metric == "pei"
        assert handler.monitor.take_directive() is not None

    def test_directive_decided_on_a_plain_tool_call_is_recorded_after_it(self) -> None:
        # No fault wrapper: the step comes from the handler's own tool callbacks. A rule on TI
        # (at most 5.0, so always below 6) fires on each of the first steps (max_fires 3).
        rule = {"when": {"metric": "ti", "below": 6, "for_steps": 1}, "then": "retry"}
        monitor = Monitor(policy=[rule])
        received: list[Any] = []
        handler = HBEvalCallbackHandler(strict=True, monitor=monitor, on_directive=received.append)
        scripted_agent(self.THREE_CALLS).invoke(inputs(), config={"callbacks": [handler]})
        assert len(monitor.directives) == 3
        assert received == monitor.directives
        events = handler.events
        at = [i for i, e in enumerate(events) if isinstance(e, Directive)]
        assert len(at) == 3
        # Each follows the tool_end whose step decided it, as the step's last event.
        for i, d in zip(at, monitor.directives, strict=True):
            end = events[i - 1]
            assert isinstance(end, ToolEnd) and end.call_id == f"c{d.step_index + 1}"

    def test_enforced_halt_stops_before_the_next_tool(self) -> None:
        halts: list[dict[str, Any]] = []
        monitor = Monitor(enforce=True, halt_policy={"metric": "frr", "below": 0.5, "for_steps": 1})
        handler = HBEvalCallbackHandler(monitor=monitor, on_halt=halts.append)
        graph = scripted_agent(self.THREE_CALLS)
        plan = FaultPlan(
            id="p", seed=1, faults=(FaultSpec(id="f", target="*", mode="error_5xx", on_calls=(0,)),)
        )
        from hbeval_core.live.monitor import SafeHaltError

        with tool_faults(graph, FaultInjector(plan, enabled=True)), pytest.raises(SafeHaltError):
            graph.invoke(inputs(), config={"callbacks": [handler]})
        assert (
            graph.hbeval_calls == []
        )  # the faulted call was answered by the fault; no tool ran after
        assert len(halts) == 1
        assert [e.kind for e in handler.events if e.kind in ("halt", "run_end")] == [
            "halt",
            "run_end",
        ]
        assert next(e for e in handler.events if isinstance(e, RunEnd)).status == "halted"

    def test_enforced_halt_without_fault_wrapper(self) -> None:
        """Plain capture (no ToolNode patch): the callback itself stops the next tool."""
        from langchain_core.tools import ToolException as TE

        def flaky(x: int) -> str:
            """Fails gracefully."""
            raise TE("down")

        ran: list[int] = []

        def other(x: int) -> str:
            """Never reached."""
            ran.append(x)
            return "ok"

        from langchain.agents import create_agent

        script = [
            AIMessage("Try flaky.", tool_calls=[call("flaky", {"x": 1}, "c1")]),
            AIMessage("Try other.", tool_calls=[call("other", {"x": 2}, "c2")]),
            AIMessage("done"),
        ]
        graph = create_agent(
            ScriptedChatModel(responses=script),
            [
                StructuredTool.from_function(flaky, handle_tool_error=True),
                StructuredTool.from_function(other),
            ],
        )
        monitor = Monitor(enforce=True, halt_policy={"metric": "frr", "below": 0.5, "for_steps": 1})
        from hbeval_core.live.monitor import SafeHaltError

        with pytest.raises(SafeHaltError):
            graph.invoke(inputs(), config={"callbacks": [HBEvalCallbackHandler(monitor=monitor)]})
        assert ran == []

    def test_halt_survives_graphs_that_turn_tool_errors_into_messages(self) -> None:
        """A ToolNode with handle_tool_errors=True swallows the halt; the next model call stops."""
        from langgraph.prebuilt import ToolNode, tools_condition

        calls: list[str] = []
        from tests.adapters.langgraph.test_langgraph_fixtures import make_tools

        tools = make_tools(calls)
        model = ScriptedChatModel(responses=self.THREE_CALLS)

        def agent(state: S) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        b = StateGraph(S)
        b.add_node("agent", agent)
        b.add_node("tools", ToolNode(tools, handle_tool_errors=True))
        b.add_edge(START, "agent")
        b.add_conditional_edges("agent", tools_condition)
        b.add_edge("tools", "agent")
        graph = b.compile()
        monitor = Monitor(enforce=True, halt_policy={"metric": "frr", "below": 0.5, "for_steps": 1})
        handler = HBEvalCallbackHandler(monitor=monitor)
        plan = FaultPlan(
            id="p", seed=1, faults=(FaultSpec(id="f", target="*", mode="error_5xx", on_calls=(0,)),)
        )
        from hbeval_core.live.monitor import SafeHaltError

        with tool_faults(graph, FaultInjector(plan, enabled=True)), pytest.raises(SafeHaltError):
            graph.invoke(inputs(), config={"callbacks": [handler]})
        assert calls == []
