"""Faults injected into an agent whose trace records no model call: delivery is unknown.

A hand-built LangGraph graph whose "model" node is a plain function, and a plain agent that
calls a faultable tool without ``think()``, both get their faults injected (the tool boundary
is hooked), but no model call is recorded, so no receipt can say whether a payload reached the
model. The report must say exactly that (``delivery_unobserved``) everywhere the "no fault
reached the agent" claim would otherwise appear: metrics, per fault type, per scenario, the
verdict's checks and fix, the stderr warning, the terminal, the HTML and ``compare``. A run of
the same agent that does record its model (``think()``) keeps its faults measured.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.report.compare import compare_reports
from hbeval.report.html import render_html
from hbeval.scoring._report_model import validate_report

pytest.importorskip("langgraph")

runner = CliRunner()

AGENTS = textwrap.dedent(
    '''
    """Agents whose tools are hooked but whose model is not observable."""
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode

    from hbeval_core.contract import Task
    from hbeval_plain import ToolCallError, think, tool


    @lc_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order by id."""
        return f"order {order_id}: shipped"


    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]


    def brain(state: State) -> dict:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=f"Result: {last.content}")]}
        call = {"name": "lookup_order", "args": {"order_id": "A1234"}, "id": "c1"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}


    def route(state: State) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END


    def make_graph():
        g = StateGraph(State)
        g.add_node("brain", brain)
        g.add_node("tools", ToolNode([lookup_order]))
        g.add_edge(START, "brain")
        g.add_conditional_edges("brain", route)
        g.add_edge("tools", "brain")
        return g.compile()


    def _lookup(order_id):
        return {"order_id": order_id, "status": "shipped"}


    wrapped_lookup = tool(_lookup, name="lookup_order")


    def _agent(record_model: bool):
        def agent(question):
            if record_model:
                think("I look the order up.", tool_calls=[("lookup_order", {"order_id": "A1234"})])
            try:
                info = wrapped_lookup(order_id="A1234")
            except ToolCallError as exc:
                if record_model:
                    think(f"The lookup failed ({exc}).")
                return "I could not look the order up."
            if record_model:
                think("The order was found.")
            return f"Order {info['order_id']} is {info['status']}."

        return agent


    def blind():
        return _agent(False)


    def seen():
        return _agent(True)


    tasks = [
        Task(id="status", question="Where is order A1234?", required=["shipped"]),
    ]
    '''
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("unobserved")
    (tmp / "foreign_agent.py").write_text(AGENTS, encoding="utf-8")
    return tmp


def _run(project: Path, attr: str) -> tuple[dict[str, Any], Any]:
    out = project / f"{attr}.json"
    res = runner.invoke(
        app,
        [
            "battery",
            "run",
            f"{project / 'foreign_agent.py'}:{attr}",
            "--trials",
            "2",
            "--db",
            str(project / f"{attr}.db"),
            "--out",
            str(out),
        ],
    )
    assert out.exists(), res.output
    return json.loads(out.read_text(encoding="utf-8")), res


@pytest.fixture(scope="module", params=["make_graph", "blind"])
def unobserved(request: pytest.FixtureRequest, project: Path) -> tuple[dict[str, Any], Any, str]:
    return (*_run(project, request.param), request.param)


def _injected(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for t in report["trials"] for f in (t.get("verdict") or {}).get("faults") or ()]


def test_injected_faults_without_model_events_are_unobserved_not_undelivered(
    project: Path, unobserved: tuple[dict[str, Any], Any, str]
) -> None:
    report, res, attr = unobserved
    validate_report(report)
    faults = _injected(report)
    # The faults were injected (the tool boundary was hooked) and no receipt could be made.
    assert faults, "expected faults injected at the tool boundary"
    assert {f["receipt"] for f in faults} == {"no_model_events"}
    assert all(f["delivered"] is None for f in faults)
    assert report["verdict"] != "SAFE"
    for name in ("frr", "irs"):
        assert report["metrics"][name] is None
        assert report["undefined"][name] == "delivery_unobserved"
    fd = report["fault_delivery"]
    assert fd["injected"] == len(faults) and fd["delivered"] == 0
    injected_types = {
        t["fault_type"] for t in report["trials"] if (t.get("verdict") or {}).get("faults")
    }
    for name in injected_types:
        entry = fd["by_fault_type"][name]
        assert entry["measured"] is False and entry["reason"] == "delivery_unobserved"
        assert report["breakdowns"]["fault_type"][name]["undefined"]["rate"] == (
            "delivery_unobserved"
        )
    injected_scenarios = {
        t["scenario_index"] for t in report["trials"] if (t.get("verdict") or {}).get("faults")
    }
    for s in report["scenarios"]:
        if s["scenario_index"] in injected_scenarios:
            assert s["measured"] is False and s["undefined"]["frr"] == "delivery_unobserved"
        elif not s["is_nominal"]:
            # Nothing was injected here (a probabilistic fault never fired): not delivered.
            assert s["undefined"]["frr"] == "no_fault_delivered"
    # Words: nowhere does hbeval claim the faults did not arrive or were not seen.
    words = " ".join(report["verdict_reasons"]) + " " + (report["verdict_fix"] or "")
    assert "none was seen by the model" not in words
    assert "delivery could not be observed" in words
    assert "no model call was recorded" in report["verdict_fix"]
    assert "payload was seen" not in report["verdict_fix"]
    assert "no model call" in res.stderr and "faultable boundary" not in res.stderr
    assert "delivery_unobserved" in res.stdout
    html = render_html({"r": validate_report(report)})
    assert "delivery_unobserved" in html and "cannot be seen" in html
    gate = runner.invoke(app, ["gate", str(project / f"{attr}.json")])
    assert gate.exit_code != 0


def test_the_same_agent_recording_its_model_is_measured(project: Path) -> None:
    report, _ = _run(project, "seen")
    fd = report["fault_delivery"]
    assert fd["delivered"] > 0
    assert report["undefined"].get("frr") is None
    for name in ("tool_failure", "adversarial"):
        assert fd["by_fault_type"][name]["measured"] is True, name


def test_compare_refuses_with_the_unobserved_reason(project: Path) -> None:
    blind, _ = _run(project, "blind")
    seen, _ = _run(project, "seen")
    assert blind["fingerprints"]["measurement"] == seen["fingerprints"]["measurement"]
    result = compare_reports(
        validate_report(seen), validate_report(blind), labels=("seen", "blind")
    )
    row = result["fault_types"]["tool_failure"]
    assert row["change"] is None and row["undefined"]["change"] == "delivery_unobserved"
    assert "recorded no model call" in row["refused"]
    assert result["metrics"]["frr"]["change"] is None


def test_scenarios_with_no_scored_trial_say_so(tmp_path: Path) -> None:
    """Every trial failing before it ran: the scenarios are not measured because no trial was
    scored, not because no fault reached the agent."""
    (tmp_path / "broken.py").write_text(
        textwrap.dedent(
            """
            from hbeval_core.contract import Task

            def make():
                raise ValueError("this agent cannot be built")

            tasks = [Task(id="t", question="q", required=["x"])]
            """
        ),
        encoding="utf-8",
    )
    out = tmp_path / "r.json"
    args = ["battery", "run", f"{tmp_path / 'broken.py'}:make", "--trials", "1"]
    res = runner.invoke(app, [*args, "--db", str(tmp_path / "s.db"), "--out", str(out)])
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["verdict"] == "INSUFFICIENT_DATA"
    assert "no trial was scored: no_trials" in res.stdout
    assert "no fault reached the agent" not in res.stdout
    html = render_html({"r": validate_report(report)})
    assert "not measured — no trial was scored" in html
    assert "none reached the agent" not in html
