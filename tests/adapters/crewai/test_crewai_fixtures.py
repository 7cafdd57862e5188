"""Scripted CrewAI crews for the CrewAI adapter tests, offline and outside the home folder.

Importing this module points CrewAI's telemetry switches, data folders and ``HOME`` at a fresh
temporary folder *before* CrewAI is imported (some of its paths are computed at import), so the
tests write nothing under the real home folder. CrewAI itself is imported once per session.

``scripted_crew(native=...)`` runs the conformance suite's standard script: explain and call
``lookup(query="order A1")``, explain and call ``add(a=2, b=3)``, answer ``done``. The scripted
model decides each reply from the messages it receives (how many tool results it has read), so
the same object serves any number of runs on either tool path.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from hbeval_crewai import offline_environment

_REAL_HOME = os.path.expanduser("~")
ORIGINAL_HOME_STATE = {
    path: os.path.exists(path)
    for path in (
        os.path.join(_REAL_HOME, ".local", "share", "crewai"),
        os.path.join(_REAL_HOME, ".config", "crewai"),
        os.path.join(_REAL_HOME, ".crewai"),
    )
}
"""Whether CrewAI's folders existed under the real home folder before these tests ran."""

OFFLINE_ROOT = offline_environment()
"""The temporary folder CrewAI writes to during these tests."""

crewai = pytest.importorskip("crewai")

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

from hbeval_crewai.testing import ScriptedLLM  # noqa: E402

QUESTION_TASK = "Answer this: {question}"
"""Task description of the scripted crew; a battery question is interpolated into it."""


STANDARD_SCRIPT: list[tuple[str, str | None, dict[str, Any]]] = [
    ("I need the order record first, so I look it up.", "lookup", {"query": "order A1"}),
    ("The lookup answered; now I add the two numbers.", "add", {"a": 2, "b": 3}),
    ("done", None, {}),
]


class LookupArgs(BaseModel):
    query: str = Field(description="What to look up.")


class AddArgs(BaseModel):
    a: int = Field(description="First number.")
    b: int = Field(description="Second number.")


class LookupTool(BaseTool):
    """Looks an order up (records each real call in ``ran``)."""

    name: str = "lookup"
    description: str = "Look up an order record."
    args_schema: type[BaseModel] = LookupArgs
    ran: Any = None

    def _run(self, query: str) -> str:
        self.ran.append("lookup")
        return f"record for {query}: status shipped"


class AddTool(BaseTool):
    """Adds two numbers (records each real call in ``ran``)."""

    name: str = "add"
    description: str = "Add two numbers."
    args_schema: type[BaseModel] = AddArgs
    ran: Any = None

    def _run(self, a: int, b: int) -> int:
        self.ran.append("add")
        return a + b


def scripted_crew(
    *, native: bool = False, script: list[tuple[str, str | None, dict[str, Any]]] | None = None
) -> Crew:
    """A one-agent crew running ``script`` (the standard one by default) on a scripted model."""
    ran: list[str] = []
    lookup, add = LookupTool(), AddTool()
    # Assigned after construction: pydantic would copy a list given to the constructor.
    lookup.ran = add.ran = ran
    llm = ScriptedLLM(model="scripted", native=native, script=list(script or STANDARD_SCRIPT))
    agent = Agent(
        role="clerk",
        goal="answer the question with the tools",
        backstory="A careful clerk.",
        llm=llm,
        tools=[lookup, add],
        verbose=False,
        max_iter=8,
    )
    task = Task(description=QUESTION_TASK, expected_output="the answer", agent=agent)
    return Crew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False)


def ran_tools(crew: Crew) -> list[str]:
    """Names of the tools whose real body ran on ``crew``, in order."""
    return list(crew.agents[0].tools[0].ran)  # type: ignore[attr-defined]


def scripted_llm(crew: Crew) -> ScriptedLLM:
    """The scripted model of ``crew``'s only agent (under any proxy)."""
    llm = crew.agents[0].llm
    return getattr(llm, "inner", llm)  # type: ignore[no-any-return]


def test_fixture_crews_run_offline_on_both_paths() -> None:
    for native in (False, True):
        crew = scripted_crew(native=native)
        out = crew.kickoff(inputs={"question": "Look up order A1, then add 2 and 3."})
        assert out.raw.strip().endswith("done")
        assert ran_tools(crew) == ["lookup", "add"]
        assert len(scripted_llm(crew).calls) == 3
    assert str(OFFLINE_ROOT) in os.environ["HOME"]


_DECORATED_RUNS: dict[int, list[str]] = {}


def decorated_tools_crew(*, native: bool = False) -> Crew:
    """The standard crew with its tools written as plain functions under CrewAI's ``@tool``.

    The kind of tool a user writes first; ``decorated_ran_tools`` lists the real calls.
    """
    from crewai.tools import tool

    ran: list[str] = []

    @tool("lookup")
    def lookup(query: str) -> str:
        """Look up an order record."""
        ran.append("lookup")
        return f"record for {query}: status shipped"

    @tool("add")
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append("add")
        return a + b

    llm = ScriptedLLM(model="scripted", native=native, script=list(STANDARD_SCRIPT))
    agent = Agent(
        role="clerk",
        goal="answer the question with the tools",
        backstory="A careful clerk.",
        llm=llm,
        tools=[lookup, add],
        verbose=False,
        max_iter=8,
    )
    task = Task(description=QUESTION_TASK, expected_output="the answer", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False)
    _DECORATED_RUNS[id(crew)] = ran
    return crew


def decorated_ran_tools(crew: Crew) -> list[str]:
    """Names of the tools whose real body ran on a ``decorated_tools_crew``, in order."""
    return list(_DECORATED_RUNS[id(crew)])


_SHAPE_RUNS: dict[int, list[str]] = {}
"""Real tool runs of the flows and hierarchical crews below, by ``id`` of the target."""


def shape_ran_tools(target: Any) -> list[str] | None:
    """Names of the tools whose real body ran under a flow or hierarchical crew built here."""
    ran = _SHAPE_RUNS.get(id(target))
    return None if ran is None else list(ran)


def standard_flow(*, native: bool = False) -> Any:
    """A ``Flow`` that triages, then kicks off the standard crew from one of its methods."""
    from crewai.flow.flow import Flow, listen, start

    ran: list[str] = []

    class Desk(Flow):  # type: ignore[type-arg]
        @start()
        def triage(self) -> str:
            return "Look up order A1, then add 2 and 3."

        @listen(triage)
        def solve(self, question: str) -> str:
            crew = scripted_crew(native=native)
            try:
                return str(crew.kickoff(inputs={"question": question}).raw)
            finally:
                ran.extend(ran_tools(crew))

    flow = Desk()
    _SHAPE_RUNS[id(flow)] = ran
    return flow


def hierarchical_crew(*, native: bool = False) -> Crew:
    """A manager built from ``manager_llm`` delegates the question to a clerk running the
    standard script; the manager's model calls CrewAI's delegation tool, then answers."""
    ran: list[str] = []
    lookup, add = LookupTool(), AddTool()
    lookup.ran = add.ran = ran
    clerk = Agent(
        role="clerk",
        goal="answer the question with the tools",
        backstory="A careful clerk.",
        llm=ScriptedLLM(model="scripted", native=native, script=list(STANDARD_SCRIPT)),
        tools=[lookup, add],
        allow_delegation=False,
        verbose=False,
        max_iter=8,
    )
    delegate = "delegate_work_to_coworker" if native else "Delegate work to coworker"
    manager = ScriptedLLM(
        model="scripted-manager",
        native=native,
        script=[
            (
                "The clerk has the tools for this, so I hand it over.",
                delegate,
                {
                    "task": "Look up order A1, then add 2 and 3.",
                    "context": "a customer asks",
                    "coworker": "clerk",
                },
            ),
            ("The clerk answered: done", None, {}),
        ],
    )
    task = Task(description=QUESTION_TASK, expected_output="the answer")
    crew = Crew(
        agents=[clerk],
        tasks=[task],
        process=Process.hierarchical,
        manager_llm=manager,
        verbose=False,
    )
    _SHAPE_RUNS[id(crew)] = ran
    return crew
