"""``RunRecorder``: one AutoGen run's events, live metrics, and the abort switch.

The model-client and workbench wrappers, the agent hook and the adapter all report into the
recorder of the run in progress. It numbers and stores events, feeds them to a live ``Monitor``
(turning new directives and halts into events), and holds the run's abort state: once a crash
fault, an enforced Safe Halt, a spent budget or a timeout aborts the run, no tool runs and no
model is called again in it, and whoever drives the run is told to cancel it.

Errors in the recorder itself are logged and swallowed (capture never breaks the user's agent);
``strict=True`` re-raises them, for tests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any

from hbeval_core.capture import BaseRecorder, SpanRecord
from hbeval_core.contract import (
    BudgetExceeded,
    TrialContext,
    TrialStop,
    describe_error,
    run_status_of,
)
from hbeval_core.events import (
    ChatMessage,
    EventBase,
    FaultInjected,
    RunEnd,
    RunStart,
)
from hbeval_core.live.monitor import Monitor, SafeHaltError

from . import _convert
from ._keys import ATTR_ABORT, FRAMEWORK

__all__ = [
    "ABORT_CANCELLED",
    "ABORT_HALTED",
    "ABORT_TIMEOUT",
    "ACTIVE_RECORDER",
    "RunAborted",
    "RunRecorder",
]

log = logging.getLogger("hbeval.autogen")

ABORT_CANCELLED = "cancelled"
"""Run status after a crash fault aborted it."""
ABORT_HALTED = "halted"
"""Run status after an enforced Safe Halt or a spent budget stopped it."""
ABORT_TIMEOUT = "timeout"
"""Run status after the trial's timeout cut it."""


class RunAborted(Exception):
    """Raised by the model-client wrapper when a model call is attempted after the run was aborted.

    Never raised from a workbench (a raising workbench hangs AutoGen); only where AutoGen lets
    an exception end the run cleanly.
    """


class RunRecorder(BaseRecorder):
    """Records one AutoGen run as hb-events/1 events and folds them into a live ``Monitor``.

    Numbering, ordering, monitor signals and error keeping are the capture base's
    (``hbeval_core.capture.BaseRecorder``); this class adds the run's abort switch, usage totals
    and the ids AutoGen does not give.

    Args:
        run_id: Id every event carries.
        injector: The ``FaultInjector`` tool calls go through (None: no faults).
        memory: A memory (``EDMMemory``) added to every AssistantAgent's memories in this run.
        monitor: Where events become live metrics; a fresh ``Monitor()`` by default.
        context: The battery's ``TrialContext`` (budgets, cancellation, turn counting).
        clock: Timestamps come from ``clock.now()`` when given (a fake clock in battery runs).
        strict: Re-raise the recorder's own errors instead of logging them.
        on_event: Called with every event as it is recorded (a streaming sink).
    """

    log = logging.getLogger("hbeval.autogen")

    def __init__(
        self,
        run_id: str,
        *,
        injector: Any = None,
        memory: Any = None,
        monitor: Monitor | None = None,
        context: TrialContext | None = None,
        clock: Any = None,
        strict: bool = False,
        on_event: Callable[[EventBase], Any] | None = None,
    ) -> None:
        super().__init__(
            run_id=run_id,
            monitor=monitor,
            strict=strict,
            on_event=on_event,
            trial=context,
            clock=clock,
        )
        self.run_id: str = run_id
        self.injector = injector
        self.memory = memory
        self.abort_status: str | None = None
        """``cancelled``, ``halted`` or ``timeout`` once the run was aborted, else None."""
        self.abort_reason: str | None = None
        self.abort_type: str | None = None
        """The class name of the exception that aborted the run."""
        self.reported_calls: set[str] = set()
        """Tool call ids the workbench wrapper reported (the stream fallback skips them)."""
        self.usage_in: int | None = None
        self.usage_out: int | None = None
        self.final_text: str | None = None
        """Text of the last agent response seen in this run."""
        self._abort_listeners: list[Callable[[], None]] = []
        self._converted: dict[int, tuple[Any, list[ChatMessage]]] = {}
        self._run_open = False

    @property
    def context(self) -> TrialContext | None:
        """The battery's ``TrialContext``, if any."""
        return self.trial  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ recording
    def emit(self, cls: type[EventBase], **fields: Any) -> EventBase | None:  # type: ignore[override]
        """Record one event with this run's id, the next sequence number and a timestamp.

        Never raises (AutoGen must not see our errors); a failure is kept as a capture error.
        """
        try:
            fields["run_id"] = self.run_id
            return super().emit(cls, **fields)
        except Exception as exc:
            self.fail(f"emit {cls.__name__}", exc)
            return None

    def emit_fault(self, fault: FaultInjected | None, *args: Any, **kwargs: Any) -> None:
        """Record the injector's receipt, re-stamped with this run's id and order."""
        try:
            super().emit_fault(fault)
        except Exception as exc:
            self.fail("emit fault", exc)

    def convert_messages(self, messages: Sequence[Any]) -> list[ChatMessage]:
        """A model call's input as core messages, converting each AutoGen message only once.

        A conversation's messages are the same objects from one model call to the next, so the
        cost per call is that of its new messages, not of the whole history.
        """
        out: list[ChatMessage] = []
        cache = self._converted
        for message in messages:
            hit = cache.get(id(message))
            if hit is None or hit[0] is not message:
                # The message itself is kept in the entry, so its id cannot be reused meanwhile.
                hit = (message, _convert.chat_messages((message,)))
                cache[id(message)] = hit
            out.extend(hit[1])
        return out

    # ------------------------------------------------------------------ ids
    def next_model_call_id(self) -> str:
        """A fresh id for a model call of this run."""
        return f"model-{self.next_number('model')}"

    def next_span_id(self, name: str) -> str:
        """A fresh span id naming the agent or team it covers."""
        return f"{name}#{self.next_number('span')}"

    def fallback_call_id(self) -> str:
        """An id for a tool call AutoGen gave none."""
        return f"call-{self.next_number('call')}"

    # ------------------------------------------------------------------ run and spans
    def start_run(self, **fields: Any) -> None:
        """Emit ``run_start`` (once)."""
        with self._lock:
            if self._run_open:
                return
            self._run_open = True
        fields.setdefault("framework", FRAMEWORK)
        self.emit(RunStart, **fields)

    def end_run(
        self,
        status: str = "ok",
        *,
        output: Any = None,
        error: str | None = None,
        attrs: dict[str, Any] | None = None,
        exact: bool = False,
    ) -> None:
        """Emit ``run_end``; an abort decides the status over what the framework returned.

        ``exact=True`` records ``status`` as given (the adapter has already weighed the abort).
        """
        final = status if exact else (self.abort_status or status)
        extra = dict(attrs or {})
        if self.abort_status is not None:
            extra[ATTR_ABORT] = self.abort_reason
            error = error or self.abort_reason
        self.emit(RunEnd, status=final, output=output, error=error, attrs=extra)

    def span_start(self, scope: str, name: str, parent_id: str | None = None) -> str:
        """Open a span (agent or team); returns its id."""
        span_id = self.next_span_id(name)
        self.emit_span_start(SpanRecord(span_id, scope, name, self.run_id, parent_id))
        return span_id

    def span_end(
        self,
        span_id: str,
        scope: str,
        name: str,
        *,
        error: str | None = None,
        parent_id: str | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> None:
        """Close a span opened by ``span_start``."""
        span = SpanRecord(span_id, scope, name, self.run_id, parent_id)
        self.emit_span_end(span, error=error, attrs=attrs)

    # ------------------------------------------------------------------ abort
    @property
    def aborted(self) -> bool:
        """Whether the run was aborted (crash, halt, budget or timeout)."""
        return self.abort_status is not None

    def on_abort(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` when the run is aborted (at once if it already was)."""
        with self._lock:
            if self.abort_status is None:
                self._abort_listeners.append(listener)
                return
        listener()

    def abort(self, status: str, reason: str, error_type: str = "RunAborted") -> None:
        """Abort the run: later tool calls get error results, later model calls raise.

        ``error_type`` names the exception class that stopped the run (the trial's error type).
        """
        with self._lock:
            if self.abort_status is not None:
                return
            self.abort_status = status
            self.abort_reason = reason
            self.abort_type = error_type
            listeners, self._abort_listeners = self._abort_listeners, []
        for listener in listeners:
            try:
                listener()
            except Exception as exc:
                self.fail("abort listener", exc)

    def abort_by(self, exc: BaseException, reason: str | None = None) -> str:
        """Abort the run because ``exc`` stopped it (its status by class); returns the reason."""
        text = reason or describe_error(exc)
        self.abort(run_status_of(exc), text, type(exc).__name__)
        return text

    def add_usage(self, input_tokens: int | None, output_tokens: int | None) -> None:
        """Add one model call's token usage to the run's totals."""
        with self._lock:
            if input_tokens is not None:
                self.usage_in = (self.usage_in or 0) + input_tokens
            if output_tokens is not None:
                self.usage_out = (self.usage_out or 0) + output_tokens

    def tool_boundary(self, tool: str) -> str | None:
        """Check whether a tool may run now; returns the error text the agent gets when it may not.

        Turns what core code raises at a tool boundary (an enforced ``SafeHaltError``, a spent
        budget, a trial timeout) into an abort of the run plus an error text, because AutoGen
        must never see an exception from a workbench.
        """
        if self.abort_status is not None:
            return f"RunAborted: tool '{tool}' not run, the run was aborted ({self.abort_reason})"
        try:
            self.monitor.check_tool_boundary(tool)
            if self.context is not None:
                self.context.check_tool_boundary()
        except (SafeHaltError, TrialStop) as exc:
            if isinstance(exc, BudgetExceeded):
                self.emit_budget_halt(exc)
            return self.abort_by(exc)
        except Exception as exc:
            self.fail("tool boundary", exc)
        return None


ACTIVE_RECORDER: ContextVar[RunRecorder | None] = ContextVar(
    "hbeval_autogen_recorder", default=None
)
"""The recorder of the run in progress in this context (None: capture is off)."""
