"""Scoring a recorded trace file: the fast reader, the deriver and the monitor in one loop.

``fold_trace(source, monitor)`` gives the monitor exactly what feeding it every event of
``read_events(source)`` through ``observe`` gives, at the parser's floor: events the fast
reader proves valid arrive as dicts (``events._fast``) and are derived from them
(``Deriver.feed_raw``), and steps are folded in batches when nothing observes them one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from ..events._fast import fast_lines, slow_event, twin_adapter
from ._steps import StepTuple
from .derive import StepRecord
from .monitor import _QUEUE_MAX, Monitor

__all__ = ["fold_trace"]


def fold_trace(
    source: str | Path | IO[str] | IO[bytes] | Iterable[str | bytes],
    monitor: Monitor,
    on_step: Callable[[StepRecord], bool | None] | None = None,
) -> Monitor:
    """Feed every event of a JSONL source to ``monitor``; returns it.

    ``on_step(step)`` is called after each step is recorded (the monitor's metrics then
    include it); once it returns False it is not called again. Raises ``EventFormatError`` for a malformed line, exactly as ``read_events``.
    """
    events = fast_lines(source)
    if not monitor._direct:  # a subclass that overrides record_step sees every step
        from ..events import event_adapter

        validate = event_adapter().validate_python
        for ev in events:
            step = monitor.observe(validate(ev) if ev.__class__ is dict else ev)  # type: ignore[arg-type]
            if step is not None and on_step is not None and on_step(step) is False:
                on_step = None
        return monitor
    monitor._drain()
    deriver = monitor._deriver
    feed, feed_raw = deriver.feed, deriver.feed_raw
    fold, lock = monitor._fold, monitor._lock
    size = _QUEUE_MAX if monitor._defer and on_step is None else 1
    batch: list[StepTuple] = []
    validate_twin = twin_adapter().validator.validate_json
    fh = open(source, "rb") if isinstance(source, (str, Path)) else None
    try:
        lines: Iterable[Any] = fh if fh is not None else source  # type: ignore[assignment]
        lineno = 0
        with monitor._derive_lock:
            # fast_lines' loop, inlined: at a microsecond per event a generator costs.
            for raw in lines:
                lineno += 1
                if raw.__class__ is not bytes:
                    raw = raw.encode("utf-8")
                step = None
                if raw.find(b"NaN") < 0 and raw.find(b"Infinity") < 0:
                    try:
                        d = validate_twin(raw)
                    except ValueError:
                        pass
                    else:
                        step = feed_raw(d)
                        if step is None:
                            continue
                if step is None:
                    model = slow_event(raw, lineno)
                    if model is None:
                        continue
                    step = feed(model)
                    if step is None:
                        continue
                batch.append(step.as_tuple())
                if len(batch) >= size:
                    with lock:
                        fold(batch)
                    batch = []
                    if on_step is not None and on_step(step) is False:
                        on_step = None  # no more per-step reads: fold in batches from here
                        size = _QUEUE_MAX if monitor._defer else 1
            if batch:
                with lock:
                    fold(batch)
    finally:
        if fh is not None:
            fh.close()
    return monitor
