"""Install the recorder's hook functions: scoped around one block, or globally.

* ``capture()`` registers them as CrewAI **scoped hooks** (``crewai.hooks.dispatch.scoped_hooks``
  + ``register_scoped``) for one ``with`` block, keeping any scoped hooks the caller already had.
  Scoped hooks are resolved at call time and discarded on exit, so nothing outlives the block;
  this is how battery trials are isolated.
* ``instrument()`` registers them as **global** hooks (``dispatch.register``) until
  ``uninstrument()``, recording every kickoff in the process. Inside a ``capture()`` block the
  global ones stand down, so a run is never recorded twice.

Either way the agents' LLMs are wrapped at ``EXECUTION_START`` (when the crew is known) and put
back when the kickoff ends or the block exits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from hbeval_core.capture import Instrumentor

from ._recorder import CrewAIRecorder

__all__ = ["ACTIVE", "capture", "current_recorder", "instrument", "is_instrumented", "uninstrument"]

ACTIVE: ContextVar[CrewAIRecorder | None] = ContextVar("hbeval_crewai_recorder", default=None)
"""The recorder of the ``capture()`` block this context is in, if any."""

# Interception point name -> recorder method. Names, so this module imports CrewAI lazily.
_POINTS: dict[str, str] = {
    "EXECUTION_START": "exec_start",
    "EXECUTION_END": "exec_end",
    "PRE_STEP": "pre_step",
    "POST_STEP": "post_step",
    "PRE_MODEL_CALL": "pre_model",
    "PRE_TOOL_CALL": "pre_tool",
    "POST_TOOL_CALL": "post_tool",
}


def hook_functions(recorder: CrewAIRecorder) -> list[tuple[Any, Callable[[Any], Any]]]:
    """``(InterceptionPoint, hook)`` pairs that feed ``recorder``."""
    from crewai.hooks.dispatch import InterceptionPoint

    return [
        (InterceptionPoint[point], getattr(recorder, method)) for point, method in _POINTS.items()
    ]


def current_recorder() -> CrewAIRecorder | None:
    """The recorder capturing runs started from this context, if any."""
    active = ACTIVE.get()
    if active is not None:
        return active
    return _INSTRUMENTOR.active


@contextmanager
def capture(
    recorder: CrewAIRecorder | None = None, *, check_version: bool = True, **recorder_kwargs: Any
) -> Iterator[CrewAIRecorder]:
    """Record every kickoff started inside the ``with`` block; yields the recorder.

    Example::

        with capture(run_id="r1") as rec:
            crew.kickoff()
        rec.events
    """
    ensure_supported(check_version)
    from crewai.hooks.dispatch import (
        InterceptionPoint,
        get_scoped_hooks,
        register_scoped,
        scoped_hooks,
    )

    active = recorder if recorder is not None else CrewAIRecorder(**recorder_kwargs)
    # scoped_hooks() starts an empty registry; carry the caller's scoped hooks into it.
    outer = {p: get_scoped_hooks(p) for p in InterceptionPoint}
    with scoped_hooks({p: list(h) for p, h in outer.items() if h}):
        for point, fn in hook_functions(active):
            register_scoped(point, fn)
        token = ACTIVE.set(active)
        try:
            yield active
        finally:
            ACTIVE.reset(token)
            active.close()


def _standing_down(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A global hook that does nothing while a ``capture()`` block records this context."""

    def hbeval_global_hook(ctx: Any) -> Any:
        if ACTIVE.get() is not None:
            return None
        return fn(ctx)

    hbeval_global_hook.__name__ = f"hbeval_{getattr(fn, '__name__', 'hook')}"
    return hbeval_global_hook


def _install(recorder: CrewAIRecorder) -> list[tuple[Any, Callable[[Any], Any]]]:
    from crewai.hooks.dispatch import register

    hooks = [(point, _standing_down(fn)) for point, fn in hook_functions(recorder)]
    for point, fn in hooks:
        register(point, fn)
    return hooks


def _uninstall(recorder: CrewAIRecorder, hooks: list[tuple[Any, Callable[[Any], Any]]]) -> None:
    from crewai.hooks.dispatch import unregister

    for point, fn in hooks:
        unregister(point, fn)
    recorder.close()


def _check_supported() -> None:
    from ._version import check_supported

    check_supported()


_INSTRUMENTOR: Instrumentor[CrewAIRecorder] = Instrumentor(_check_supported, _install, _uninstall)


def ensure_supported(check_version: bool = True) -> None:
    """Check the installed crewai against ``SUPPORTED`` once per process (clear error if not)."""
    _INSTRUMENTOR.ensure_supported(check_version)


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    return _INSTRUMENTOR.is_instrumented()


def instrument(
    recorder: CrewAIRecorder | None = None, *, check_version: bool = True, **recorder_kwargs: Any
) -> CrewAIRecorder:
    """Record every CrewAI kickoff in this process from now on; returns the recorder.

    Idempotent: a second call returns the recorder already installed (and ignores its
    arguments). Raises ``UnsupportedVersionError`` for a crewai outside ``SUPPORTED``.
    """
    return _INSTRUMENTOR.instrument(
        lambda: recorder if recorder is not None else CrewAIRecorder(**recorder_kwargs),
        check_version=check_version,
    )


def uninstrument() -> None:
    """Remove what ``instrument()`` registered and put back every LLM it wrapped. Idempotent."""
    _INSTRUMENTOR.uninstrument()
