"""CrewAI targets beyond one sequential crew: a ``Flow`` that kicks off crews from its methods,
and a hierarchical crew whose manager (built from ``manager_llm`` inside the kickoff) delegates.

Real CrewAI throughout; only the models are scripted (``ScriptedLLM``), emitting real tool calls,
including the manager's call to CrewAI's own delegation tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.scoring import analyse_trace
from hbeval_core.contract import Task
from hbeval_core.events import FaultInjected, ModelStart, RunEnd, RunStart
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_core.live.derive import derive_steps

# The fixtures put CrewAI offline before anything imports it.
from tests.adapters.crewai.test_crewai_fixtures import (
    hierarchical_crew,
    shape_ran_tools,
    standard_flow,
)

tasks = [Task(id="lookup", question="Look up order A1, then add 2 and 3.", required=("done",))]
"""The battery's task list when this file is the target's module."""


def make_flow() -> Any:
    return standard_flow()


def run(target: Any, fault_on: str | None = None) -> Any:
    from hbeval_crewai import CrewAIAdapter

    adapter = CrewAIAdapter()
    if fault_on is not None:
        spec = FaultSpec(id="e", target=fault_on, mode="error_5xx", on_calls=(0,))
        plan = FaultPlan(id="crewai/error", seed=1, faults=(spec,))
        adapter.fault_hook(FaultInjector(plan, run_id="t", enabled=True))
    try:
        return adapter.run_trial(target, Task(id="t", question="Look up order A1."), None, None)
    finally:
        adapter.fault_hook(None)


def test_a_flow_is_a_target_and_its_crews_are_recorded_as_one_trial() -> None:
    from crewai.flow.flow import Flow

    from hbeval_crewai import is_crewai_target, resolve_crew

    flow = standard_flow()
    assert is_crewai_target(flow)
    assert isinstance(resolve_crew(lambda: flow), Flow)
    result = run(flow)
    assert result.status == "ok", result.error
    assert result.response_text == "done"
    assert shape_ran_tools(flow) == ["lookup", "add"]
    assert len([e for e in result.events if isinstance(e, RunStart)]) == 1
    assert len([e for e in result.events if isinstance(e, RunEnd)]) == 1
    steps = derive_steps(result.events)
    assert [(s.tool, s.success, s.traceable) for s in steps] == [
        ("lookup", True, True),
        ("add", True, True),
    ]


def test_a_fault_reaches_a_crew_inside_a_flow_and_is_delivered() -> None:
    flow = standard_flow()
    result = run(flow, fault_on="lookup")
    assert result.status == "ok", result.error
    assert shape_ran_tools(flow) == ["add"]  # the faulted lookup never ran
    (fault,) = [e for e in result.events if isinstance(e, FaultInjected)]
    assert fault.tool == "lookup"
    (record,) = analyse_trace(result.events).faults
    assert record.delivered is True, record.receipt


def test_a_factory_returning_something_else_names_both_kinds() -> None:
    from hbeval_crewai import resolve_crew

    with pytest.raises(TypeError, match=r"crewai\.Crew or a crewai\.flow\.Flow"):
        resolve_crew(lambda: object())


def test_the_manager_of_a_hierarchical_crew_is_recorded_and_its_delegation_explained() -> None:
    crew = hierarchical_crew()
    result = run(crew)
    assert result.status == "ok", result.error
    assert shape_ran_tools(crew) == ["lookup", "add"]
    models = [e for e in result.events if isinstance(e, ModelStart)]
    # Manager: delegate, then answer; clerk: lookup, add, answer.
    assert len(models) == 5
    steps = {s.tool: s for s in derive_steps(result.events)}
    assert set(steps) == {"delegate_work_to_coworker", "lookup", "add"}
    # The manager's own words explain its delegation: the link needs its model call recorded.
    assert all(s.traceable for s in steps.values())
    assert result.response_text == "The clerk answered: done"


def test_a_fault_reaches_the_worker_under_a_manager() -> None:
    crew = hierarchical_crew()
    result = run(crew, fault_on="lookup")
    assert result.status == "ok", result.error
    assert shape_ran_tools(crew) == ["add"]
    (record,) = analyse_trace(result.events).faults
    assert record.event.tool == "lookup" and record.delivered is True, record.receipt


def test_a_battery_runs_a_flow_factory_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        app,
        [
            "battery",
            "run",
            f"{Path(__file__)}:make_flow",
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
    report = json.loads(out.read_text(encoding="utf-8"))
    trials = report["trials"]
    assert len(trials) == 6
    assert all(t["outcome"] in ("pass", "fail") for t in trials), [t["outcome"] for t in trials]
    assert report["fault_delivery"]["injected"] > 0
