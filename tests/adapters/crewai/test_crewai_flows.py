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
from crewai import Agent, Crew, Process
from crewai import Task as CrewTask
from crewai.flow.flow import Flow, listen, start
from hbeval_crewai import CrewAIAdapter, is_crewai_target, resolve_crew
from typer.testing import CliRunner

from hbeval_core.cli import app
from hbeval_core.derive import derive_steps
from hbeval_core.events import FaultInjected, ModelStart, RunEnd, RunStart
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_core.runner import Task
from hbeval_core.scoring import analyse_trace
from tests.adapters.crewai.test_crewai_fixtures import (
    STANDARD_SCRIPT,
    AddTool,
    LookupTool,
    ScriptedLLM,
    scripted_crew,
)

RAN: list[str] = []

tasks = [Task(id="lookup", question="Look up order A1, then add 2 and 3.", required=("done",))]
"""The battery's task list when this file is the target's module."""


class Desk(Flow):  # type: ignore[type-arg]
    """Triage, then a crew answers; the crew is built inside the flow, as users write them."""

    @start()
    def triage(self) -> str:
        return "order A1"

    @listen(triage)
    def solve(self, what: str) -> str:
        crew = scripted_crew()
        out = crew.kickoff(inputs={"question": f"Look up {what}, then add 2 and 3."})
        RAN.extend(crew.agents[0].tools[0].ran)  # type: ignore[attr-defined]
        return str(out.raw)


def make_flow() -> Desk:
    return Desk()


def make_hierarchical_crew() -> Crew:
    """A manager (from ``manager_llm``) delegates the whole question to the clerk."""
    lookup, add = LookupTool(), AddTool()
    lookup.ran = add.ran = RAN
    clerk = Agent(
        role="clerk",
        goal="answer the question with the tools",
        backstory="A careful clerk.",
        llm=ScriptedLLM(model="scripted", script=list(STANDARD_SCRIPT)),
        tools=[lookup, add],
        allow_delegation=False,
        verbose=False,
        max_iter=8,
    )
    manager = ScriptedLLM(
        model="scripted-manager",
        script=[
            (
                "The clerk has the tools for this, so I hand it over.",
                "Delegate work to coworker",
                {
                    "task": "Look up order A1, then add 2 and 3.",
                    "context": "a customer asks",
                    "coworker": "clerk",
                },
            ),
            ("The clerk answered: done", None, {}),
        ],
    )
    task = CrewTask(description="Answer this: {question}", expected_output="the answer")
    return Crew(
        agents=[clerk],
        tasks=[task],
        process=Process.hierarchical,
        manager_llm=manager,
        verbose=False,
    )


def run(target: Any, fault_on: str | None = None) -> Any:
    RAN.clear()
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
    assert is_crewai_target(Desk()) and is_crewai_target(make_flow)
    assert isinstance(resolve_crew(make_flow), Desk)
    result = run(make_flow)
    assert result.status == "ok", result.error
    assert result.response_text == "done"
    assert RAN == ["lookup", "add"]
    assert len([e for e in result.events if isinstance(e, RunStart)]) == 1
    assert len([e for e in result.events if isinstance(e, RunEnd)]) == 1
    steps = derive_steps(result.events)
    assert [(s.tool, s.success, s.traceable) for s in steps] == [
        ("lookup", True, True),
        ("add", True, True),
    ]


def test_a_fault_reaches_a_crew_inside_a_flow_and_is_delivered() -> None:
    result = run(make_flow, fault_on="lookup")
    assert result.status == "ok", result.error
    assert RAN == ["add"]  # the faulted lookup never ran
    (fault,) = [e for e in result.events if isinstance(e, FaultInjected)]
    assert fault.tool == "lookup"
    (record,) = analyse_trace(result.events).faults
    assert record.delivered is True, record.receipt


def test_a_factory_returning_something_else_names_both_kinds() -> None:
    with pytest.raises(TypeError, match=r"crewai\.Crew or a crewai\.flow\.Flow"):
        resolve_crew(lambda: object())


def test_the_manager_of_a_hierarchical_crew_is_recorded_and_its_delegation_explained() -> None:
    result = run(make_hierarchical_crew)
    assert result.status == "ok", result.error
    assert RAN == ["lookup", "add"]
    models = [e for e in result.events if isinstance(e, ModelStart)]
    # Manager: delegate, then answer; clerk: lookup, add, answer.
    assert len(models) == 5
    steps = {s.tool: s for s in derive_steps(result.events)}
    assert set(steps) == {"delegate_work_to_coworker", "lookup", "add"}
    # The manager's own words explain its delegation: the link needs its model call recorded.
    assert all(s.traceable for s in steps.values())
    assert result.response_text == "The clerk answered: done"


def test_a_fault_reaches_the_worker_under_a_manager() -> None:
    result = run(make_hierarchical_crew, fault_on="lookup")
    assert result.status == "ok", result.error
    assert RAN == ["add"]
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
