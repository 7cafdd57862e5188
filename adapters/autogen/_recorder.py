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

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from hbeval_core.contract import BudgetExceeded, TrialCancelled, TrialContext
from hbeval_core.events import (
    ChatMessage,
    Directive,
    EventBase,
    FaultInjected,
    Halt,
    RunEnd,
    RunStart,
    SpanEnd,
    SpanStart,
)
from hbeval_core.monitor import Monitor, SafeHaltError
from hbeval_core.vocab import TRIGGER_POLICY

from . import _convert
from ._keys import ATTR_ABORT, ATTR_BUDGET, ATTR_STEP_INDEX, FRAMEWORK

__all__ = [
    "ABORT_CANCELLED",
    "ABORT_HALTED",
    "ABORT_TIMEOUT",
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

_HALT_TRIGGERS = ("policy", "policy_engine", "halt_signal", "manual")


class RunAborted(Exception):
    """Raised by the model-client wrapper when a model call is attempted after the run was aborted.

    Never raised from a workbench (a raising workbench hangs AutoGen); only where AutoGen lets
    an exception end the run cleanly.
    """


class RunRecorder:
    """Records one AutoGen run as hb-events/1 events and folds them into a live ``Monitor``.

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
        self.run_id = run_id
        self.injector = injector
        self.memory = memory
        self.monitor = monitor if monitor is not None else Monitor(strict=strict)
        self.context = context
        self.strict = strict
        self.on_event = on_event
        self.events: list[EventBase] = []
        """Every event recorded so far, in order."""
        self.errors: list[str] = []
        """The recorder's own errors that were swallowed (empty when all is well)."""
        self.first_error: BaseException | None = None
        """The first of those errors, for strict mode."""
        self.abort_status: str | None = None
        """``cancelled``, ``halted`` or ``timeout`` once the run was aborted, else None."""
        self.abort_reason: str | None = None
        self.reported_calls: set[str] = set()
        """Tool call ids the workbench wrapper reported (the stream fallback skips them)."""
        self.usage_in: int | None = None
        self.usage_out: int | None = None
        self.final_text: str | None = None
        """Text of the last agent response seen in this run."""
        self._now: Callable[[], float] = getattr(clock, "now", None) or time.time
        self._lock = threading.RLock()
        self._seq = 0
        self._model_ids = itertools.count(1)
        self._span_ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._directives_seen = 0
        self._halt_seen = False
        self._abort_listeners: list[Callable[[], None]] = []
        self._converted: dict[int, tuple[Any, list[ChatMessage]]] = {}
        self._run_open = False

    # ------------------------------------------------------------------ recording
    def emit(self, cls: type[EventBase], **fields: Any) -> EventBase | None:
        """Record one event with this run's id, the next sequence number and a timestamp."""
        try:
            with self._lock:
                fields["run_id"] = self.run_id
                fields["seq"] = self._seq
                fields.setdefault("ts", self._now())
                self._seq += 1
                # Trusted code paths build the fields, so skip validation on the hot path; the
                # tests round-trip every event through the validating parser.
                event = cls.model_construct(**fields)
                self._store(event)
            self._after(event)
            return event
        except Exception as exc:
            self.fail(f"emit {cls.__name__}", exc)
            return None

    def emit_fault(self, fault: FaultInjected | None) -> None:
        """Record the injector's receipt, re-stamped with this run's id and order."""
        if fault is None:
            return
        try:
            with self._lock:
                event = fault.model_copy(update={"run_id": self.run_id, "seq": self._seq})
                self._seq += 1
                self._store(event)
            self._after(event)
        except Exception as exc:
            self.fail("emit fault", exc)

    def _store(self, event: EventBase) -> None:
        """Keep one numbered event and fold it into the monitor; the caller holds the lock.

        Inside a battery trial the event also goes to ``TrialContext.record``, which refuses
        it once the runner cut the trial for its timeout: nothing after the cut is kept.
        """
        ctx = self.context
        if ctx is not None and not ctx.record(event):
            return
        self.events.append(event)
        self.monitor.observe(event)

    def _after(self, event: EventBase) -> None:
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception as exc:
                self.fail("on_event", exc)
        self._poll_monitor(event)

    def _poll_monitor(self, last: EventBase) -> None:
        """Turn new monitor directives and a new halt into events."""
        monitor = self.monitor
        if len(monitor.directives) == self._directives_seen and (
            self._halt_seen or not monitor.halted
        ):
            return
        with self._lock:
            new = list(monitor.directives[self._directives_seen :])
            self._directives_seen += len(new)
            record: dict[str, Any] | None = None
            if monitor.halted and not self._halt_seen:
                self._halt_seen = True
                record = dict(monitor.halt_record or {})
            extra: list[EventBase] = []
            for d in new:
                extra.append(
                    self._signal(
                        Directive,
                        last,
                        action=d.action,
                        reason=d.reason,
                        metric=d.metric,
                        value=d.metric_value,
                        tool=d.target,
                        attrs={ATTR_STEP_INDEX: d.step_index},
                    )
                )
            if record is not None:
                trigger = record.get("trigger_source") or TRIGGER_POLICY
                extra.append(
                    self._signal(
                        Halt,
                        last,
                        metric=record.get("metric"),
                        value=record.get("metric_value"),
                        threshold=record.get("threshold"),
                        reason=str(record.get("reason") or ""),
                        trigger=trigger if trigger in _HALT_TRIGGERS else TRIGGER_POLICY,
                        enforced=monitor.enforce,
                        attrs={ATTR_STEP_INDEX: record.get("step_index")},
                    )
                )
        if self.on_event is not None:
            for event in extra:
                try:
                    self.on_event(event)
                except Exception as exc:
                    self.fail("on_event", exc)

    def _signal(self, cls: type[EventBase], last: EventBase, **fields: Any) -> EventBase:
        fields.update(run_id=self.run_id, parent_id=last.parent_id, seq=self._seq, ts=self._now())
        self._seq += 1
        event = cls.model_construct(**fields)
        ctx = self.context
        if ctx is None or ctx.record(event):
            self.events.append(event)
        return event

    def fail(self, where: str, exc: BaseException) -> None:
        """Log and swallow one of our own errors (re-raise it in strict mode)."""
        self.note(where, exc)
        if self.strict:
            raise exc

    def note(self, where: str, exc: BaseException) -> None:
        """Record one of our own errors without raising (where raising would hang AutoGen).

        In strict mode the adapter still fails the trial with it once the run is over.
        """
        self.errors.append(f"{where}: {type(exc).__name__}: {exc}")
        if self.first_error is None:
            self.first_error = exc
        if not self.strict:
            log.warning("hbeval autogen capture error in %s: %r", where, exc, exc_info=True)

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
        return f"model-{next(self._model_ids)}"

    def next_span_id(self, name: str) -> str:
        """A fresh span id naming the agent or team it covers."""
        return f"{name}#{next(self._span_ids)}"

    def fallback_call_id(self) -> str:
        """An id for a tool call AutoGen gave none."""
        return f"call-{next(self._call_ids)}"

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
        self.emit(SpanStart, span_id=span_id, scope=scope, name=name, parent_id=parent_id)
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
        self.emit(
            SpanEnd,
            span_id=span_id,
            scope=scope,
            name=name,
            status="error" if error else "ok",
            error=error,
            parent_id=parent_id,
            attrs=dict(attrs or {}),
        )

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

    def abort(self, status: str, reason: str) -> None:
        """Abort the run: later tool calls get error results, later model calls raise."""
        with self._lock:
            if self.abort_status is not None:
                return
            self.abort_status = status
            self.abort_reason = reason
            listeners, self._abort_listeners = self._abort_listeners, []
        for listener in listeners:
            try:
                listener()
            except Exception as exc:
                self.fail("abort listener", exc)

    def count_turn(self) -> None:
        """Count one model call against the trial's budgets."""
        if self.context is not None:
            self.context.count_turn()

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
        except SafeHaltError as exc:
            text = f"SafeHaltError: {exc}"
            self.abort(ABORT_HALTED, text)
            return text
        except BudgetExceeded as exc:
            text = f"BudgetExceeded: {exc}"
            self.emit(
                Halt,
                metric=None,
                value=float(exc.used),
                threshold=float(exc.limit),
                reason=str(exc),
                trigger=TRIGGER_POLICY,
                enforced=True,
                attrs={ATTR_BUDGET: exc.budget},
            )
            self.abort(ABORT_HALTED, text)
            return text
        except TrialCancelled as exc:
            text = f"TrialCancelled: {exc}"
            self.abort(ABORT_TIMEOUT, text)
            return text
        except Exception as exc:
            self.fail("tool boundary", exc)
        return None
