"""Capture a plain agent outside a battery: for one block (``capture``), or process-wide.

A plain agent has no framework to hook: its tools are ``@tool`` / ``faultable`` functions and its
model turns are ``think`` calls. ``capture()`` opens a recorder those helpers write to for one
``with`` block; ``instrument()`` installs one that takes every call made outside any trial or
block until ``uninstrument()``. Neither ever injects a fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hbeval_core.capture import Instrumentor
from hbeval_core.faults.boundary import set_process_scope

from ._scope import _SCOPE, TrialScope

__all__ = ["capture", "current_recorder", "instrument", "is_instrumented", "uninstrument"]


@contextmanager
def capture(run_id: str = "plain-capture", **_unused: Any) -> Iterator[TrialScope]:
    """Record the plain agent's tool calls and turns inside the ``with`` block; yields the recorder.

    Example::

        with capture("r1") as rec:
            agent("Where is order A1?")
        rec.events
    """
    recorder = TrialScope(run_id)
    token = _SCOPE.set(recorder)
    try:
        yield recorder
    finally:
        _SCOPE.reset(token)


def current_recorder() -> TrialScope | None:
    """The recorder capturing plain calls made from this context, if any."""
    scope = _SCOPE.get()
    return scope if scope is not None else _INSTRUMENTOR.active


def _install(recorder: TrialScope) -> Any:
    return set_process_scope(recorder)


def _uninstall(recorder: TrialScope, previous: Any) -> None:
    set_process_scope(previous)


_INSTRUMENTOR: Instrumentor[TrialScope] = Instrumentor(lambda: None, _install, _uninstall)


def instrument(run_id: str = "plain-instrumented") -> TrialScope:
    """Record every plain tool call and turn made outside a trial or block from now on.

    Idempotent: a second call returns the recorder already installed.
    """
    return _INSTRUMENTOR.instrument(lambda: TrialScope(run_id))


def uninstrument() -> None:
    """Stop what ``instrument()`` started. Idempotent."""
    _INSTRUMENTOR.uninstrument()


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    return _INSTRUMENTOR.is_instrumented()
