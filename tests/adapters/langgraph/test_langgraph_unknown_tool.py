"""A call to a tool the agent does not have: LangGraph's ``ToolNode`` answers it with an error
``ToolMessage`` and no tool callback fires; the handler still records the failed call."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import ToolException, tool

from hbeval_core.live.monitor import Monitor
from hbeval_langgraph import HBEvalCallbackHandler
from hbeval_langgraph.testing import ScriptedChatModel, tool_call


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by id."""
    return f"order {order_id}: shipped on 3 May"


def _agent(first_reply: AIMessage) -> Any:
    model = ScriptedChatModel(
        responses=[
            first_reply,
            AIMessage("", tool_calls=[tool_call("lookup_order", {"order_id": "A1"}, "c9")]),
            AIMessage("Order A1 shipped on 3 May."),
        ]
    )
    return create_agent(model, [lookup_order])


def _tool_events(handler: HBEvalCallbackHandler) -> list[tuple[str, str, str, Any]]:
    return [
        (e.kind, e.call_id, e.tool, getattr(e, "status", None))  # type: ignore[attr-defined]
        for e in handler.events
        if e.kind in ("tool_start", "tool_end", "tool_error")
    ]


@pytest.mark.parametrize("watched", [False, True], ids=["logged", "live"])
def test_a_call_to_a_missing_tool_is_a_failed_call_on_record(watched: bool) -> None:
    agent = _agent(AIMessage("", tool_calls=[tool_call("track_parcel", {"id": "A1"}, "c1")]))
    handler = HBEvalCallbackHandler(monitor=Monitor()) if watched else HBEvalCallbackHandler()
    out = agent.invoke({"messages": [HumanMessage("Where is A1?")]}, {"callbacks": [handler]})
    # What the agent read: ToolNode's own error text for a tool it does not have.
    refused = [m for m in out["messages"] if m.type == "tool" and m.tool_call_id == "c1"]
    assert refused and refused[0].status == "error"
    assert _tool_events(handler) == [
        ("tool_start", "c1", "track_parcel", None),
        ("tool_end", "c1", "track_parcel", "error"),
        ("tool_start", "c9", "lookup_order", None),
        ("tool_end", "c9", "lookup_order", "ok"),
    ]
    start, end = (e for e in handler.events if getattr(e, "call_id", None) == "c1")
    assert start.args == {"id": "A1"}  # type: ignore[attr-defined]
    assert end.result == refused[0].content  # type: ignore[attr-defined]
    assert "track_parcel is not a valid tool" in end.result  # type: ignore[attr-defined]
    assert end.attrs["synthetic"] is True
    # Both are children of the tools node's span, as a real call's events are.
    tools_spans = {
        e.span_id  # type: ignore[attr-defined]
        for e in handler.events
        if e.kind == "span_start" and e.name == "tools"  # type: ignore[attr-defined]
    }
    assert start.parent_id in tools_spans and end.parent_id in tools_spans
    # The live monitor saw a failed call: FRR is defined (with no failed call it is undefined).
    assert handler.monitor.metrics["frr"] is not None


def test_parallel_calls_record_the_missing_one_once_beside_the_real_one() -> None:
    agent = _agent(
        AIMessage(
            "",
            tool_calls=[
                tool_call("lookup_order", {"order_id": "A1"}, "p1"),
                tool_call("refund_order", {"order_id": "A1"}, "p2"),
            ],
        )
    )
    handler = HBEvalCallbackHandler(strict=True)
    for _ in agent.stream({"messages": [HumanMessage("Refund A1")]}, {"callbacks": [handler]}):
        pass
    events = _tool_events(handler)
    by_call = {cid: [k for k, c, _, _ in events if c == cid] for _, cid, _, _ in events}
    # Each call has exactly one start and one end, whichever node chain ended with the message.
    assert by_call == {
        "p1": ["tool_start", "tool_end"],
        "p2": ["tool_start", "tool_end"],
        "c9": ["tool_start", "tool_end"],
    }
    status = {c: s for k, c, _, s in events if k == "tool_end"}
    assert status == {"p1": "ok", "p2": "error", "c9": "ok"}


def test_a_real_tool_that_fails_is_recorded_once_by_its_own_callbacks() -> None:
    @tool
    def flaky(order_id: str) -> str:
        """Always down."""
        raise ToolException("503 Service Unavailable")

    flaky.handle_tool_error = True  # the tool returns the error text as an error ToolMessage

    model = ScriptedChatModel(
        responses=[
            AIMessage("", tool_calls=[tool_call("flaky", {"order_id": "A1"}, "f1")]),
            AIMessage("Sorry, the order service is down."),
        ]
    )
    agent = create_agent(model, [flaky])
    handler = HBEvalCallbackHandler(strict=True)
    agent.invoke({"messages": [HumanMessage("Where is A1?")]}, {"callbacks": [handler]})
    events = _tool_events(handler)
    # The tool's own start and error callbacks, and nothing added from the error ToolMessage.
    assert events == [("tool_start", "f1", "flaky", None), ("tool_end", "f1", "flaky", "error")]
    assert all("synthetic" not in e.attrs for e in handler.events if e.kind.startswith("tool"))
