"""A line nested close to the JSON reader's limit is read, or refused, alike by every reader
and from every caller.

The reader's limit depends on how deep the caller's stack already is, so near it a line was
taken when read from a shallow stack and refused from a deeper one (or by ``hbeval score``'s
fallback, which reads a refused line from deeper down). The boundary is found here from a
shallow stack, then every reader is asked about the depths around it from deeper stacks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from hbeval_core.events import EventFormatError, read_events
from hbeval_core.live._trace import fold_trace
from hbeval_core.live.monitor import Monitor

from .test_scoreloop import MODE_IDS, MODES, model_summary, summary

HEAD = [
    {"kind": "run_start", "run_id": "r1", "seq": 0, "ts": 1.0},
    {"kind": "model_start", "run_id": "r1", "seq": 1, "ts": 1.1, "call_id": "m1"},
    {
        "kind": "model_end",
        "run_id": "r1",
        "seq": 2,
        "ts": 1.2,
        "call_id": "m1",
        "tool_calls": [{"id": "c1", "name": "t", "args": {"x": 1}}],
    },
    {"kind": "tool_start", "run_id": "r1", "seq": 3, "ts": 1.3, "tool": "t", "call_id": "c1"},
]
TAIL = {"kind": "run_end", "run_id": "r1", "seq": 5, "ts": 1.5, "status": "ok"}


def lines(depth: int) -> list[str]:
    deep = (
        '{"kind":"tool_end","run_id":"r1","seq":4,"ts":1.4,"tool":"t","call_id":"c1",'
        f'"result":{"[" * depth}{"]" * depth}}}'
    )
    return [*map(json.dumps, HEAD), deep, json.dumps(TAIL)]


def accepted(read: Callable[[], Any]) -> bool:
    try:
        read()
    except EventFormatError as exc:
        assert "nested too deeply" in str(exc) and exc.line == 5, exc
        return False
    return True


def from_deeper(frames: int, fn: Callable[[], Any]) -> Any:
    """``fn()`` called with ``frames`` more Python frames on the stack."""
    if frames == 0:
        return fn()
    return from_deeper(frames - 1, fn)


def model_reads(depth: int) -> bool:
    return accepted(lambda: list(read_events(iter(lines(depth)))))


def boundary() -> int:
    """The deepest line ``read_events`` takes from this (shallow) stack."""
    lo, hi = 10, 20_000  # taken, refused
    assert model_reads(lo) and not model_reads(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if model_reads(mid) else (lo, mid)
    return lo


@pytest.fixture(scope="module")
def limit() -> int:
    return boundary()


@pytest.mark.parametrize("frames", [50, 300])
def test_the_model_path_reads_the_same_from_a_deeper_stack(limit: int, frames: int) -> None:
    for depth in (limit - 40, limit - 1, limit, limit + 1):
        got = from_deeper(frames, lambda d=depth: model_reads(d))  # type: ignore[misc]
        assert got == (depth <= limit), (depth, limit, frames)


@pytest.mark.parametrize("structs", MODES, ids=MODE_IDS)
def test_the_score_loop_reads_what_the_model_path_reads(limit: int, structs: bool) -> None:
    for depth in (limit - 40, limit - 1, limit, limit + 1):
        text = lines(depth)
        for frames in (0, 200):
            got = from_deeper(
                frames,
                lambda t=text: accepted(  # type: ignore[misc]
                    lambda: fold_trace(iter(t), Monitor(), structs=structs)
                ),
            )
            assert got == (depth <= limit), (depth, limit, frames)
        if depth <= limit:
            want = model_summary(text)
            assert summary(fold_trace(iter(text), Monitor(), structs=structs)) == want
