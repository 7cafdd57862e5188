"""What a proxy saw in one session, as hb-events with receipts, kept until the session ends.

Handlers only append an event to a list under a lock (no I/O on the request path); the store is
written once, after the session (``write``): a run ``proxy-<kind>-<id>`` with one trial stream
per session key. Secrets never enter a record: ``redact_headers`` drops ``Authorization`` and
API-key headers before anything is kept.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from hbeval_core.events import EventBase, FaultInjected, RunEnd, RunStart
from hbeval_core.fingerprint import fingerprint

__all__ = ["REDACTED", "SessionRecord", "redact_headers", "write_sessions"]

REDACTED: Final = "[redacted]"
_SECRET_HEADERS: Final = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with every credential-bearing value replaced by ``[redacted]``."""
    return {k: (REDACTED if k.lower() in _SECRET_HEADERS else v) for k, v in headers.items()}


@dataclass
class SessionRecord:
    """One proxy session's events, in order; ``emit`` is safe from any thread."""

    kind: str
    """``mcp`` or ``openai``."""
    session: str = "session-0"
    """The trial key the session's events are stored under."""
    run_id: str = field(default_factory=lambda: f"proxy-{uuid.uuid4().hex[:12]}")
    events: list[EventBase] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _ended: bool = field(default=False, repr=False)

    def emit(self, cls: type[EventBase], *, at: float | None = None, **fields: Any) -> EventBase:
        """Build and keep one event with this run's id, the next sequence number and the time
        (``at``: when what it records happened, if not now)."""
        with self._lock:
            ts = time.time() if at is None else at
            event = cls(run_id=self.run_id, seq=len(self.events), ts=ts, **fields)
            self.events.append(event)
            return event

    def keep(self, event: EventBase) -> EventBase:
        """Keep an event built elsewhere (an injector's receipt), renumbered into this record."""
        with self._lock:
            copy = event.model_copy(update={"run_id": self.run_id, "seq": len(self.events)})
            self.events.append(copy)
            return copy

    def start(self, **attrs: Any) -> None:
        """The session's ``run_start``."""
        self.emit(RunStart, framework=f"{self.kind}-proxy", attrs=attrs)

    def end(self, status: str = "ok", **attrs: Any) -> None:
        """The session's ``run_end`` (once)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        self.emit(RunEnd, status=status, attrs=attrs)

    def amend(self, event: EventBase, **attrs: Any) -> EventBase:
        """Replace a kept event by a copy with ``attrs`` added (a receipt's sequel)."""
        with self._lock:
            for i, kept in enumerate(self.events):
                if kept is event:
                    copy = kept.model_copy(update={"attrs": {**kept.attrs, **attrs}})
                    self.events[i] = copy
                    return copy
        raise ValueError("amend: the event is not in this record")

    @property
    def receipts(self) -> list[FaultInjected]:
        """Every fault the proxy planted in this session, in order."""
        with self._lock:
            return [e for e in self.events if isinstance(e, FaultInjected)]

    def write(self, store: Any, *, agent_id: str = "proxy", label: str | None = None) -> str:
        """Store the session (a store object or a path/URL) as a run; returns the run id."""
        from hbeval.store import open_store
        from hbeval.store.records import RUN_COMPLETED, RunRecord

        own = isinstance(store, (str, bytes)) or hasattr(store, "__fspath__")
        target = open_store(store) if own else store
        try:
            with self._lock:
                events = list(self.events)
            battery = label or f"{self.kind}-proxy"
            target.start_run(
                RunRecord(
                    run_id=self.run_id,
                    agent_id=agent_id,
                    battery=battery,
                    measurement_fingerprint=fingerprint({"proxy": battery, "run": self.run_id}),
                    config={"proxy": self.kind, "session": self.session},
                )
            )
            target.record_events(self.run_id, self.session, events)
            target.finish_run(self.run_id, RUN_COMPLETED)
        finally:
            if own:
                target.close()
        return self.run_id


def write_sessions(
    store: Any,
    run_id: str,
    records: list[SessionRecord],
    *,
    kind: str,
    agent_id: str = "proxy",
    label: str | None = None,
) -> str:
    """Store several sessions of one proxy as one run, a trial stream per session."""
    from hbeval.store import open_store
    from hbeval.store.records import RUN_COMPLETED, RunRecord

    own = isinstance(store, (str, bytes)) or hasattr(store, "__fspath__")
    target = open_store(store) if own else store
    try:
        battery = label or f"{kind}-proxy"
        target.start_run(
            RunRecord(
                run_id=run_id,
                agent_id=agent_id,
                battery=battery,
                measurement_fingerprint=fingerprint({"proxy": battery, "run": run_id}),
                config={"proxy": kind, "sessions": [r.session for r in records]},
            )
        )
        for record in records:
            with record._lock:
                events = list(record.events)
            target.record_events(run_id, record.session, events)
        target.finish_run(run_id, RUN_COMPLETED)
    finally:
        if own:
            target.close()
    return run_id
