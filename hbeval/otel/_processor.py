"""A span processor that turns GenAI / OpenInference spans into hb-events as they end.

The host's thread only appends the ended span to a bounded buffer (a full buffer drops the span
and counts it: capture never slows or blocks the agent); a worker drains it every
``interval`` seconds, or sooner when it fills. One worker thread maps each trace's spans
(``importers._spans.TraceMapper``) and feeds the events to a live :class:`~hbeval_core.Monitor`
per trace, so Safe Halt, Adapt-Plan and breaches work as with the framework adapters. Errors
inside the processor are logged once and swallowed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

from hbeval_core.events import EventBase
from hbeval_core.live.monitor import Monitor

from ..importers._spans import SpanData, TraceMapper

__all__ = ["HBEvalSpanProcessor", "TraceCapture"]

_log = logging.getLogger("hbeval.otel")

DEFAULT_MAX_QUEUE = 10_000
"""Ended spans waiting for the worker; more are dropped (and counted) rather than block."""
DEFAULT_INTERVAL = 0.02
"""Seconds the worker sleeps between drains when few spans arrive (the live monitor's lag)."""
DEFAULT_MAX_TRACES = 1_000
"""Traces kept in memory; the oldest finished ones are let go first."""


class TraceCapture:
    """One trace as hbeval sees it: its events, its live monitor, whether it has ended."""

    def __init__(self, run_id: str, trace_id: str, monitor: Monitor) -> None:
        self.trace_id = trace_id
        self.mapper = TraceMapper(run_id, trace_id)
        self.monitor = monitor

    @property
    def events(self) -> list[EventBase]:
        """The trace's hb-events so far."""
        return self.mapper.events

    @property
    def ended(self) -> bool:
        """Whether the trace's root span has ended."""
        return self.mapper.ended

    @property
    def tool_calls(self) -> int:
        """Tool calls seen so far."""
        return sum(1 for e in self.events if getattr(e, "kind", None) == "tool_start")

    @property
    def tool_errors(self) -> int:
        """Tool calls that failed."""
        return sum(1 for e in self.events if getattr(e, "kind", None) == "tool_error")

    @property
    def derivation(self) -> dict[str, dict[str, int]]:
        """How the tool calls' outcomes and links were derived (``attrs.derivation``), counted."""
        from ..importers._common import count_derivations

        return count_derivations(self.events)

    @property
    def inferred_figures(self) -> dict[str, str]:
        """Figures of this trace that rest on an inferred field (a call tied by tool name)."""
        from ..importers._common import inferred_figures

        return inferred_figures(self.derivation)


_TRACE_HEX: dict[int, str] = {}


def _trace_hex(value: int) -> str:
    """A trace id as 32 hex digits (cached: every span of a trace repeats it)."""
    text = _TRACE_HEX.get(value)
    if text is None:
        if len(_TRACE_HEX) > 4096:
            _TRACE_HEX.clear()
        text = _TRACE_HEX[value] = f"{value:032x}"
    return text


def span_data(span: Any) -> SpanData:
    """An SDK ``ReadableSpan`` in the mapper's form."""
    ctx = span.context
    parent = span.parent
    status = span.status
    code = getattr(getattr(status, "status_code", None), "name", None)
    events = span.events
    return SpanData(
        trace_id=_trace_hex(ctx.trace_id),
        span_id=f"{ctx.span_id:016x}",
        parent_id=None if parent is None else f"{parent.span_id:016x}",
        name=str(span.name),
        start=None if span.start_time is None else span.start_time / 1e9,
        end=None if span.end_time is None else span.end_time / 1e9,
        attributes=dict(span.attributes or {}),
        events=[(str(e.name), dict(e.attributes or {})) for e in events] if events else [],
        status_error=code == "ERROR",
        status_message=getattr(status, "description", None) or None,
    )


class HBEvalSpanProcessor(SpanProcessor):
    """An OpenTelemetry ``SpanProcessor`` that measures agents from their spans, live.

    Args:
        run_id: Prefix of every trace's event run id (``<run_id>/<trace id>``).
        monitor_factory: Builds the live monitor of each new trace (``Monitor()`` by default;
            pass thresholds, a halt policy or callbacks through it).
        on_event: Called on the worker thread with each hb-event as it is derived.
        on_trace_end: Called on the worker thread with each :class:`TraceCapture` whose root
            span ended.
        max_queue: Ended spans that may wait for the worker; beyond it spans are dropped
            (``dropped`` counts them).
        max_traces: Traces kept in ``traces``.
        interval: Seconds between the worker's drains when few spans arrive.
    """

    def __init__(
        self,
        *,
        run_id: str = "otel",
        monitor_factory: Callable[[], Monitor] | None = None,
        on_event: Callable[[EventBase], Any] | None = None,
        on_trace_end: Callable[[TraceCapture], Any] | None = None,
        max_queue: int = DEFAULT_MAX_QUEUE,
        max_traces: int = DEFAULT_MAX_TRACES,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self.run_id = run_id
        self._monitor_factory = monitor_factory or Monitor
        self._on_event = on_event
        self._on_trace_end = on_trace_end
        # A deque, not a queue.Queue: append and popleft need no lock and wake no thread, so
        # the host pays one append per span; the worker drains in batches.
        self._buffer: deque[Any] = deque()
        self._max_queue = max_queue
        self._wake_at = max(1, max_queue // 4)
        self._interval = interval
        self._wake = threading.Event()
        self._busy = False
        self._stopping = False
        self._max_traces = max_traces
        self._traces: OrderedDict[str, TraceCapture] = OrderedDict()
        self._lock = threading.Lock()
        self._logged = False
        self.dropped = 0
        """Spans dropped because the queue was full."""
        self.errors = 0
        """Spans the worker failed to map (the first failure is logged)."""
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="hbeval-otel", daemon=True)
        self._worker.start()

    # ------------------------------------------------------------------ SpanProcessor
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Nothing to do when a span starts: spans are read once they end."""

    def on_end(self, span: Any) -> None:
        """Queue the ended span for the worker; never blocks, never raises."""
        if self._closed:
            return
        try:
            n = len(self._buffer)
            if n >= self._max_queue:
                self.dropped += 1
                return
            self._buffer.append(span)
            if n == self._wake_at:
                self._wake.set()
        except Exception as exc:  # capture never breaks the host
            self._log_once("queueing a span failed", exc)

    def shutdown(self) -> None:
        """Map what is queued, then stop the worker. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._wake.set()
        self._worker.join(timeout=5)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Wait until every queued span was mapped (True), or the timeout passed (False)."""
        deadline = time.monotonic() + timeout_millis / 1000.0
        while True:
            # The worker marks itself busy before it takes a span, so an empty buffer and an
            # idle worker mean every span queued so far has been mapped.
            if not self._buffer and not self._busy:
                return True
            if time.monotonic() >= deadline or not self._worker.is_alive():
                return False
            self._wake.set()
            time.sleep(0.001)

    # ------------------------------------------------------------------ reads
    @property
    def traces(self) -> dict[str, TraceCapture]:
        """The traces seen, oldest first, by trace id (hex)."""
        with self._lock:
            return dict(self._traces)

    def monitor(self, trace_id: str) -> Monitor | None:
        """The live monitor of a trace, or None if no span of it was seen."""
        with self._lock:
            capture = self._traces.get(trace_id)
        return None if capture is None else capture.monitor

    # ------------------------------------------------------------------ worker
    def _log_once(self, what: str, exc: BaseException) -> None:
        if not self._logged:
            self._logged = True
            _log.warning("hbeval span processor: %s: %s (further errors not logged)", what, exc)

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            self._drain()
            if self._stopping and not self._buffer:
                return

    def _drain(self) -> None:
        while self._buffer:
            self._busy = True
            try:
                span = self._buffer.popleft()
            except IndexError:
                break
            try:
                self._handle(span)
            except Exception as exc:  # a span the mapper cannot read must not stop the worker
                self.errors += 1
                self._log_once("mapping a span failed", exc)
        self._busy = False

    def _handle(self, span: Any) -> None:
        data = span if isinstance(span, SpanData) else span_data(span)
        with self._lock:
            capture = self._traces.get(data.trace_id)
            if capture is None:
                capture = TraceCapture(
                    f"{self.run_id}/{data.trace_id}", data.trace_id, self._monitor_factory()
                )
                self._traces[data.trace_id] = capture
                self._evict()
        for event in capture.mapper.feed(data):
            capture.monitor.observe(event)
            if self._on_event is not None:
                self._on_event(event)
        if capture.ended and self._on_trace_end is not None:
            self._on_trace_end(capture)

    def _evict(self) -> None:
        while len(self._traces) > self._max_traces:
            oldest = next((k for k, c in self._traces.items() if c.ended), None)
            self._traces.pop(oldest if oldest is not None else next(iter(self._traces)))
