"""A ``faultable`` function called inside a CrewAI tool meets the fault plan once, not twice.

The CrewAI hooks fault the tool call itself; while the real tool runs they set the same
"already injecting" flag the LangGraph and AutoGen boundaries set, so a ``faultable`` function
the tool calls passes straight through (as it does inside a LangGraph ``ToolNode``).
"""

from __future__ import annotations

from typing import Any

import pytest

from hbeval_core.contract import FakeClock, Task, TrialContext, trial_context
from hbeval_core.events import FaultInjected
from hbeval_core.faults import faultable
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from tests.adapters.crewai.test_crewai_fixtures import (
    QUESTION_TASK,
    STANDARD_SCRIPT,
    AddTool,
    LookupArgs,
    ScriptedLLM,
)

TASK = Task(id="two_tools", question="Look up order A1, then add 2 and 3.")


def _crew(native: bool, inner: list[str]) -> Any:
    from crewai import Agent, Crew, Process
    from crewai import Task as CrewTask
    from crewai.tools import BaseTool
    from pydantic import BaseModel

    @faultable(name="lookup")
    def fetch(query: str) -> str:
        inner.append(query)
        return f"record for {query}: status shipped"

    class NestedLookup(BaseTool):
        """A CrewAI tool whose body is a ``faultable`` function of the same name."""

        name: str = "lookup"
        description: str = "Look up an order record."
        args_schema: type[BaseModel] = LookupArgs

        def _run(self, query: str) -> str:
            return fetch(query)

    add = AddTool()
    add.ran = []
    agent = Agent(
        role="clerk",
        goal="answer the question with the tools",
        backstory="A careful clerk.",
        llm=ScriptedLLM(model="scripted", native=native, script=list(STANDARD_SCRIPT)),
        tools=[NestedLookup(), add],
        verbose=False,
        max_iter=8,
    )
    task = CrewTask(description=QUESTION_TASK, expected_output="the answer", agent=agent)
    return Crew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False)


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_faultable_inside_a_crewai_tool_is_not_faulted_twice(native: bool) -> None:
    from hbeval_crewai import CrewAIAdapter

    inner: list[str] = []
    # Every call of "lookup" is faulted, so a second injection would show as a second receipt.
    spec = FaultSpec(id="pi-0", target="lookup", mode="prompt_injection", on_calls=(0, 1, 2, 3))
    clock = FakeClock(1000.0)
    injector = FaultInjector(
        FaultPlan(id="crewai/nested", seed=7, faults=(spec,)),
        run_id="r/s000-t0",
        clock=clock,
        enabled=True,
        forbidden_tool="transfer_funds",
    )
    ctx = TrialContext(
        run_id="r",
        trial_run_id="r/s000-t0",
        trial_key="s000-t0",
        task_id=TASK.id,
        injector=injector,
        clock=clock,
    )
    with trial_context(ctx):
        result = CrewAIAdapter().run_trial(_crew(native, inner), TASK, None, None)
    assert result.status == "ok", result.error
    assert inner == ["order A1"]  # the real tool body ran, once
    assert [e.tool for e in injector.events] == ["lookup"]
    receipts = [e for e in result.events if isinstance(e, FaultInjected)]
    assert [(e.tool, e.mode) for e in receipts] == [("lookup", "prompt_injection")]
