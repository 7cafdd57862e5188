"""Fault injection into compiled LangGraph graphs: every mode, receipts, scoping and restore."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from hbeval.scoring import analyse_trace
from hbeval_core.contract import FakeClock
from hbeval_core.events import FaultInjected, ModelStart, RunEnd, ToolEnd, ToolError, ToolStart
from hbeval_core.faults.plans import CascadePlan, CascadeStage, FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector, InjectedCrash
from hbeval_core.vocab import ENV_ALLOW_FAULT_INJECTION
from hbeval_langgraph import (
    HBEvalCallbackHandler,
    HBEvalFaultMiddleware,
    NodeFaultError,
    find_tool_nodes,
    node_faults,
    tool_faults,
    wrap_node,
)
from tests.adapters.langgraph.test_langgraph_fixtures import (
    TWO_TOOL_SCRIPT,
    ScriptedChatModel,
    inputs,
    make_tools,
    scripted_agent,
)

# mode -> (extra spec fields, real tool runs?, agent reads an error?)
MODES: dict[str, tuple[dict[str, Any], bool, bool]] = {
    "timeout": ({"after_ms": 1500}, False, True),
    "latency": ({"after_ms": 250}, True, False),
    "error_5xx": ({"http_status": 502}, False, True),
    "connection_refused": ({}, False, True),
    "intermittent": ({}, False, True),
    "empty_response": ({}, True, False),
    "malformed": ({"malformed_kind": "wrong_type"}, True, False),
    "truncated": ({}, True, False),
    "prompt_injection": ({}, True, False),
    "lost_result": ({}, True, True),
}


class S(TypedDict):
    messages: Annotated[list[Any], add_messages]


def plan_for(mode: str, on_call: int = 0, **extra: Any) -> FaultPlan:
    spec = FaultSpec(id="f", target="*", mode=mode, on_calls=(on_call,), **extra)
    return FaultPlan(id=f"test/{mode}", seed=3, faults=(spec,))


def injector(plan: Any, clock: FakeClock | None = None) -> FaultInjector:
    return FaultInjector(
        plan, enabled=True, clock=clock or FakeClock(), forbidden_tool="transfer_funds"
    )


def run(
    graph: Any, inj: FaultInjector, *, use_async: bool = False
) -> tuple[Any, HBEvalCallbackHandler]:
    handler = HBEvalCallbackHandler(strict=True)
    config = {"callbacks": [handler]}
    with tool_faults(graph, inj):
        if use_async:
            out = asyncio.run(graph.ainvoke(inputs(), config=config))
        else:
            out = graph.invoke(inputs(), config=config)
    return out, handler


def tool_message(out: Any, call_id: str) -> ToolMessage:
    return next(
        m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    )


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("mode", list(MODES))
def test_every_tool_fault_mode_reaches_the_model(mode: str, use_async: bool) -> None:
    extra, runs_real, is_error = MODES[mode]
    clock = FakeClock()
    graph = scripted_agent()
    out, handler = run(graph, injector(plan_for(mode, **extra), clock), use_async=use_async)
    events = handler.events
    faults = [e for e in events if isinstance(e, FaultInjected)]
    assert len(faults) == 1 and faults[0].mode == mode and faults[0].call_id == "call_lookup_1"
    # The real tool ran only for modes that let it; the run always continued.
    assert ("lookup" in graph.hbeval_calls) is runs_real
    assert graph.hbeval_calls[-1] == "add"
    assert out["messages"][-1].content == "done"
    # The faulted call has exactly one start and one end, the receipt before the end.
    starts = [
        i for i, e in enumerate(events) if isinstance(e, ToolStart) and e.call_id == "call_lookup_1"
    ]
    ends = [
        i for i, e in enumerate(events) if isinstance(e, ToolEnd) and e.call_id == "call_lookup_1"
    ]
    assert len(starts) == 1 and len(ends) == 1
    assert starts[0] < events.index(faults[0]) < ends[0]
    end = events[ends[0]]
    message = tool_message(out, "call_lookup_1")
    assert end.status == ("error" if is_error else "ok")
    assert message.status == ("error" if is_error else "success")
    assert end.result == message.content
    # Delivery receipt: the payload is in the model's next input (latency has none to find).
    record = analyse_trace(events).faults[0]
    if faults[0].payload:
        assert faults[0].payload in str(message.content)
        next_input = [e for e in events if isinstance(e, ModelStart)][1]
        assert any(faults[0].payload in m.content for m in next_input.messages)
        assert record.delivered is True
    else:
        assert mode == "latency" and record.delivered is False
    if mode in ("timeout", "latency"):
        assert clock.sleeps == [extra["after_ms"] / 1000.0]  # virtual time: the test never slept


def test_crash_aborts_the_run_and_records_the_call() -> None:
    graph = scripted_agent()
    handler = HBEvalCallbackHandler(strict=True)
    with tool_faults(graph, injector(plan_for("crash", 1))), pytest.raises(InjectedCrash):
        graph.invoke(inputs(), config={"callbacks": [handler]})
    assert graph.hbeval_calls == ["lookup"]
    err = next(e for e in handler.events if isinstance(e, ToolError))
    assert (err.call_id, err.error_type) == ("call_add_1", "InjectedCrash")
    assert next(e for e in handler.events if isinstance(e, RunEnd)).status == "cancelled"
    assert analyse_trace(handler.events).faults[0].delivered is False


def test_cascade_plan_through_the_tool_node() -> None:
    plan = CascadePlan(
        id="cascade",
        seed=1,
        stages=(
            CascadeStage(target="*", mode="timeout", after_ms=2000, on_calls=(0,)),
            CascadeStage(target="*", mode="error_5xx", http_status=503, on_calls=(1,)),
        ),
    )
    graph = scripted_agent()
    _out, handler = run(graph, injector(plan))
    assert [f.mode for f in handler.events if isinstance(f, FaultInjected)] == [
        "timeout",
        "error_5xx",
    ]
    assert graph.hbeval_calls == []
    assert all(r.delivered for r in analyse_trace(handler.events).faults)


def test_real_tool_error_under_a_fault_keeps_the_receipt_first() -> None:
    def broken(x: int) -> str:
        """Raises on its own."""
        raise ValueError("real failure")

    from langchain_core.tools import StructuredTool

    script = [
        AIMessage(
            "Try.",
            tool_calls=[{"name": "broken", "args": {"x": 1}, "id": "b1", "type": "tool_call"}],
        )
    ]
    graph = create_agent(
        ScriptedChatModel(responses=script), [StructuredTool.from_function(broken)]
    )
    handler = HBEvalCallbackHandler(strict=True)
    with tool_faults(graph, injector(plan_for("latency", after_ms=5))), pytest.raises(ValueError):
        graph.invoke(inputs(), config={"callbacks": [handler]})
    kinds = [
        e.kind for e in handler.events if e.kind in ("tool_start", "fault_injected", "tool_error")
    ]
    assert kinds == ["tool_start", "fault_injected", "tool_error"]


def test_no_faults_without_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_ALLOW_FAULT_INJECTION, raising=False)
    graph = scripted_agent()
    _out, handler = run(graph, FaultInjector(plan_for("error_5xx")))  # enabled from the env: off
    assert not [e for e in handler.events if isinstance(e, FaultInjected)]
    assert graph.hbeval_calls == ["lookup", "add"]


def test_env_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_ALLOW_FAULT_INJECTION, "true")
    _out, handler = run(scripted_agent(), FaultInjector(plan_for("error_5xx")))
    assert len([e for e in handler.events if isinstance(e, FaultInjected)]) == 1


class TestScopingAndRestore:
    def test_patch_is_undone_with_exact_originals(self) -> None:
        graph = scripted_agent()
        (node,) = find_tool_nodes(graph)
        before = (node._wrap_tool_call, node._awrap_tool_call, dict(node.tools_by_name))
        with tool_faults(graph, injector(plan_for("error_5xx"))):
            assert node._wrap_tool_call is not before[0]
        assert node._wrap_tool_call is before[0] and node._awrap_tool_call is before[1]
        assert node.tools_by_name == before[2]

    def test_restored_even_when_the_run_raises(self) -> None:
        graph = scripted_agent()
        (node,) = find_tool_nodes(graph)
        wrap = node._wrap_tool_call
        with pytest.raises(InjectedCrash), tool_faults(graph, injector(plan_for("crash"))):
            graph.invoke(inputs())
        assert node._wrap_tool_call is wrap

    def test_nested_scopes_are_reference_counted(self) -> None:
        graph = scripted_agent()
        (node,) = find_tool_nodes(graph)
        original = node._wrap_tool_call
        with tool_faults(graph, injector(plan_for("error_5xx"))):
            patched = node._wrap_tool_call
            with tool_faults(graph, injector(plan_for("truncated"))):
                assert node._wrap_tool_call is patched
                _, handler = run(graph, injector(plan_for("timeout")))
                assert [e.mode for e in handler.events if isinstance(e, FaultInjected)] == [
                    "timeout"
                ]
            assert node._wrap_tool_call is patched
        assert node._wrap_tool_call is original

    def test_faults_stay_inside_their_scope(self) -> None:
        graph = scripted_agent()
        with tool_faults(graph, injector(plan_for("error_5xx"))):
            pass
        handler = HBEvalCallbackHandler(strict=True)
        graph.invoke(inputs(), config={"callbacks": [handler]})
        assert not [e for e in handler.events if isinstance(e, FaultInjected)]

    def test_tool_nodes_found_in_subgraphs(self) -> None:
        # b runs after a on the same messages (3 AI messages in), so its script continues there.
        b_script = [
            *TWO_TOOL_SCRIPT,
            TWO_TOOL_SCRIPT[1].model_copy(
                update={
                    "tool_calls": [
                        {
                            "name": "add",
                            "args": {"a": 1, "b": 1},
                            "id": "call_add_b",
                            "type": "tool_call",
                        }
                    ]
                }
            ),
            AIMessage("done too"),
        ]
        inner_a, inner_b = scripted_agent(name="a"), scripted_agent(b_script, name="b")
        mid = StateGraph(S)
        mid.add_node("b", inner_b)
        mid.add_edge(START, "b")
        mid.add_edge("b", END)
        outer = StateGraph(S)
        outer.add_node("a", inner_a)
        outer.add_node("mid", mid.compile())
        outer.add_edge(START, "a")
        outer.add_edge("a", "mid")
        outer.add_edge("mid", END)
        graph = outer.compile()
        nodes = find_tool_nodes(graph)
        assert len(nodes) == 2
        handler = HBEvalCallbackHandler(strict=True)
        plan = FaultPlan(
            id="p", seed=1, faults=(FaultSpec(id="f", target="add", mode="error_5xx"),)
        )
        with tool_faults(graph, injector(plan)):
            graph.invoke(inputs(), config={"callbacks": [handler]})
        faults = [e for e in handler.events if isinstance(e, FaultInjected)]
        assert [f.tool for f in faults] == ["add", "add"]  # one in each nested agent


class RecordingMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """A user's own tool middleware: sees what comes back from the tool (faults included)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        self.seen.append(f"{request.tool_call['name']}:{getattr(result, 'status', '?')}")
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = await handler(request)
        self.seen.append(f"{request.tool_call['name']}:{getattr(result, 'status', '?')}")
        return result


class TestComposition:
    @pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
    def test_composes_inside_existing_middleware(self, use_async: bool) -> None:
        mw = RecordingMiddleware()
        graph = scripted_agent(middleware=[mw])
        (node,) = find_tool_nodes(graph)
        original = (node._wrap_tool_call, node._awrap_tool_call)
        assert original[0] is not None  # create_agent put the middleware there
        out, _handler = run(graph, injector(plan_for("error_5xx")), use_async=use_async)
        # The user's middleware met the injected fault as it would a real failed tool.
        assert mw.seen == ["lookup:error", "add:success"]
        assert (node._wrap_tool_call, node._awrap_tool_call) == original
        assert tool_message(out, "call_lookup_1").status == "error"

    def test_sync_only_wrapper_is_composed_for_ainvoke_too(self) -> None:
        """A ToolNode with only a sync wrapper runs it under ainvoke; we patch that route only."""
        from langgraph.prebuilt import ToolNode, tools_condition

        seen: list[str] = []

        def user_wrapper(request: Any, execute: Callable[[Any], Any]) -> Any:
            result = execute(request)
            seen.append(str(result.status))
            return result

        calls: list[str] = []
        model = ScriptedChatModel(responses=TWO_TOOL_SCRIPT)

        async def agent(state: S) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        b = StateGraph(S)
        b.add_node("agent", agent)
        b.add_node("tools", ToolNode(make_tools(calls), wrap_tool_call=user_wrapper))
        b.add_edge(START, "agent")
        b.add_conditional_edges("agent", tools_condition)
        b.add_edge("tools", "agent")
        graph = b.compile()
        (node,) = find_tool_nodes(graph)
        _out, _handler = run(graph, injector(plan_for("error_5xx")), use_async=True)
        assert seen == ["error", "success"] and calls == ["add"]
        assert node._wrap_tool_call is user_wrapper and node._awrap_tool_call is None

    def test_opt_in_agent_middleware(self) -> None:
        inj = injector(plan_for("prompt_injection"))
        calls: list[str] = []
        graph = create_agent(
            ScriptedChatModel(responses=TWO_TOOL_SCRIPT),
            make_tools(calls),
            middleware=[HBEvalFaultMiddleware(inj)],
        )
        handler = HBEvalCallbackHandler(strict=True)
        out = graph.invoke(inputs(), config={"callbacks": [handler]})
        fault = next(e for e in handler.events if isinstance(e, FaultInjected))
        assert fault.forbidden_tool == "transfer_funds"
        assert "transfer_funds" in str(tool_message(out, "call_lookup_1").content)
        assert analyse_trace(handler.events).faults[0].delivered is True
        assert calls == ["lookup", "add"]

    def test_opt_in_middleware_async(self) -> None:
        inj = injector(plan_for("error_5xx"))
        calls: list[str] = []
        graph = create_agent(
            ScriptedChatModel(responses=TWO_TOOL_SCRIPT),
            make_tools(calls),
            middleware=[HBEvalFaultMiddleware(inj)],
        )
        out = asyncio.run(graph.ainvoke(inputs()))
        assert tool_message(out, "call_lookup_1").status == "error" and calls == ["add"]


class TestNodeFaults:
    def test_error_on_a_node_fails_it_with_a_receipt(self) -> None:
        graph = scripted_agent()
        plan = FaultPlan(
            id="n",
            seed=1,
            faults=(FaultSpec(id="f", target="model", mode="error_5xx", on_calls=(1,)),),
        )
        handler = HBEvalCallbackHandler(strict=True)
        with node_faults(graph, "model", injector(plan)), pytest.raises(NodeFaultError) as info:
            graph.invoke(inputs(), config={"callbacks": [handler]})
        assert info.value.node == "model" and "503" in str(info.value)
        fault = next(e for e in handler.events if isinstance(e, FaultInjected))
        assert fault.tool == "model" and fault.attrs["node"] == "model"
        assert graph.hbeval_calls == ["lookup"]  # the second model turn never happened

    def test_latency_on_a_node_delays_it(self) -> None:
        clock = FakeClock()
        graph = scripted_agent()
        plan = FaultPlan(
            id="n",
            seed=1,
            faults=(FaultSpec(id="f", target="tools", mode="latency", after_ms=300),),
        )
        with wrap_node(graph, ["tools"], injector(plan, clock)):
            out = graph.invoke(inputs())
        assert out["messages"][-1].content == "done"
        assert clock.sleeps == [0.3, 0.3]

    def test_node_patch_is_restored(self) -> None:
        graph = scripted_agent()
        bound = graph.nodes["model"].bound
        cls_invoke = type(bound).invoke
        assert "invoke" not in vars(bound)
        with node_faults(graph, "model", injector(plan_for("error_5xx"))):
            assert "invoke" in vars(bound)
        assert "invoke" not in vars(bound) and "ainvoke" not in vars(bound)
        assert type(bound).invoke is cls_invoke

    def test_unknown_node_is_named(self) -> None:
        with (
            pytest.raises(KeyError, match="no node 'nope'"),
            node_faults(scripted_agent(), "nope", None),
        ):
            pass

    def test_node_fault_async(self) -> None:
        graph = scripted_agent()
        plan = FaultPlan(
            id="n",
            seed=1,
            faults=(FaultSpec(id="f", target="model", mode="timeout", on_calls=(0,)),),
        )
        with (
            node_faults(graph, "model", injector(plan)),
            pytest.raises(NodeFaultError, match="timed out"),
        ):
            asyncio.run(graph.ainvoke(inputs()))
