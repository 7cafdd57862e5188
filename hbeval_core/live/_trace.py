"""Scoring a recorded trace file: the fast reader, the deriver and the monitor in one loop.

``fold_trace(source, monitor)`` gives the monitor exactly what feeding it every event of
``read_events(source)`` through ``observe`` gives, at the parser's floor: events the fast
reader proves valid arrive as msgspec structs when msgspec is installed (``events._structs``),
else as dicts (``events._fast``). While ``on_step`` reads each step, they are derived by
``Deriver.feed`` / ``feed_raw`` and folded one at a time; from then on (or from the start,
without ``on_step``) the scoring loop (``_scoreloop``) derives them inline, made from the same
rules (``_rules``) and working on the same deriver state, and folds the steps in batches as
tuples; with msgspec, a file is then decoded a block of lines per call
(``events._structs.struct_chunks``), without it read in blocks of lines whose NaN guard is
looked up once per block (``events._fast.line_blocks``).

The cyclic garbage collector is paused while a file is folded: parsed events and derivation
state hold no reference cycles (reference counting frees them), and without the pause the
collector walks the growing derivation state again and again (on a 1M-event trace it took about
40% of the time; ``benchmarks/bench_score.py``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from ..events._fast import fast_lines, line_blocks, slow_event, twin_adapter
from ..events._structs import struct_chunks, struct_decoder, struct_types
from ._scoreloop import fold_dicts, fold_structs
from ._steps import StepTuple
from .derive import StepRecord
from .monitor import _QUEUE_MAX, Monitor

__all__ = ["fold_trace"]


def fold_trace(
    source: str | Path | IO[str] | IO[bytes] | Iterable[str | bytes],
    monitor: Monitor,
    on_step: Callable[[StepRecord], bool | None] | None = None,
    *,
    structs: bool | None = None,
) -> Monitor:
    """Feed every event of a JSONL source to ``monitor``; returns it.

    ``on_step(step)`` is called after each step is recorded (the monitor's metrics then
    include it); once it returns False it is not called again. Raises ``EventFormatError``
    for a malformed line, exactly as ``read_events``. ``structs`` picks the fast reader:
    msgspec structs (True), pydantic-validated dicts (False), or structs when msgspec is
    installed (None); the results are the same.
    """
    # Long because: the read-parse-derive-fold loop is inlined on purpose (a generator or a
    # helper call per event costs a measurable share of a microsecond-per-event path).
    decoder = struct_decoder() if structs is not False else None
    if structs and decoder is None:
        raise ImportError("structs=True needs msgspec (pip install 'hbeval[all]')")
    if not monitor._direct:  # a subclass that overrides record_step sees every step
        from ..events import event_adapter

        validate = event_adapter().validate_python
        for ev in fast_lines(source):
            step = monitor.observe(validate(ev) if ev.__class__ is dict else ev)  # type: ignore[arg-type]
            if step is not None and on_step is not None and on_step(step) is False:
                on_step = None
        return monitor
    monitor._drain()
    deriver = monitor._deriver
    feed = deriver.feed
    fold, lock = monitor._fold, monitor._lock
    batch: list[StepTuple] = []
    decode: Callable[[bytes], Any]
    feed_fast: Callable[[Any], Any]
    if decoder is not None:  # structs read like models: derived by feed
        decode, feed_fast, check_nan = decoder.decode, feed, False
    else:  # pydantic's parser takes a NaN inside a free-form field: those lines go the slow way
        decode, feed_fast, check_nan = (
            twin_adapter().validator.validate_json,
            deriver.feed_raw,
            True,
        )

    def flush(steps: list[StepTuple]) -> None:
        with lock:
            fold(steps)

    fh = open(source, "rb") if isinstance(source, (str, Path)) else None
    collecting = gc.isenabled()
    try:
        lines: Iterator[Any] = iter(fh if fh is not None else source)  # type: ignore[arg-type]
        lineno = 0
        gc.disable()
        with monitor._derive_lock:
            # While on_step reads each step: fast_structs' / fast_lines' loop, inlined (at a
            # microsecond per event a generator costs), one step folded at a time.
            for raw in lines if on_step is not None else ():
                lineno += 1
                if raw.__class__ is not bytes:
                    raw = raw.encode("utf-8")
                got: Any = None
                if not check_nan or (raw.find(b"NaN") < 0 and raw.find(b"Infinity") < 0):
                    try:
                        ev = decode(raw)
                    except (ValueError, RecursionError):
                        pass
                    else:
                        got = feed_fast(ev)
                        if got is None:
                            continue
                if got is None:  # refused by the fast reader: exactly read_events' path
                    model = slow_event(raw, lineno)
                    if model is None:
                        continue
                    got = feed(model)
                    if got is None:
                        continue
                flush([got.as_tuple()])
                if on_step(got) is False:  # type: ignore[misc]  # not None inside this loop
                    on_step = None  # no more per-step reads: fold in batches from here
                    break
            if on_step is None:
                # Nothing reads steps one by one: the scoring loop folds the rest in batches.
                if fh is None:  # the scoring loop reads bytes
                    lines = _as_bytes(lines)
                deriver._as_tuples = True
                size = _QUEUE_MAX if monitor._defer else 1
                if decoder is not None:
                    types = struct_types()
                    assert types is not None  # as the decoder: msgspec is installed
                    # From a file: blocks of lines decoded in one call each (struct_chunks).
                    chunks = struct_chunks(lines, lineno, fh)
                    fold_structs(chunks, deriver, types, flush, batch, size)
                else:
                    # From a file: blocks of lines, the NaN guard looked up once a block.
                    blocks = line_blocks(lines, fh)
                    fold_dicts(blocks, lineno, deriver, decode, flush, batch, size)
    finally:
        deriver._as_tuples = False
        if collecting:
            gc.enable()
        if fh is not None:
            fh.close()
    return monitor


def _as_bytes(lines: Iterator[Any]) -> Iterator[bytes]:
    for raw in lines:
        yield raw if raw.__class__ is bytes else raw.encode("utf-8")
