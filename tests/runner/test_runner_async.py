"""``await arun_battery`` on the LangGraph support agent, inside a running event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from hbeval.runner import arun_battery, run_battery
from hbeval.store import InMemoryStore
from hbeval_core.faults import Battery

from .report_compare import without_timings

pytest.importorskip("langgraph")


def battery() -> Battery:
    return Battery.hbeval(n_scenarios=6, seed=42)


def test_arun_battery_gives_run_batterys_report_without_blocking_the_loop() -> None:
    from hbeval_langgraph import LangGraphAdapter
    from hbeval_langgraph.examples import careful, tasks

    expected = run_battery(
        LangGraphAdapter(), careful, tasks, battery(), trials=2, seed=42
    ).to_dict()

    async def main() -> tuple[dict[str, Any], list[float], list[Any]]:
        ticks: list[float] = []
        updates: list[Any] = []
        loop_thread = threading.get_ident()

        def on_progress(update: Any) -> None:
            assert threading.get_ident() == loop_thread  # delivered on the caller's loop
            updates.append(update)

        async def heartbeat() -> None:
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(heartbeat())
        try:
            report = (
                await arun_battery(
                    LangGraphAdapter(),
                    careful,
                    tasks,
                    battery(),
                    trials=2,
                    seed=42,
                    store=InMemoryStore(),
                    concurrency=4,
                    progress=on_progress,
                )
            ).to_dict()
            during = len(ticks)  # heartbeats that ran while the battery was awaited
            await asyncio.sleep(0.05)  # let the last progress call land
        finally:
            beat.cancel()
        return report, ticks[:during], updates

    report, ticks, updates = asyncio.run(main())
    assert report["run"]["executor"] == "async" and report["run"]["nodes"] == []
    assert without_timings(report) == without_timings(expected)
    # A blocked loop runs no heartbeat until the battery is over: at most the first one.
    assert len(ticks) >= 3
    assert updates and updates[-1].done == updates[-1].total == 12


def test_arun_battery_refuses_an_executor() -> None:
    with pytest.raises(TypeError, match="async executor"):
        asyncio.run(arun_battery(None, lambda: None, [], battery(), executor="ray"))
