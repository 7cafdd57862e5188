"""Event loops for trials: a fresh loop per fresh agent, a home loop per shared agent.

AutoGen teams bind asyncio queues to the loop of their first run, so a team shared by several
trials cannot hop from one fresh loop to the next (``... is bound to a different event loop``).
Model clients with connection pools have the same habit. So:

* an agent or team built for this trial (run_trial called the factory) runs on a fresh loop
  that is closed when the trial ends;
* an agent or team object handed in by the caller runs on its *home loop*, a daemon thread
  started on first use and stopped when the object is garbage-collected or the adapter closes.
  A factory target (a fresh object per trial) therefore still gets a fresh loop per trial.

Both run the coroutine in a copy of the caller's context, so ``current_trial()`` and the active
recorder are visible inside.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["HomeLoops", "release_connections", "run_on_fresh_loop"]

T = TypeVar("T")

_CLEANUP_SECONDS = 2.0


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _as_coroutine(coro_fn: Callable[[], Awaitable[T]]) -> Coroutine[Any, Any, T]:
    """``coro_fn()`` as a coroutine (what ``create_task`` takes), wrapping other awaitables."""
    made = coro_fn()
    return made if inspect.iscoroutine(made) else _await(made)


def _finish_loop(loop: asyncio.AbstractEventLoop, executor: concurrent.futures.Executor) -> None:
    """Cancel what is left on ``loop`` (bounded wait), then close it and its executor."""
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=_CLEANUP_SECONDS))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        # Do not wait for executor threads: a sync tool that never returns must not hang us.
        executor.shutdown(wait=False, cancel_futures=True)
        loop.close()


def _run_here(coro_fn: Callable[[], Awaitable[T]]) -> T:
    loop = asyncio.new_event_loop()
    executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="hbeval-autogen-tool")
    loop.set_default_executor(executor)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(_as_coroutine(coro_fn))
    finally:
        try:
            _finish_loop(loop, executor)
        finally:
            asyncio.set_event_loop(None)


def run_on_fresh_loop(coro_fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``coro_fn()`` to completion on a new event loop, closed afterwards.

    From a thread that already runs a loop, the work moves to a helper thread (with a copy of
    the caller's context), since a loop cannot be nested.
    """
    try:
        asyncio.get_running_loop()
        nested = True
    except RuntimeError:
        nested = False
    if not nested:
        return _run_here(coro_fn)
    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ctx.run, _run_here, coro_fn).result()


class _LoopThread:
    """A daemon thread running one event loop until ``stop()``."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix=f"{name}-tool")
        self.loop.set_default_executor(self.executor)
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            _finish_loop(self.loop, self.executor)

    def run(self, coro_fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``coro_fn()`` on this loop in a copy of the caller's context; wait for it."""
        ctx = contextvars.copy_context()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def start() -> None:
            try:
                task: asyncio.Task[T] = ctx.run(self.loop.create_task, _as_coroutine(coro_fn))
            except BaseException as exc:
                done.set_exception(exc)
                return

            def relay(t: asyncio.Task[T]) -> None:
                if t.cancelled():
                    done.set_exception(concurrent.futures.CancelledError())
                    return
                error = t.exception()
                if error is not None:
                    done.set_exception(error)
                else:
                    done.set_result(t.result())

            task.add_done_callback(relay)

        self.loop.call_soon_threadsafe(start)
        return done.result()

    def stop(self) -> None:
        """Stop the loop (its thread then closes it)."""
        if not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:
                pass


class HomeLoops:
    """One home loop per shared agent or team object, stopped when the object goes away."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[Any, _LoopThread] = weakref.WeakKeyDictionary()
        self._all: list[_LoopThread] = []

    def run(self, owner: Any, coro_fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``coro_fn()`` on ``owner``'s home loop (started on first use)."""
        with self._lock:
            self._all = [h for h in self._all if h.thread.is_alive()]
            home = self._loops.get(owner)
            if home is None:
                home = _LoopThread(f"hbeval-autogen-{type(owner).__name__}")
                self._loops[owner] = home
                self._all.append(home)
                weakref.finalize(owner, home.stop)
        return home.run(coro_fn)

    def close(self) -> None:
        """Stop every home loop."""
        with self._lock:
            loops, self._all = self._all, []
            self._loops = weakref.WeakKeyDictionary()
        for home in loops:
            home.stop()


_RELEASE_SECONDS = 2.0
_CLIENT_LINKS = ("_model_client", "inner", "_inner", "_client", "client")


def _members(agent: Any) -> list[Any]:
    """``agent`` and, for a team, its participants (nested teams included)."""
    out, pending, seen = [], [agent], set()
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        out.append(item)
        pending.extend(getattr(item, "_participants", None) or ())
        inner_team = getattr(item, "_team", None)
        if inner_team is not None:
            pending.append(inner_team)
    return out


def _http_clients(agent: Any) -> list[Any]:
    """The ``httpx.AsyncClient`` objects behind the model clients of ``agent``'s members."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - every provider client installs it
        return []
    found: list[Any] = []
    seen: set[int] = set()
    pending = [(m, 0) for m in _members(agent)]
    while pending:
        obj, depth = pending.pop()
        if obj is None or id(obj) in seen or depth > 5:
            continue
        seen.add(id(obj))
        if isinstance(obj, httpx.AsyncClient):
            found.append(obj)
            continue
        for name in _CLIENT_LINKS:
            pending.append((getattr(obj, name, None), depth + 1))
    return found


async def release_connections(agent: Any) -> None:
    """Close the HTTP connections ``agent``'s model clients opened on the running loop.

    A fresh loop is closed when its trial ends; a pooled connection left on it is closed later,
    from whatever loop garbage-collects the client, and asyncio then reports "Task exception
    was never retrieved ... Event loop is closed". Only the connection pools are emptied: the
    clients stay open and usable (a client shared by several trials opens new connections on
    the next trial's loop). Errors are swallowed: this is cleanup.
    """
    for client in _http_clients(agent):
        transports = [getattr(client, "_transport", None)]
        transports.extend((getattr(client, "_mounts", None) or {}).values())
        for transport in transports:
            pool = getattr(transport, "_pool", None)
            close = getattr(pool, "aclose", None)
            if close is None:
                continue
            try:
                await asyncio.wait_for(close(), _RELEASE_SECONDS)
            except Exception:
                continue
