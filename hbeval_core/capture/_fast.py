"""The fast path for events a recorder builds itself: no second validation, and no work at all
for what nothing reads during a run.

Building and validating a pydantic event costs microseconds, and a tool turn builds about ten;
capture sits on the agent's hot path. Two shortcuts, for fields the recorder's own code has
checked (validation stays at every trust boundary: files, stores, imports, user input):

* ``construct(cls, fields)`` builds exactly what validation would, without validating;
* ``DeferredRecorder`` keeps the events the live monitor never reads (spans, run starts) as
  builders and their arguments, built when ``events`` is first read, unless a sink, a battery
  trial or anything else needs them at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hbeval_core.live.monitor import Monitor

from ..events import EventBase
from ._construct import construct
from ._recorder import BaseRecorder

__all__ = ["Deferred", "DeferredRecorder"]

# An event not built yet: (builder, *its arguments, seq, ts).
Deferred = tuple[Any, ...]


class DeferredRecorder(BaseRecorder):
    """A ``BaseRecorder`` whose events the monitor never reads may be built on first read.

    ``record_checked_locked`` records an event from fields the caller vouches for (built with
    ``construct``); ``record_deferred_locked`` an event the monitor never reads, kept as its
    builder until ``events`` is read; ``add_finisher_locked`` work to do on an event before it
    is read (converting a model call's input messages, say).
    """

    def _init_events(self) -> None:
        self._events: list[EventBase] = []
        # Recorded since ``events`` was last read, in order: events, or deferred builders.
        self._pending: list[EventBase | Deferred] = []
        # Work to finish before ``events`` is read: (what, a callable doing it).
        self._finishers: list[tuple[str, Callable[[], None]]] = []

    def _append_locked(self, event: EventBase) -> None:
        self._pending.append(event)

    @property
    def events(self) -> list[EventBase]:
        """Every event recorded so far, in the order it was recorded.

        Events the monitor folds are built as they happen; deferred ones are built here, on
        first read, and pending finishers run. The list is the same object on every read; it
        grows as the recorder records.
        """
        if self._log:
            self.flush_log()
        if self._pending:
            with self._lock:
                self._flush_locked()
        return self._events

    @events.setter
    def events(self, value: list[EventBase]) -> None:
        with self._lock:
            self._pending.clear()
            self._finishers.clear()
            self._events = value

    def defer_events(self) -> bool:
        """Whether events the monitor never reads may wait until ``events`` is read.

        Not when a streaming sink or a battery trial (whose trace a timeout may cut) takes
        each event as it happens.
        """
        return self.trial is None and self.on_event is None

    def add_finisher_locked(self, what: str, finish: Callable[[], None]) -> None:
        """Run ``finish`` before ``events`` is next read (its error is a capture error)."""
        self._finishers.append((what, finish))

    def record_checked_locked(
        self, cls: type[EventBase], fields: dict[str, Any], checked: bool
    ) -> EventBase:
        """Number, build, record and observe one event; the caller holds the lock.

        ``fields`` holds every field but ``seq`` and ``ts``. ``checked``: the caller vouches
        that each already passes validation (see ``construct``) but ``run_id``, which is
        checked here (a fixed run id comes from the user); unchecked fields are validated.
        """
        fields["seq"] = self._seq
        fields["ts"] = self._now()
        self._seq += 1
        event = (
            construct(cls, fields)
            if checked and type(fields["run_id"]) is str
            else self.build(cls, fields)
        )
        if self.trial is not None and not self._keep(event):
            return event
        self._pending.append(event)
        # Observed under the lock so the live monitor sees events in list order, even when
        # parallel tool calls report from several threads.
        monitor = self._monitor
        # The stock monitor folds the step at once: monitor_pending reads it right after.
        if (
            monitor._observe_folded(event) if type(monitor) is Monitor else monitor.observe(event)
        ) is not None:
            self._stepped = True
        return event

    def record_deferred_locked(self, builder: Any, *args: Any) -> EventBase | None:
        """Record an event the monitor never reads: deferred as ``(builder, *args, seq, ts)``
        unless ``defer_events`` says no (then it is built and returned)."""
        seq = self._seq
        self._seq = seq + 1
        if self.defer_events():
            self._pending.append((builder, *args, seq, self._now()))
            return None
        event: EventBase = builder(*args, seq, self._now())
        if self._keep(event):
            self._pending.append(event)
        return event

    def _trim_locked(self, limit: int) -> None:
        """Keep only the newest ``limit`` events (the caller holds the lock)."""
        if len(self._pending) + len(self._events) <= limit:
            return
        self._flush_locked()
        excess = len(self._events) - limit
        if excess > 0:
            del self._events[:excess]

    def _flush_locked(self) -> None:
        """Run the finishers, build the deferred events, move everything into ``events``."""
        if self._finishers:
            for what, finish in self._finishers:
                try:
                    finish()
                except Exception as exc:
                    self.fail(f"events: {what}", exc)
            self._finishers.clear()
        pending, self._pending = self._pending, []
        out = self._events
        for item in pending:
            if type(item) is tuple:
                out.append(item[0](*item[1:]))  # pure builders of checked values
            else:
                out.append(item)  # type: ignore[arg-type]
