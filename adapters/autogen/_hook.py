"""Capture with no change to user code: one class-level hook on ``AssistantAgent``.

``instrument()`` replaces ``AssistantAgent.on_messages_stream`` (public API; ``run``,
``run_stream`` and every team reach an agent through it) with a wrapper. When a recorder is
active in the current context (``capture()``, ``AutoGenAdapter.scope()`` or a battery trial),
the wrapper, for the duration of that one agent turn:

* opens an ``agent`` span;
* swaps ``agent._model_client`` for an ``HBEvalModelClient`` and each entry of
  ``agent._workbench`` for an ``HBEvalWorkbench`` (private attributes, read by AutoGen once
  at the start of the turn), and appends the run's memory to ``agent._memory``;
* watches the turn's messages: tool calls the workbench never saw (handoffs, agents whose
  private attributes moved) are rebuilt from ``ToolCallRequestEvent`` /
  ``ToolCallExecutionEvent``; the final ``Response`` closes the span;
* restores every original attribute when the turn ends.

With no recorder active the wrapper only delegates. ``uninstrument()`` puts the original method
back. Both are idempotent; battery trials hold the hook for their duration, so a user's
``uninstrument()`` never pulls it from under a running trial.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from hbeval_core.capture import Instrumentor
from hbeval_core.events import ToolEnd, ToolStart
from hbeval_core.vocab import SCOPE_AGENT

from . import _convert
from ._keys import ATTR_AGENT, ATTR_MEMORIES, ATTR_SOURCE, SOURCE_STREAM
from ._recorder import ACTIVE_RECORDER, RunAborted, RunRecorder
from ._version import SUPPORTED, UnsupportedVersionError, check_supported

__all__ = [
    "ACTIVE_RECORDER",
    "current_recorder",
    "hold",
    "instrument",
    "is_instrumented",
    "uninstrument",
]


_MISSING = object()
_lock = threading.RLock()
_original: Any = None
_trial_holds = 0
_RUNTIME_LOGGER = "autogen_core"
"""The logger AutoGen's agent runtime reports handler exceptions to."""
_team_span: ContextVar[str | None] = ContextVar("hbeval_autogen_team_span", default=None)


def _quiet_abort(record: logging.LogRecord) -> bool:
    """Drop the runtime's traceback for ``RunAborted``: an abort hbeval caused on purpose."""
    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, RunAborted)


def current_recorder() -> RunRecorder | None:
    """The recorder of the run in progress in this context, if any."""
    return ACTIVE_RECORDER.get()


def is_instrumented() -> bool:
    """Whether ``AssistantAgent.on_messages_stream`` is currently hooked."""
    return _original is not None


def _apply(check_version: bool) -> None:
    global _original
    if _original is not None:
        return
    if check_version:
        check_supported()
    try:
        from autogen_agentchat.agents import AssistantAgent
    except ImportError as exc:
        raise UnsupportedVersionError(
            f"hbeval_autogen needs autogen-agentchat {SUPPORTED}, which cannot be imported "
            f"({exc}); install it with: pip install 'hbeval[autogen]'"
        ) from exc

    from autogen_agentchat.agents import BaseChatAgent

    from ._toolhook import install_tool_hook

    original = AssistantAgent.__dict__["on_messages_stream"]
    _hooked.__wrapped__ = original  # type: ignore[attr-defined]
    AssistantAgent.on_messages_stream = _hooked  # type: ignore[method-assign]
    base = BaseChatAgent.__dict__["on_messages_stream"]
    _hooked_base.__wrapped__ = base  # type: ignore[attr-defined]
    BaseChatAgent.on_messages_stream = _hooked_base  # type: ignore[method-assign]
    install_tool_hook()
    logging.getLogger(_RUNTIME_LOGGER).addFilter(_quiet_abort)
    _original = original


def _remove() -> None:
    global _original
    if _original is None:
        return
    from autogen_agentchat.agents import AssistantAgent, BaseChatAgent

    from ._toolhook import uninstall_tool_hook

    AssistantAgent.on_messages_stream = _original  # type: ignore[method-assign]
    BaseChatAgent.on_messages_stream = _hooked_base.__wrapped__  # type: ignore[attr-defined,method-assign]
    uninstall_tool_hook()
    logging.getLogger(_RUNTIME_LOGGER).removeFilter(_quiet_abort)
    _original = None


def _install(_: None) -> None:
    with _lock:
        _apply(check_version=False)  # the Instrumentor checked the version


def _uninstall(_: None, __: None) -> None:
    with _lock:
        if _trial_holds == 0:
            _remove()


# The version lookup is cached in _version, so every instrument() checks it.
_INSTRUMENTOR: Instrumentor[None] = Instrumentor(
    check_supported, _install, _uninstall, check_once=False
)


def instrument(*, check_version: bool = True) -> None:
    """Hook ``AssistantAgent`` so runs inside a capture scope are recorded. Idempotent.

    Raises ``UnsupportedVersionError`` when AutoGen is missing or outside ``SUPPORTED`` (pass
    ``check_version=False`` to hook anyway).
    """
    _INSTRUMENTOR.instrument(lambda: None, check_version=check_version)


def uninstrument() -> None:
    """Restore ``AssistantAgent.on_messages_stream`` (once no trial holds the hook). Idempotent."""
    _INSTRUMENTOR.uninstrument()


@contextmanager
def hold(*, check_version: bool = True) -> Iterator[None]:
    """Keep the hook installed for the duration of the block (used around each trial)."""
    global _trial_holds
    with _lock:
        _apply(check_version)
        _trial_holds += 1
    try:
        yield
    finally:
        with _lock:
            _trial_holds -= 1
            if _trial_holds == 0 and not _INSTRUMENTOR.is_instrumented():
                _remove()


@contextmanager
def team_span(span_id: str | None) -> Iterator[None]:
    """Agent spans opened inside the block name ``span_id`` (a team span) as their parent."""
    token = _team_span.set(span_id)
    try:
        yield
    finally:
        _team_span.reset(token)


# ----------------------------------------------------------------------------------------------
# The hook
# ----------------------------------------------------------------------------------------------
async def _hooked(
    self: Any, messages: Sequence[Any], cancellation_token: Any
) -> AsyncGenerator[Any, None]:
    """``AssistantAgent.on_messages_stream`` with capture (pure delegation when none is active)."""
    original = _hooked.__wrapped__  # type: ignore[attr-defined]
    async for item in _turn_stream(original, self, messages, cancellation_token, scan=False):
        yield item


async def _hooked_base(
    self: Any, messages: Sequence[Any], cancellation_token: Any
) -> AsyncGenerator[Any, None]:
    """``BaseChatAgent.on_messages_stream``: agents written by hand (their own ``on_messages``).

    Their model clients are found among the agent's attributes, so a hand-built tool loop's
    model calls are recorded as AssistantAgent's are; its tools meet faults through the
    ``run_json`` hook.
    """
    original = _hooked_base.__wrapped__  # type: ignore[attr-defined]
    async for item in _turn_stream(original, self, messages, cancellation_token, scan=True):
        yield item


async def _turn_stream(
    original: Any, agent: Any, messages: Sequence[Any], cancellation_token: Any, *, scan: bool
) -> AsyncGenerator[Any, None]:
    self = agent
    rec = ACTIVE_RECORDER.get()
    if rec is None:
        async for item in original(self, messages, cancellation_token):
            yield item
        return
    turn = _Turn(self, rec, scan=scan)
    try:
        turn.begin()
        async for item in original(self, messages, cancellation_token):
            turn.observe(item)
            yield item
    except GeneratorExit:
        # The consumer stopped reading (``on_messages`` returns at the final Response).
        turn.finish(None)
        raise
    except BaseException as exc:
        turn.finish(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        turn.finish(None)


class _Turn:
    """One agent turn under capture: the span, the swapped attributes, the stream fallback."""

    def __init__(self, agent: Any, rec: RunRecorder, *, scan: bool = False) -> None:
        self.agent = agent
        self.scan = scan
        self.rec = rec
        self.name = str(getattr(agent, "name", type(agent).__name__))
        self.span_id: str | None = None
        self.saved: dict[str, Any] = {}
        self.requested: dict[str, Any] = {}
        self.memories = 0
        self.done = False

    def begin(self) -> None:
        rec = self.rec
        try:
            self.span_id = rec.span_start(SCOPE_AGENT, self.name, parent_id=_team_span.get())
            self._swap_in()
        except Exception as exc:
            rec.fail("agent turn start", exc)

    def _swap_in(self) -> None:
        from ._wrappers import HBEvalModelClient, HBEvalWorkbench, wrap_workbench

        agent, rec = self.agent, self.rec
        client: Any = getattr(agent, "_model_client", _MISSING)
        if client is not _MISSING and not isinstance(client, HBEvalModelClient):
            self.saved["_model_client"] = client
            agent._model_client = HBEvalModelClient(client, rec, self.name, self.span_id)
        if self.scan:
            from autogen_core.models import ChatCompletionClient

            for attr, value in list(vars(agent).items()):
                if attr in self.saved or not isinstance(value, ChatCompletionClient):
                    continue
                if isinstance(value, HBEvalModelClient):
                    continue
                self.saved[attr] = value
                setattr(agent, attr, HBEvalModelClient(value, rec, self.name, self.span_id))
        benches: Any = getattr(agent, "_workbench", _MISSING)
        if benches is not _MISSING and benches is not None:
            self.saved["_workbench"] = benches
            agent._workbench = [
                wb
                if isinstance(wb, HBEvalWorkbench)
                else wrap_workbench(wb, rec, self.name, self.span_id)
                for wb in benches
            ]
        memory = rec.memory
        current: Any = getattr(agent, "_memory", _MISSING)
        if memory is not None and _has_own_edm(current):
            # A member configured with its own EDMMemory keeps its agent id: no second memory.
            memory = None
        if memory is not None and current is not _MISSING and memory not in (current or ()):
            self.saved["_memory"] = current
            agent._memory = [*(current or ()), memory]

    def _restore(self) -> None:
        for attr, value in self.saved.items():
            setattr(self.agent, attr, value)
        self.saved.clear()

    def observe(self, item: Any) -> None:
        """Look at one item the turn yields (errors are swallowed: capture never breaks a run)."""
        try:
            kind = type(item).__name__
            if kind == "ToolCallRequestEvent":
                for call in getattr(item, "content", ()) or ():
                    self.requested[str(getattr(call, "id", ""))] = call
            elif kind == "ToolCallExecutionEvent":
                self._fallback_tool_events(getattr(item, "content", ()) or ())
            elif kind == "MemoryQueryEvent":
                self.memories += len(getattr(item, "content", ()) or ())
            elif kind == "Response":
                message = getattr(item, "chat_message", None)
                self.rec.final_text = _convert.text_of(getattr(message, "content", None))
                # The final item: close the span now, not when the generator is collected.
                self.finish(None)
        except Exception as exc:
            self.rec.fail("agent turn stream", exc)

    def _fallback_tool_events(self, results: Sequence[Any]) -> None:
        rec = self.rec
        for result in results:
            call_id = str(getattr(result, "call_id", "") or "")
            if not call_id or call_id in rec.reported_calls:
                continue
            rec.reported_calls.add(call_id)
            call = self.requested.get(call_id)
            name = str(getattr(result, "name", "") or getattr(call, "name", "") or "")
            attrs = {ATTR_AGENT: self.name, ATTR_SOURCE: SOURCE_STREAM}
            rec.emit(
                ToolStart,
                call_id=call_id,
                tool=name,
                args=_convert.arguments_of(getattr(call, "arguments", None)),
                parent_id=self.span_id,
                attrs=dict(attrs),
            )
            rec.emit(
                ToolEnd,
                call_id=call_id,
                tool=name,
                result=str(getattr(result, "content", "")),
                status="error" if getattr(result, "is_error", False) else "ok",
                parent_id=self.span_id,
                attrs=dict(attrs),
            )

    def finish(self, error: str | None) -> None:
        if self.done:
            return
        self.done = True
        try:
            self._restore()
            if self.span_id is not None:
                attrs = {ATTR_MEMORIES: self.memories} if self.memories else None
                self.rec.span_end(
                    self.span_id,
                    SCOPE_AGENT,
                    self.name,
                    error=error,
                    parent_id=_team_span.get(),
                    attrs=attrs,
                )
        except Exception as exc:
            self.rec.fail("agent turn end", exc)


def _has_own_edm(memories: Any) -> bool:
    """Whether an agent's ``_memory`` list already holds an ``EDMMemory`` of its own."""
    if memories is _MISSING or not memories:
        return False
    from ._memory import EDMMemory

    return any(isinstance(m, EDMMemory) for m in memories)
