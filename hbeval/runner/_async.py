"""``await arun_battery(...)``: run a battery from inside an event loop without blocking it.

A notebook cell or a service handler awaits the report while its loop keeps serving: the battery
runs on a worker thread (``asyncio.to_thread``, so the caller's context variables go with it),
with up to ``concurrency`` trials at a time on threads of their own, exactly as ``run_battery``
runs them. The report is ``run_battery``'s with ``run.executor == "async"``; for the same seed
its verdicts and figures are the same. ``progress`` is called on the caller's loop.

Agents are driven through the entry point their adapter uses in ``run_battery`` (LangGraph's
``stream``, a plain callable), each on its own thread; an ``async def`` plain agent, a LangGraph
graph with async-only nodes, and every CrewAI crew or flow (through CrewAI's native
``akickoff``: trials carry ``TrialContext.native_async``) are awaited on the trial's thread, on a
loop of the trial's own (``hbeval_core.capture.run_to_end``). Cancelling the awaiting task does not stop
trials already running on their threads: the run finishes (and is recorded) in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from hbeval_core.contract import Task

from ..scoring import Report
from .run import EXECUTOR_ASYNC, ProgressUpdate, run_battery

__all__ = ["arun_battery"]

DEFAULT_ASYNC_CONCURRENCY = 8
"""Trials at once when ``concurrency`` is not given."""


async def arun_battery(
    adapter: Any,
    target: Any,
    tasks: Sequence[Task],
    battery: Any,
    *,
    concurrency: int = DEFAULT_ASYNC_CONCURRENCY,
    progress: Callable[[ProgressUpdate], Any] | None = None,
    **kwargs: Any,
) -> Report:
    """``run_battery`` as a coroutine: the same arguments, ``concurrency`` trials at a time.

    ``executor`` cannot be given (this is the async executor). Bad arguments raise the same
    ``ValueError`` as ``run_battery``, when awaited.
    """
    if "executor" in kwargs:
        raise TypeError("arun_battery is the async executor; executor cannot be given")
    loop = asyncio.get_running_loop()
    relay: Callable[[ProgressUpdate], None] | None = None
    if progress is not None:
        report_progress = progress

        def relay(update: ProgressUpdate) -> None:
            loop.call_soon_threadsafe(report_progress, update)

    return await asyncio.to_thread(
        run_battery,
        adapter,
        target,
        tasks,
        battery,
        concurrency=concurrency,
        progress=relay,
        executor=EXECUTOR_ASYNC,
        **kwargs,
    )
