"""A hand-built LangGraph agent (its own node calls ``tool.invoke(args)``) meets the battery's faults.

The agent in tests/fixtures/langgraph_custom_node_agent.py has no ToolNode: before the
``BaseTool`` hook its battery ran un-faulted and still printed a verdict. These tests run it
through the real battery, from the command line as a user would and in process beside the same
agent built with ``ToolNode``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from hbeval.runner.run import run_battery

AGENT = (
    Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "langgraph_custom_node_agent.py"
)
HBEVAL = Path(sys.executable).parent / "hbeval"


def _faults(report: dict[str, Any]) -> list[tuple[str, int, str, str, bool | None]]:
    """(fault type, scenario, mode, tool, delivered) of every fault of every trial."""
    return [
        (t["fault_type"], t["scenario_index"], f["mode"], f["target"], f["delivered"])
        for t in report["trials"]
        for f in t["faults"]
    ]


def _load(attr: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("custom_node_agent_under_test", AGENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attr), module.tasks


def test_battery_run_from_the_command_line_delivers_faults_to_a_custom_node(
    tmp_path: Path,
) -> None:
    out = tmp_path / "report.json"
    env = {**os.environ, "HBEVAL_ALLOW_FAULT_INJECTION": ""}
    proc = subprocess.run(
        [
            str(HBEVAL),
            "battery",
            "run",
            f"{AGENT}:make_graph",
            "--trials",
            "1",
            "--db",
            str(tmp_path / "hb.db"),
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    delivery = report["fault_delivery"]
    assert delivery["injected"] > 0
    assert delivery["delivered"] == delivery["injected"]
    faults = _faults(report)
    # Every fault type of the battery reached the agent with its runtime modes.
    by_type: dict[str, set[str]] = {}
    for fault_type, _, mode, _, delivered in faults:
        assert delivered is True, (fault_type, mode)
        by_type.setdefault(fault_type, set()).add(mode)
    assert by_type["tool_failure"] == {"error_5xx"}
    assert by_type["context_corruption"] == {"malformed"}
    assert by_type["adversarial"] == {"prompt_injection"}
    assert by_type["cascade"] == {"timeout", "error_5xx"}
    assert by_type["combined"] == {"error_5xx", "malformed"}
    nominal = [t for t in report["trials"] if t["is_nominal"]]
    assert nominal and all(not t["faults"] for t in nominal)


def test_custom_node_is_faulted_exactly_like_the_toolnode_version() -> None:
    custom, tasks = _load("make_graph")
    prebuilt, _ = _load("make_toolnode_graph")
    a = run_battery(None, custom, tasks, "hbeval", trials=1, seed=42).to_dict()
    b = run_battery(None, prebuilt, tasks, "hbeval", trials=1, seed=42).to_dict()
    assert _faults(a) and _faults(a) == _faults(b)
    assert a["fault_delivery"] == b["fault_delivery"]
    assert [t["outcome"] for t in a["trials"]] == [t["outcome"] for t in b["trials"]]
    # TI: the custom node passed bare arguments, so its tool events carry LangChain run ids;
    # each call is linked to the reply that issued it by name and arguments instead of by id,
    # and TI equals the ToolNode version's, trial by trial.
    assert a["metrics"]["ti"] == b["metrics"]["ti"] == 5.0
    assert [t["verdict"]["metrics"]["ti"] for t in a["trials"]] == [
        t["verdict"]["metrics"]["ti"] for t in b["trials"]
    ]
    ta, tb = a["traceability"], b["traceability"]
    assert ta["calls"] == tb["calls"] > 0
    assert (ta["linked_by_match"], ta["linked_by_id"], ta["unlinked"]) == (ta["calls"], 0, 0)
    assert (tb["linked_by_id"], tb["linked_by_match"], tb["unlinked"]) == (tb["calls"], 0, 0)
    assert ta["explained_share"] == tb["explained_share"] == 1.0
    assert a["evidence"]["level"] == b["evidence"]["level"] == "E2"


def test_a_faultable_function_called_from_a_node_is_faulted_and_recorded() -> None:
    """A tool no framework sees (a plain function a node calls) opts in with ``faultable``."""
    from langchain_core.messages import ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    from hbeval_core.faults import ToolCallError, faultable

    module_graph, tasks = _load("make_graph")
    scripted = module_graph.__globals__["Scripted"]
    script = module_graph.__globals__["SCRIPT"]
    ran: list[str] = []

    @faultable
    def lookup_order(order_id: str) -> str:
        ran.append("lookup_order")
        return f"order {order_id}: shipped, 3 items"

    @faultable(name="stock_level")
    def stock(sku: str) -> int:
        ran.append("stock_level")
        return 12

    functions = {"lookup_order": lookup_order, "stock_level": stock}

    def make() -> Any:
        model = scripted(responses=script)

        def think(state: Any) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        def act(state: Any) -> dict[str, Any]:
            out = []
            for c in state["messages"][-1].tool_calls:
                try:
                    text = str(functions[c["name"]](**c["args"]))
                except ToolCallError as err:
                    text = str(err)
                out.append(ToolMessage(content=text, tool_call_id=c["id"]))
            return {"messages": out}

        g = StateGraph(MessagesState)
        g.add_node("think", think)
        g.add_node("act", act)
        g.add_edge(START, "think")
        g.add_conditional_edges(
            "think", lambda s: "act" if s["messages"][-1].tool_calls else END, ["act", END]
        )
        g.add_edge("act", "think")
        return g.compile()

    make.__hbeval_target_kind__ = "langgraph"  # type: ignore[attr-defined]
    report = run_battery(None, make, tasks, "hbeval", trials=1, seed=42).to_dict()
    prebuilt, _ = _load("make_toolnode_graph")
    reference = run_battery(None, prebuilt, tasks, "hbeval", trials=1, seed=42).to_dict()
    assert report["fault_delivery"]["injected"] > 0
    assert [(m, t, d) for _, _, m, t, d in _faults(report)] == [
        (m, t, d) for _, _, m, t, d in _faults(reference)
    ]


def test_battery_run_says_in_words_how_calls_were_linked(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            str(HBEVAL),
            "battery",
            "run",
            f"{AGENT}:make_graph",
            "--trials",
            "1",
            "--scenarios",
            "6",
            "--db",
            str(tmp_path / "hb.db"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "traceability:" in x)
    # Every call the node ran was linked by name and arguments; the script explains each one.
    assert "explained share 1.000" in line
    assert (
        "were linked by tool name and arguments (the framework passed no model tool-call id)"
        in (line)
    )
    assert "TI 5.000" in proc.stdout
