"""``BaseRecorder``: what every adapter's capture object does the same way.

An adapter turns its framework's callbacks into events; the recorder numbers them, keeps them in
order under one lock, folds them into a live ``Monitor``, hands them to a streaming sink, turns
new monitor directives and a new halt into events (once each), records a spent budget as a halt,
and keeps its own errors without breaking the agent (``strict=True`` re-raises them, for tests).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, TypeVar, cast

from hbeval_core.live.monitor import Directive as MonitorDirective
from hbeval_core.live.monitor import Monitor

from ..contract import describe_error
from ..events import (
    Directive,
    EventBase,
    FaultInjected,
    Halt,
    ModelEnd,
    ModelStart,
    SpanEnd,
    SpanStart,
    ToolEnd,
    ToolError,
    ToolStart,
)
from ..vocab import ATTR_BUDGET, ATTR_STEP_INDEX, TRIGGER_POLICY
from ._construct import construct

__all__ = [
    "HALT_TRIGGERS",
    "UNWATCHED",
    "BaseRecorder",
    "ModelCallRecord",
    "SpanRecord",
    "ToolCallRecord",
    "budget_halt_fields",
    "directive_fields",
    "halt_fields",
    "never_raises",
]

F = TypeVar("F", bound=Callable[..., Any])

HALT_TRIGGERS = ("policy", "policy_engine", "halt_signal", "manual")
"""Values a ``halt`` event's ``trigger`` may take; a monitor's other sources read as policy."""


def directive_fields(d: MonitorDirective) -> dict[str, Any]:
    """The fields of the ``directive`` event recording the monitor's directive ``d``."""
    return {
        "action": d.action,
        "reason": d.reason,
        "metric": d.metric,
        "value": d.metric_value,
        "tool": d.target,
        "attrs": {ATTR_STEP_INDEX: d.step_index},
    }


def halt_fields(record: Mapping[str, Any], *, enforced: bool) -> dict[str, Any]:
    """The fields of the ``halt`` event recording the monitor's halt ``record``."""
    trigger = record.get("trigger_source") or TRIGGER_POLICY
    if trigger not in HALT_TRIGGERS:
        trigger = TRIGGER_POLICY
    return {
        "metric": record.get("metric"),
        "value": record.get("metric_value"),
        "threshold": record.get("threshold"),
        "reason": str(record.get("reason") or ""),
        "trigger": trigger,
        "enforced": enforced,
        "attrs": {ATTR_STEP_INDEX: record.get("step_index")},
    }


def budget_halt_fields(exc: Any) -> dict[str, Any]:
    """The fields of the ``halt`` event recording a spent budget (a ``BudgetExceeded``)."""
    return {
        "metric": None,
        "value": float(exc.used),
        "threshold": float(exc.limit),
        "reason": str(exc),
        "trigger": TRIGGER_POLICY,
        "enforced": True,
        "attrs": {ATTR_BUDGET: exc.budget},
    }


@dataclass
class ToolCallRecord:
    """One tool call as the recorder reports it: its ids, where it sits, when it began."""

    call_id: str
    tool: str
    run_id: str
    parent_id: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)
    fault: FaultInjected | None = None
    """The fault's receipt when it was recorded with the start (``emit_tool_start``)."""


@dataclass
class ModelCallRecord:
    """One model call as the recorder reports it: its ids, where it sits, when it began."""

    call_id: str
    run_id: str
    parent_id: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)


@dataclass
class SpanRecord:
    """One open span (crew, task, agent, team): its id, scope, name, where it sits, its start."""

    span_id: str
    scope: str
    name: str
    run_id: str
    parent_id: str | None = None
    t0: float = field(default_factory=time.perf_counter)


# A logged callback: (the recorder method that records it, its arguments, perf_counter, time).
Logged = tuple[Callable[..., Any], tuple[Any, ...], float, float]


class _At:
    """The clocks while logged callbacks are recorded: each reads what its callback logged."""

    __slots__ = ("t", "ts")

    def __init__(self) -> None:
        self.t = 0.0
        self.ts = 0.0

    def clock(self) -> float:
        return self.t

    def now(self) -> float:
        return self.ts


class _Unwatched(Monitor):
    """A monitor that folds nothing and so never decides: for capture without live metrics."""

    def observe(self, event: EventBase) -> None:
        return None

    def record_step(self, **fields: Any) -> None:
        return None


UNWATCHED: Final[Monitor] = _Unwatched()
"""Pass as ``monitor`` to record without live monitoring: no directive or halt is ever drained."""


class BaseRecorder:
    """Numbering, ordering, live monitoring and error keeping for one adapter's capture.

    Args:
        run_id: Run id every event carries (None: the subclass decides per event,
            ``current_run_id``).
        monitor: Where events become live metrics; a fresh ``Monitor()`` by default.
        strict: Re-raise the recorder's own errors instead of logging them (tests).
        on_event: Called with every event as it is recorded (a streaming sink).
        on_directive: Called with each monitor ``Directive`` (Adapt-Plan re-plan, retry, ...).
        on_halt: Called with the halt record when the monitor decides a Safe Halt.
        trial: The runner's ``TrialContext``, if any: events then go through its ``record``,
            which refuses them once a timeout cut the trial.
        clock: Timestamps come from ``clock.now()`` when given (a fake clock in battery runs).
    """

    log: ClassVar[logging.Logger] = logging.getLogger("hbeval.capture")
    """Where swallowed capture errors are logged (each adapter names its own)."""

    def __init__(
        self,
        *,
        run_id: str | None = None,
        monitor: Monitor | None = None,
        strict: bool = False,
        on_event: Callable[[EventBase], Any] | None = None,
        on_directive: Callable[[MonitorDirective], Any] | None = None,
        on_halt: Callable[[dict[str, Any]], Any] | None = None,
        trial: Any = None,
        clock: Any = None,
    ) -> None:
        # Re-entrant: a monitor callback the user registered runs under it and may read us.
        self._lock = threading.RLock()
        # Callbacks logged to be recorded later (see ``flush_log``); None: recorded as they come.
        self._log: deque[Logged] | None = None
        self.run_id = run_id
        self._monitor = monitor if monitor is not None else Monitor(strict=strict)
        # Without a live monitor nothing is folded or drained: no call per event for it.
        self._watched = self._monitor is not UNWATCHED
        self.strict = strict
        self.on_event = on_event
        self.on_directive = on_directive
        self.on_halt = on_halt
        self.trial: Any = trial
        """The battery trial this recorder records (a runner ``TrialContext``), if any."""
        self._errors: list[str] = []
        self._first_error: BaseException | None = None
        self._now: Callable[[], float] = getattr(clock, "now", None) or time.time
        self._clock: Callable[[], float] = time.perf_counter
        self._seq = 0
        self._counters: dict[str, int] = {}
        self._declared: list[tuple[str, str]] = []
        self._budget_halted = False
        self._directives_seen = 0
        self._halt_seen = False
        # A step completed since the monitor was last asked: only then can it have decided.
        self._stepped = False
        self._init_events()

    # ------------------------------------------------------------------ what users read
    @property
    def monitor(self) -> Monitor:
        """The live monitor this recorder folds its events into.

        A recorder that logs its callbacks (``flush_log``) records them before it hands the
        monitor out, and records each event as it comes from then on: whoever holds the
        monitor may read it at any time.
        """
        if self._log is not None:
            self.stop_logging()
        return self._monitor

    @monitor.setter
    def monitor(self, value: Monitor) -> None:
        if self._log is not None:
            self.stop_logging()
        self._monitor = value
        self._watched = value is not UNWATCHED

    @property
    def errors(self) -> list[str]:
        """The recorder's own errors that were swallowed (empty when all is well)."""
        if self._log:
            self.flush_log()
        return self._errors

    @property
    def first_error(self) -> BaseException | None:
        """The first of those errors (strict mode fails the trial with it)."""
        if self._log:
            self.flush_log()
        return self._first_error

    # ------------------------------------------------------------------ logged callbacks
    def flush_log(self) -> None:
        """Record every logged callback, in the order they came, as of when each came.

        A recorder nothing watches live (no sink, no trial, no monitor or callback of the
        user's) may log its framework's callbacks (``(method, args, perf_counter, time)``)
        instead of recording each at once: the agent's hot path then pays an append, and the
        events, the monitor's fold and any monitor signals are made here, with the clocks
        read back from the log, so they are exactly what recording at once would have made.
        Reading ``events``, ``errors`` or ``first_error`` flushes; ``monitor`` and anything
        that records from outside the callbacks (fault wrappers, ``emit``) stop logging.
        """
        log = self._log
        if log:
            self._replay(log)

    def stop_logging(self) -> None:
        """Flush the log and record each callback as it comes from now on."""
        log = self._log
        if log is not None:
            self._log = None
            self._replay(log)

    def _replay(self, log: deque[Logged]) -> None:
        with self._lock:
            now, clock = self._now, self._clock
            at = _At()
            self._now, self._clock = at.now, at.clock
            try:
                while True:
                    try:
                        method, args, at.t, at.ts = log.popleft()
                    except IndexError:
                        break
                    try:
                        method(self, *args)
                    except Exception as exc:  # each callback keeps its own; this is a bug
                        self.fail(f"replay of {getattr(method, '__name__', method)}", exc)
            finally:
                self._now, self._clock = now, clock

    def logged_late(self, log: deque[Logged]) -> None:
        """A callback appended to ``log`` after logging stopped: record it now."""
        if self._log is not log:
            self._replay(log)

    # ------------------------------------------------------------------ storage
    def _init_events(self) -> None:
        """Create the event list (a subclass that stores events differently overrides this)."""
        self.events: list[EventBase] = []

    def _append_locked(self, event: EventBase) -> None:
        """Keep one event, in order; the caller holds the lock."""
        self.events.append(event)

    def _keep(self, event: EventBase) -> bool:
        """Whether the battery trial (if any) still accepts events: a timeout cuts the trace."""
        trial = self.trial
        if trial is None:
            return True
        record = getattr(trial, "record", None)
        return True if record is None else bool(record(event))

    def _store_locked(self, event: EventBase) -> bool:
        """Keep ``event`` and fold it into the monitor; the caller holds the lock.

        Observed under the lock, so the monitor sees events in list order even when parallel
        tool calls report from several threads. Returns whether the event was kept.
        """
        if not self._keep(event):
            return False
        self._append_locked(event)
        monitor = self._monitor
        # The stock monitor folds the step at once: monitor_pending reads it right after.
        if (
            self._watched
            and (
                monitor._observe_folded(event)
                if type(monitor) is Monitor
                else monitor.observe(event)
            )
            is not None
        ):
            self._stepped = True
        return True

    def events_of(self, run_id: str) -> list[EventBase]:
        """The events of one run (a recorder that watched several runs holds them all)."""
        with self._lock:
            return [e for e in self.events if e.run_id == run_id]

    @property
    def run_ids(self) -> list[str]:
        """Run ids seen so far, in order of first appearance."""
        with self._lock:
            return list(dict.fromkeys(e.run_id for e in self.events))

    # ------------------------------------------------------------------ recording
    def current_run_id(self) -> str:
        """The run id events recorded now carry."""
        return self.run_id or ""

    def build(self, cls: type[EventBase], fields: dict[str, Any]) -> EventBase:
        """Build an event from fields the recorder's own code paths produced.

        The fast path (``construct``: what validation would build, without validating) unless
        a float field is NaN or infinite, which validation then refuses (the conformance suite
        checks that every event equals its validated copy).
        """
        for value in fields.values():
            if type(value) is float and value - value != 0.0:  # NaN or an infinity
                return cls(**fields)
        return construct(cls, fields)

    def emit(self, cls: type[EventBase], **fields: Any) -> EventBase:
        """Record one event with the current run id, the next sequence number and a timestamp."""
        if self._log is not None:
            self.stop_logging()
        fields.setdefault("run_id", self.current_run_id())
        with self._lock:
            fields["seq"] = self._seq
            fields.setdefault("ts", self._now())
            event = self.build(cls, fields)
            self._seq += 1  # after building: an event that cannot be built takes no number
            self._store_locked(event)
        self.after([event])
        return event

    def emit_fault(
        self, fault: FaultInjected | None, run_id: str | None = None, parent_id: Any = ...
    ) -> EventBase | None:
        """Record an injector's receipt, re-stamped with the run id and this recorder's order.

        The receipt keeps its own timestamp (the injector's clock) and, unless ``parent_id``
        is given, its own parent.
        """
        if fault is None:
            return None
        if self._log is not None:
            self.stop_logging()
        update: dict[str, Any] = {"run_id": run_id or self.current_run_id()}
        if parent_id is not ...:
            update["parent_id"] = parent_id
        with self._lock:
            update["seq"] = self._seq
            self._seq += 1
            event = fault.model_copy(update=update)
            self._store_locked(event)
        self.after([event])
        return event

    def emit_budget_halt(self, exc: Any, **fields: Any) -> EventBase:
        """Record a spent budget (``BudgetExceeded``) as an enforced ``halt`` event."""
        with self._lock:
            self._budget_halted = True
        return self.emit(Halt, **budget_halt_fields(exc), **fields)

    def budget_halt_once(self, exc: Any, **fields: Any) -> EventBase | None:
        """``emit_budget_halt`` the first time a budget stops this run; None afterwards.

        Once a budget ran out every later tool boundary raises again: the run halted once.
        """
        with self._lock:
            if self._budget_halted:
                return None
            self._budget_halted = True
        return self.emit(Halt, **budget_halt_fields(exc), **fields)

    # ------------------------------------------------------------------ ids and call linking
    def next_number(self, kind: str) -> int:
        """The next number (from 1) of ``kind`` ("call", "model", "span", ...) in this run."""
        with self._lock:
            n = self._counters.get(kind, 0) + 1
            self._counters[kind] = n
            return n

    def declare_call(self, tool: str) -> str:
        """A fresh id for a call of ``tool`` a model turn declared; that tool's next call
        claims it (``claim_call``)."""
        with self._lock:
            call_id = f"call-{self.next_number('call')}"
            self._declared.append((tool, call_id))
            return call_id

    def claim_call(self, tool: str) -> tuple[str, bool]:
        """The id the earliest unclaimed declaration of ``tool`` gave this call, and True; else a
        fresh id and False (the call is then linked to no model turn)."""
        with self._lock:
            declared = self._declared
            for i, (name, call_id) in enumerate(declared):
                if name == tool:
                    del declared[i]
                    return call_id, True
            return f"call-{self.next_number('call')}", False

    # ------------------------------------------------------------------ model calls
    def count_turn(self) -> None:
        """Count one model call against the trial's budgets (the same way in every adapter)."""
        if self.trial is not None:
            self.trial.count_turn()

    def emit_model_start(
        self, call: ModelCallRecord, *, model: str | None, messages: list[Any]
    ) -> EventBase:
        """Record that ``call`` went to ``model`` with ``messages`` (core ``ChatMessage`` s)."""
        return self.emit(
            ModelStart,
            run_id=call.run_id,
            call_id=call.call_id,
            model=model,
            messages=messages,
            parent_id=call.parent_id,
            attrs=dict(call.attrs),
        )

    def emit_model_end(
        self,
        call: ModelCallRecord,
        *,
        error: BaseException | None = None,
        attrs: dict[str, Any] | None = None,
        **fields: Any,
    ) -> EventBase:
        """Record how ``call`` ended: the reply's ``fields`` (text, reasoning, tool calls,
        usage), or ``error``; the latency is the time since the call began."""
        if error is not None:
            fields["error"] = describe_error(error)
        return self.emit(
            ModelEnd,
            run_id=call.run_id,
            call_id=call.call_id,
            latency_ms=(time.perf_counter() - call.t0) * 1000.0,
            parent_id=call.parent_id,
            attrs=dict(call.attrs if attrs is None else attrs),
            **fields,
        )

    # ------------------------------------------------------------------ spans
    def emit_span_start(self, span: SpanRecord) -> EventBase:
        """Record that ``span`` opened."""
        return self.emit(
            SpanStart,
            run_id=span.run_id,
            span_id=span.span_id,
            scope=span.scope,
            name=span.name,
            parent_id=span.parent_id,
        )

    def emit_span_end(
        self,
        span: SpanRecord,
        *,
        status: str | None = None,
        error: str | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> EventBase:
        """Record that ``span`` closed (``status`` is "error" when ``error`` is set, by default)."""
        return self.emit(
            SpanEnd,
            run_id=span.run_id,
            span_id=span.span_id,
            scope=span.scope,
            name=span.name,
            parent_id=span.parent_id,
            status=status if status is not None else ("error" if error else "ok"),
            error=error,
            attrs=dict(attrs or {}),
        )

    # ------------------------------------------------------------------ tool calls
    def emit_tool_start(
        self, call: ToolCallRecord, args: dict[str, Any], *, fault: FaultInjected | None = None
    ) -> EventBase:
        """Record that ``call`` began with ``args``, then ``fault``'s receipt when it is known
        before the tool runs (``emit_tool_end`` then leaves it out)."""
        event = self.emit(
            ToolStart,
            run_id=call.run_id,
            call_id=call.call_id,
            tool=call.tool,
            args=args,
            parent_id=call.parent_id,
            attrs=dict(call.attrs),
        )
        if fault is not None:
            self.emit_fault(fault, call.run_id, call.parent_id)
            call.fault = fault
        return event

    def emit_tool_end(
        self,
        call: ToolCallRecord,
        *,
        fault: FaultInjected | None = None,
        result: Any = None,
        status: str = "ok",
        error: str | None = None,
        error_type: str | None = None,
        latency_ms: float | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> EventBase:
        """Record how ``call`` ended: the fault's receipt first (hb-derive/1) unless the start
        recorded it, then ``tool_error`` when ``error`` is set, else ``tool_end`` with
        ``result`` and ``status``.

        ``latency_ms`` defaults to the time since the call began; ``attrs`` to the call's.
        """
        if latency_ms is None:
            latency_ms = (time.perf_counter() - call.t0) * 1000.0
        if fault is not None and fault is not call.fault:
            self.emit_fault(fault, call.run_id, call.parent_id)
        fields: dict[str, Any] = {
            "run_id": call.run_id,
            "call_id": call.call_id,
            "tool": call.tool,
            "latency_ms": latency_ms,
            "parent_id": call.parent_id,
            "attrs": dict(call.attrs if attrs is None else attrs),
        }
        if error is not None:
            return self.emit(ToolError, error=error, error_type=error_type, **fields)
        return self.emit(ToolEnd, result=result, status=status, **fields)

    def after(self, events: list[EventBase]) -> None:
        """After recording, outside the lock: the sink gets ``events``, then new monitor
        signals become events carrying the last one's run and parent ids."""
        if self.on_event is not None:
            for event in events:
                self.call_user(self.on_event, event)
        if not self._watched:
            return
        if events:
            last = events[-1]
            self.drain_monitor(last.run_id, getattr(last, "parent_id", None))
        else:
            self.drain_monitor(self.current_run_id(), None)

    # ------------------------------------------------------------------ monitor signals
    def monitor_pending(self) -> bool:
        """Whether the monitor decided something not yet recorded (checked without the lock).

        Directives and policy halts follow steps, so the monitor is asked only after an event
        completed one (asking makes a monitor that defers its steps fold them); a halt
        requested from outside shows at once.
        """
        monitor = self._monitor
        if monitor.halted and not self._halt_seen:
            return True
        if not self._stepped:
            return False
        self._stepped = False
        return len(monitor.directives) != self._directives_seen or (
            monitor.halted and not self._halt_seen
        )

    def drain_monitor(self, run_id: str, parent_id: str | None) -> None:
        """Turn new monitor directives and a new halt into events and user callbacks, once each.

        The signal events carry ``run_id`` and ``parent_id`` (those of the event before them);
        the monitor does not fold them.
        """
        if not self.monitor_pending():
            return  # the common case
        monitor = self._monitor
        new: list[MonitorDirective] = []
        record: dict[str, Any] | None = None
        extra: list[EventBase] = []
        with self._lock:
            if len(monitor.directives) > self._directives_seen:
                new = list(monitor.directives[self._directives_seen :])
                self._directives_seen += len(new)
            if monitor.halted and not self._halt_seen:
                self._halt_seen = True
                record = dict(monitor.halt_record or {})
            for d in new:
                extra.append(self._signal_locked(Directive, run_id, parent_id, directive_fields(d)))
            if record is not None:
                fields = halt_fields(record, enforced=monitor.enforce)
                extra.append(self._signal_locked(Halt, run_id, parent_id, fields))
        if self.on_event is not None:
            for event in extra:
                self.call_user(self.on_event, event)
        if self.on_directive is not None:
            for d in new:
                self.call_user(self.on_directive, d)
        if record is not None and self.on_halt is not None:
            self.call_user(self.on_halt, record)

    def _signal_locked(
        self, cls: type[EventBase], run_id: str, parent_id: str | None, fields: dict[str, Any]
    ) -> EventBase:
        fields.update(run_id=run_id, parent_id=parent_id, seq=self._seq, ts=self._now())
        self._seq += 1
        event = self.build(cls, fields)
        if self._keep(event):
            self._append_locked(event)
        return event

    # ------------------------------------------------------------------ errors
    def note(self, where: str, exc: BaseException) -> None:
        """Keep one of our own errors without raising (where raising would break the framework)."""
        self._errors.append(f"{where}: {type(exc).__name__}: {exc}")
        if self._first_error is None:
            self._first_error = exc
        if not self.strict:
            self.log.warning("hbeval capture error in %s: %r", where, exc, exc_info=True)

    def fail(self, where: str, exc: BaseException) -> None:
        """Keep and log one of our own errors: capture never breaks the agent (strict re-raises)."""
        self.note(where, exc)
        if self.strict:
            raise exc

    def call_user(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call a user callback; its error is kept as a capture error, never raised at the agent."""
        try:
            fn(*args)
        except Exception as exc:
            self.fail(f"user callback {getattr(fn, '__name__', fn)!r}", exc)


def never_raises(where: str) -> Callable[[F], F]:
    """Make a recorder method a framework callback that never breaks the agent.

    An exception inside it becomes a capture error (``BaseRecorder.fail``, named ``where``)
    and the callback returns None (so decorate only methods that may return None); in strict
    mode it is re-raised, for tests.
    """

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def callback(self: BaseRecorder, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                self.fail(where, exc)
                return None

        return cast(F, callback)

    return decorate
