"""``await arun_battery`` / ``await FaultRun.arun()`` drive a crew through CrewAI's ``akickoff``.

``Crew.kickoff_async`` only runs the synchronous ``kickoff`` on a thread; ``akickoff`` is CrewAI's
native coroutine (crew, tasks and agents awaited; in crewai 1.15 the agent executor still runs
its model and tool steps as synchronous methods on its own threads). These tests run real crews
on the scripted model inside a running event loop and check that every trial of the awaited run
went through ``akickoff`` and none through ``kickoff``, that the loop kept running, and that the
report equals the synchronous run's with the same seed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from hbeval.runner import arun_battery, run_battery
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from tests.adapters.crewai import test_crewai_fixtures as fx  # CrewAI, offline
from tests.adapters.crewai.test_crewai_fixtures import (
    QUESTION_TASK,
    STANDARD_SCRIPT,
    AddTool,
    Agent,
    Crew,
    LookupTool,
    Process,
    ScriptedLLM,
)
from tests.runner.report_compare import without_timings

TASKS = [
    Task(
        id="two_tools",
        question="Look up order A1, then add 2 and 3.",
        verify=lambda final, trace: "done" in str(final),
    )
]


class CountingCrew(Crew):
    """A real crew, counting how it was started (``kickoff`` or ``akickoff``)."""

    counts: Any = None

    def kickoff(self, *args: Any, **kwargs: Any) -> Any:
        self.counts["kickoff"] += 1
        return super().kickoff(*args, **kwargs)

    async def akickoff(self, *args: Any, **kwargs: Any) -> Any:
        self.counts["akickoff"] += 1
        asyncio.get_running_loop()  # awaited on an event loop
        return await super().akickoff(*args, **kwargs)


def factory(native: bool, counts: dict[str, int]) -> Any:
    def build() -> Crew:
        ran: list[str] = []
        lookup, add = LookupTool(), AddTool()
        lookup.ran = add.ran = ran
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
        task = fx.Task(description=QUESTION_TASK, expected_output="the answer", agent=agent)
        crew = CountingCrew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False)
        crew.counts = counts
        return crew

    return build


def battery() -> Battery:
    return Battery.hbeval(n_scenarios=18, seed=42)


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_arun_battery_awaits_akickoff_and_gives_run_batterys_report(native: bool) -> None:
    from hbeval_crewai import CrewAIAdapter

    sync_counts = {"kickoff": 0, "akickoff": 0}
    expected = run_battery(
        CrewAIAdapter(), factory(native, sync_counts), TASKS, battery(), trials=1, seed=42
    ).to_dict()
    assert sync_counts == {"kickoff": 18, "akickoff": 0}

    async_counts = {"kickoff": 0, "akickoff": 0}

    async def main() -> tuple[dict[str, Any], int]:
        ticks: list[float] = []

        async def heartbeat() -> None:
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(heartbeat())
        try:
            report = (
                await arun_battery(
                    CrewAIAdapter(),
                    factory(native, async_counts),
                    TASKS,
                    battery(),
                    trials=1,
                    seed=42,
                    concurrency=4,
                )
            ).to_dict()
            return report, len(ticks)
        finally:
            beat.cancel()

    report, ticks = asyncio.run(main())
    # Every trial of the awaited run took CrewAI's native coroutine path.
    assert async_counts == {"kickoff": 0, "akickoff": 18}
    assert ticks >= 3  # the caller's loop kept running while the battery was awaited
    assert report["run"]["executor"] == "async"
    assert any(t["outcome"] == "pass" for t in report["trials"])
    delivery = report["fault_delivery"]
    assert delivery["delivered"] > 0 and delivery["delivered"] == delivery["injected"]
    assert without_timings(report) == without_timings(expected)


def test_fault_run_arun_equals_run_with_memory() -> None:
    from hbeval_crewai import FaultRun, ListMemory

    counts = {"kickoff": 0, "akickoff": 0}
    runs: list[tuple[dict[str, Any], list[dict[str, Any]], list[Any]]] = []
    for awaited in (False, True):
        memory = ListMemory()
        run = FaultRun(
            factory(False, counts),
            tasks=TASKS,
            battery=Battery.hbeval(n_scenarios=6, seed=42),
            trials=2,
            seed=42,
            memory=memory,
        )
        report = (asyncio.run(run.arun()) if awaited else run.run()).to_dict()
        runs.append((report, run.episodes, memory.admitted))
        assert counts["akickoff" if awaited else "kickoff"] == 12
        assert counts["kickoff" if awaited else "akickoff"] == 0
        counts.update(kickoff=0, akickoff=0)
    (sync_report, sync_episodes, sync_admitted), (report, episodes, admitted) = runs
    assert without_timings(report) == without_timings(sync_report)
    assert [e["trial_key"] for e in episodes] == [e["trial_key"] for e in sync_episodes]
    assert [e["admitted"] for e in episodes] == [e["admitted"] for e in sync_episodes]
    assert len(admitted) == len(sync_admitted) > 0
