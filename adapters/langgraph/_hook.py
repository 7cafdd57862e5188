"""Capture with no change to user code: a context variable LangChain consults for every run.

``langchain_core.tracers.context.register_configure_hook`` makes LangChain's callback
configuration add whatever handler a context variable holds to every run it starts. We register
our variable once (lazily, on first use; LangChain offers no way to unregister, and an unset
variable costs one ``ContextVar.get`` per run) and then only set and reset its value:

* ``instrument()`` sets it in the caller's context, so every run started from there (and from
  asyncio tasks and LangGraph's worker threads, which copy the context) is recorded;
* ``capture()`` sets it for one ``with`` block, which is how battery trials are isolated.

Threads a user starts by hand do not inherit context variables (Python < 3.14): instrument
inside the thread, or pass the handler in ``config={"callbacks": [...]}``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from hbeval_core.capture import Instrumentor

from ._handler import HBEvalCallbackHandler
from ._version import check_supported

__all__ = [
    "DEFAULT_EVENT_WINDOW",
    "capture",
    "current_handler",
    "current_recorder",
    "instrument",
    "is_instrumented",
    "uninstrument",
]

DEFAULT_EVENT_WINDOW = 10_000
"""Events a handler made by ``instrument()`` keeps (the newest): it may watch runs for days."""

HANDLER_VAR: ContextVar[HBEvalCallbackHandler | None] = ContextVar(
    "hbeval_langgraph_handler", default=None
)
"""The context variable LangChain reads to attach our handler to every run."""

_registered = False
_lock = threading.Lock()


def ensure_hook() -> None:
    """Register ``HANDLER_VAR`` with LangChain's configure hooks, once per process."""
    global _registered
    if _registered:
        return
    with _lock:
        if not _registered:
            from langchain_core.tracers.context import register_configure_hook

            # inheritable=True: child runs (nodes, models, tools, nested graphs) get it too.
            register_configure_hook(HANDLER_VAR, inheritable=True)
            _registered = True


def current_handler() -> HBEvalCallbackHandler | None:
    """The handler recording runs started from this context, if any."""
    return HANDLER_VAR.get()


current_recorder = current_handler
"""The name every adapter gives ``current_handler``."""


def _install(handler: HBEvalCallbackHandler) -> Token[HBEvalCallbackHandler | None]:
    ensure_hook()
    return HANDLER_VAR.set(handler)


def _uninstall(handler: HBEvalCallbackHandler, token: Token[HBEvalCallbackHandler | None]) -> None:
    try:
        HANDLER_VAR.reset(token)
    except ValueError:
        # Called from another context than instrument(): restore the value it replaced.
        old = token.old_value
        HANDLER_VAR.set(None if old is Token.MISSING else old)


_INSTRUMENTOR: Instrumentor[HBEvalCallbackHandler] = Instrumentor(
    check_supported, _install, _uninstall
)


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    return _INSTRUMENTOR.is_instrumented()


def instrument(
    handler: HBEvalCallbackHandler | None = None,
    *,
    check_version: bool = True,
    **handler_kwargs: Any,
) -> HBEvalCallbackHandler:
    """Record every LangGraph / LangChain run started from this context; returns the handler.

    Idempotent: a second call returns the handler already installed (and ignores its
    arguments). ``handler_kwargs`` go to ``HBEvalCallbackHandler`` when no handler is given;
    such a handler lives as long as the process, so unless ``max_events`` says otherwise it
    keeps a window of the newest ``DEFAULT_EVENT_WINDOW`` events, or none when an ``on_event``
    sink receives them. Per-run state is dropped as each run ends. Raises
    ``UnsupportedVersionError`` for LangGraph or LangChain outside ``SUPPORTED_VERSIONS``
    (``check_version=False`` hooks anyway).
    """

    def make() -> HBEvalCallbackHandler:
        if handler is not None:
            return handler
        window = 0 if handler_kwargs.get("on_event") is not None else DEFAULT_EVENT_WINDOW
        handler_kwargs.setdefault("max_events", window)
        return HBEvalCallbackHandler(**handler_kwargs)

    return _INSTRUMENTOR.instrument(make, check_version=check_version)


def uninstrument() -> None:
    """Stop what ``instrument()`` started and restore the previous value. Idempotent."""
    _INSTRUMENTOR.uninstrument()


@contextmanager
def capture(
    handler: HBEvalCallbackHandler | None = None, **handler_kwargs: Any
) -> Iterator[HBEvalCallbackHandler]:
    """Record every run started inside the ``with`` block; yields the handler.

    Example::

        with capture(run_id="trial-1") as handler:
            graph.invoke({"messages": [("user", "hi")]})
        handler.events
    """
    ensure_hook()
    active = handler if handler is not None else HBEvalCallbackHandler(**handler_kwargs)
    token = HANDLER_VAR.set(active)
    try:
        yield active
    finally:
        HANDLER_VAR.reset(token)
