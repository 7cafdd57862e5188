"""LangGraph graphs that pause with ``interrupt()``: a task supplies the resume values, and the
invocations make one trial (one run in the trace, faults delivered across the pause).

The graph is real: a model node (scripted model emitting real tool calls), an approval node
that pauses with ``interrupt()`` before a refund runs, and a ``ToolNode``.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.runner import load_tasks
from hbeval.scoring import analyse_trace, score_trial
from hbeval_core.contract import Outcome, Task, outcome_of
from hbeval_core.events import FaultInjected, RunEnd, RunStart
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_core.live.derive import derive_steps
from hbeval_langgraph import LangGraphAdapter

REFUNDS: list[dict[str, Any]] = []


class Clerk(FakeMessagesListChatModel):
    """Asks for a refund, then reports what the refund tool (or the approver) said."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            if last.status == "error" or "rejected" in str(last.content):
                reply = AIMessage(f"The refund did not go through: {last.content}")
            else:
                reply = AIMessage(f"Refunded order A1: {last.content}")
        else:
            reply = AIMessage(
                "Order A1 qualifies; I will refund it once a person approves.",
                tool_calls=[
                    {
                        "name": "issue_refund",
                        "args": {"order_id": "A1"},
                        "id": "r1",
                        "type": "tool_call",
                    }
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def issue_refund(order_id: str) -> str:
    """Refund an order."""
    REFUNDS.append({"order_id": order_id})
    return f"refund {order_id} done"


def build(checkpointer: Any = None) -> Any:
    model = Clerk(responses=[AIMessage("unused")])

    def think(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: Any) -> Command:  # type: ignore[type-arg]
        call = state["messages"][-1].tool_calls[0]
        decision = interrupt({"approve": call["name"], "args": call["args"]})
        if decision == "approve":
            return Command(goto="tools")
        rejected = ToolMessage(f"rejected by a person: {decision}", tool_call_id=call["id"])
        return Command(goto="think", update={"messages": [rejected]})

    g = StateGraph(MessagesState)
    g.add_node("think", think)
    g.add_node("approve", approve)
    g.add_node("tools", ToolNode([issue_refund]))
    g.add_edge(START, "think")
    g.add_conditional_edges(
        "think", lambda s: "approve" if s["messages"][-1].tool_calls else END, ["approve", END]
    )
    g.add_edge("tools", "think")
    return g.compile(checkpointer=checkpointer)


def make_graph(checkpointer: Any = None) -> Any:
    """A factory that lets hbeval give each trial its own checkpointer."""
    return build(checkpointer)


def make_graph_without_checkpointer() -> Any:
    return build()


def task(*resume: Any) -> Task:
    return Task(id="refund", question="Please refund order A1.", resume=tuple(resume))


def run(target: Any, t: Task, injector: FaultInjector | None = None) -> Any:
    REFUNDS.clear()
    adapter = LangGraphAdapter()
    adapter.fault_hook(injector)
    try:
        return adapter.run_trial(target, t, None, None)
    finally:
        adapter.fault_hook(None)


def test_approved_refund_runs_across_the_pause_as_one_trial() -> None:
    result = run(make_graph, task("approve"))
    assert result.status == "ok", result.error
    assert REFUNDS == [{"order_id": "A1"}]
    assert len([e for e in result.events if isinstance(e, RunStart)]) == 1
    assert len([e for e in result.events if isinstance(e, RunEnd)]) == 1
    assert len({e.run_id for e in result.events}) == 1
    outcome = outcome_of(result)
    assert outcome.final_text == "Refunded order A1: refund A1 done"
    assert [(c.name, c.args, c.ok) for c in outcome.tool_calls] == [
        ("issue_refund", {"order_id": "A1"}, True)
    ]
    # The call was issued before the pause and ran after it: still linked to its model reply.
    (step,) = derive_steps(result.events)
    assert step.tool == "issue_refund" and step.success and step.traceable


def test_a_rejection_resumes_the_other_way() -> None:
    result = run(make_graph, task("no, wrong order"))
    assert result.status == "ok", result.error
    assert REFUNDS == []
    assert "did not go through" in outcome_of(result).final_text
    assert "rejected by a person: no, wrong order" in outcome_of(result).final_text


def test_a_graph_compiled_with_a_checkpointer_is_used_as_it_is() -> None:
    saver = InMemorySaver()
    result = run(build(saver), task("approve"))
    assert result.status == "ok", result.error and REFUNDS == [{"order_id": "A1"}]
    assert len(list(saver.list(None))) > 0  # its own saver kept the checkpoints


def test_a_pause_with_no_resume_value_left_fails_the_trial_and_says_why() -> None:
    result = run(build(InMemorySaver()), task())
    assert result.status == "error" and result.error_type == "GraphInterrupted"
    assert "'resume' list" in (result.error or "") and "issue_refund" in (result.error or "")
    assert REFUNDS == []
    assert isinstance(result.final_state, dict) and result.final_state["messages"]


def test_resume_values_without_a_checkpointer_name_the_fix() -> None:
    result = run(make_graph_without_checkpointer, task("approve"))
    assert result.status == "error" and result.infra is True
    assert "checkpointer" in (result.error or "") and "'resume'" in (result.error or "")


def test_a_fault_after_the_pause_is_delivered_with_a_receipt() -> None:
    spec = FaultSpec(id="e", target="issue_refund", mode="error_5xx", on_calls=(0,))
    plan = FaultPlan(id="interrupt/error", seed=3, faults=(spec,))
    injector = FaultInjector(plan, run_id="refund", enabled=True)
    result = run(make_graph, task("approve"), injector)
    assert result.status == "ok", result.error
    assert REFUNDS == []  # the fault answered instead of the tool
    (fault,) = [e for e in result.events if isinstance(e, FaultInjected)]
    (record,) = analyse_trace(result.events).faults
    assert fault.tool == "issue_refund" and record.delivered is True, record.receipt
    seen: list[Outcome] = []
    verdict = score_trial(
        Task(
            id="refund", question="q", verify=lambda outcome, trace: seen.append(outcome) or False
        ),
        None,
        result,
    )
    assert verdict.passed is False and seen[0].tool_calls[0].fault == "error_5xx"


def test_a_task_file_gives_resume_values_and_the_battery_runs_them(tmp_path: Path) -> None:
    (tmp_path / "tasks.yaml").write_text(
        "tasks:\n"
        "  - id: refund\n"
        "    question: Please refund order A1.\n"
        "    resume: [approve]\n"
        "    required: [refunded]\n",
        encoding="utf-8",
    )
    (loaded,) = load_tasks(tmp_path / "tasks.yaml")
    assert loaded.resume == ("approve",)
    out = tmp_path / "r.json"
    args = [
        "battery",
        "run",
        f"{Path(__file__)}:make_graph",
        "--tasks",
        str(tmp_path / "tasks.yaml"),
    ]
    res = CliRunner().invoke(
        app,
        [
            *args,
            "--scenarios",
            "6",
            "--trials",
            "1",
            "--db",
            str(tmp_path / "s.db"),
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    trials = json.loads(out.read_text(encoding="utf-8"))["trials"]
    assert len(trials) == 6
    errors = [t["attempts"] for t in trials if t["outcome"] not in ("pass", "fail")]
    assert errors == []
    nominal = [t for t in trials if t["is_nominal"]]
    assert nominal and all(t["outcome"] == "pass" for t in nominal)


def test_a_bad_resume_field_is_refused_with_its_name(tmp_path: Path) -> None:
    from hbeval.runner import TaskFileError

    (tmp_path / "t.yaml").write_text("- {id: a, question: q, resume: approve}\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match=r"field 'resume'.*must be a list"):
        load_tasks(tmp_path / "t.yaml")


def make_nested_graph(checkpointer: Any = None) -> Any:
    """The refund graph as a subgraph: the pause happens one level down."""
    outer = StateGraph(MessagesState)
    outer.add_node("desk", build())
    outer.add_edge(START, "desk")
    outer.add_edge("desk", END)
    return outer.compile(checkpointer=checkpointer)


def test_a_pause_inside_a_subgraph_resumes_as_one_trial() -> None:
    result = run(make_nested_graph, task("approve"))
    assert result.status == "ok", result.error
    assert REFUNDS == [{"order_id": "A1"}]
    assert len({e.run_id for e in result.events}) == 1
    assert outcome_of(result).final_text == "Refunded order A1: refund A1 done"


SHIPPED: list[str] = []


@tool
def ship(parcel: str) -> str:
    """Ship a parcel."""
    SHIPPED.append(parcel)
    return f"shipped {parcel}"


class Parcels(MessagesState):
    done: Annotated[list[str], operator.add]


def make_parallel_graph(checkpointer: Any = None) -> Any:
    """Two branches pause at once, then each calls its tool from its own node (no ToolNode)."""

    def branch(parcel: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            answer = interrupt({"ship": parcel})
            if answer != "ship":
                return {"done": [f"{parcel}: held ({answer})"]}
            try:
                return {"done": [ship.invoke({"parcel": parcel})]}
            except Exception as exc:  # a faulted tool raises into the node, as a real one would
                return {"done": [f"{parcel}: failed ({type(exc).__name__})"]}

        return node

    g = StateGraph(Parcels)
    g.add_node("left", branch("P1"))
    g.add_node("right", branch("P2"))
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge("left", END)
    g.add_edge("right", END)
    return g.compile(checkpointer=checkpointer)


def test_parallel_pauses_take_one_resume_value_each_in_order() -> None:
    SHIPPED.clear()
    result = run(make_parallel_graph, task("ship", "no, wait"))
    assert result.status == "ok", result.error
    assert SHIPPED == ["P1"]  # left got the first value, right the second
    assert sorted(outcome_of(result).state["done"]) == ["P2: held (no, wait)", "shipped P1"]
    assert len({e.run_id for e in result.events}) == 1


def test_parallel_pauses_with_too_few_values_say_how_many_are_missing() -> None:
    result = run(make_parallel_graph, task("ship"))
    assert result.status == "error" and result.error_type == "GraphInterrupted"
    assert "1 more value(s)" in (result.error or "") and "'P2'" in (result.error or "")


def test_a_fault_reaches_a_tool_called_from_a_resumed_parallel_branch() -> None:
    SHIPPED.clear()
    spec = FaultSpec(id="e", target="ship", mode="error_5xx", on_calls=(0,))
    plan = FaultPlan(id="interrupt/parallel", seed=3, faults=(spec,))
    injector = FaultInjector(plan, run_id="parcels", enabled=True)
    result = run(make_parallel_graph, task("ship", "ship"), injector)
    assert result.status == "ok", result.error
    (fault,) = [e for e in result.events if isinstance(e, FaultInjected)]
    assert fault.tool == "ship"
    assert len(SHIPPED) == 1  # the faulted call never reached the tool
    # No model reads the tool's answer in this graph, so delivery is unknown, never assumed.
    (record,) = analyse_trace(result.events).faults
    assert record.delivered is None and record.receipt == "no_model_events"
