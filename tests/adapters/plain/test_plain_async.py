"""A plain agent written ``async def``: each trial awaits it (it was once called and its
coroutine object taken for the answer), with faults reaching its awaited tools."""

from __future__ import annotations

import asyncio
from typing import Any

from hbeval.runner.run import run_battery
from hbeval_core.contract import Task
from hbeval_core.events import FaultInjected, ToolStart
from hbeval_core.faults import faultable
from hbeval_core.faults.battery import Battery
from hbeval_core.faults.plans import FaultPlan, FaultSpec
from hbeval_core.faults.runtime import FaultInjector
from hbeval_plain import PlainAdapter

RAN: list[str] = []


@faultable
async def weather(city: str) -> str:
    await asyncio.sleep(0)
    RAN.append(city)
    return f"{city}: 21C, sunny"


async def agent(question: str) -> str:
    try:
        return await weather(city="Lisbon")
    except Exception as exc:
        return f"no weather ({type(exc).__name__})"


async def broken(question: str) -> str:
    await asyncio.sleep(0)
    raise ValueError("the forecast service is gone")


TASK = Task(id="w", question="Weather in Lisbon?", required=("sunny",))


def run(target: Any, injector: FaultInjector | None = None) -> Any:
    RAN.clear()
    adapter = PlainAdapter()
    adapter.fault_hook(injector)
    try:
        return adapter.run_trial(target, TASK, None, None)
    finally:
        adapter.fault_hook(None)


def test_an_async_agent_is_awaited_and_its_tool_recorded() -> None:
    result = run(agent)
    assert result.status == "ok", result.error
    assert result.response_text == "Lisbon: 21C, sunny"
    assert RAN == ["Lisbon"]
    assert [e.tool for e in result.events if isinstance(e, ToolStart)] == ["weather"]


def test_a_fault_reaches_an_awaited_tool() -> None:
    spec = FaultSpec(id="e", target="weather", mode="error_5xx", on_calls=(0,))
    injector = FaultInjector(FaultPlan(id="p", seed=1, faults=(spec,)), run_id="w", enabled=True)
    result = run(agent, injector)
    assert result.status == "ok", result.error
    assert RAN == []
    assert [e.mode for e in result.events if isinstance(e, FaultInjected)] == ["error_5xx"]
    assert (result.response_text or "").startswith("no weather")


def test_an_async_agent_that_raises_ends_its_trial_with_the_error() -> None:
    result = run(broken)
    assert result.status == "error"
    assert result.error == "ValueError: the forecast service is gone"


def test_a_trial_started_inside_a_running_loop_still_awaits_the_agent() -> None:
    async def cell() -> Any:
        return run(agent)

    result = asyncio.run(cell())
    assert result.status == "ok" and result.response_text == "Lisbon: 21C, sunny"


def test_a_battery_of_an_async_agent_passes_its_nominal_trials() -> None:
    report = run_battery(
        None, agent, [TASK], Battery.hbeval(n_scenarios=6, seed=42), trials=1
    ).to_dict()
    nominal = [t for t in report["trials"] if t["is_nominal"]]
    assert nominal and all(t["outcome"] == "pass" for t in nominal)
    assert report["fault_delivery"]["injected"] > 0
