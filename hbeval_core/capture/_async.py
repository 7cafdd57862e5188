"""Run an agent's coroutine to its end from the synchronous trial thread.

Trials run on threads of their own; an agent that is a coroutine function (a plain ``async def``
agent, a LangGraph graph with async-only nodes) is awaited here on an event loop of the trial's
own. The trial's context variables (its fault injector, its capture scope) go with it: a new
task copies the current context. When the calling thread already runs a loop (a notebook calling
``run_trial`` directly) the coroutine runs on a helper thread with a copy of this context.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["run_to_end"]

T = TypeVar("T")


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def run_to_end(awaitable: Awaitable[T]) -> T:
    """The awaitable's result (or its exception), waited for from synchronous code."""
    coro: Any = awaitable if asyncio.iscoroutine(awaitable) else _awaited(awaitable)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        result: T = asyncio.run(coro)
        return result
    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hbeval-async") as pool:
        done: T = pool.submit(ctx.run, asyncio.run, coro).result()
        return done
