"""Scoring a file in blocks of lines (``events._structs.struct_chunks``) reads each line as alone.

From a file, the msgspec reader decodes a block of lines in one call, each line wrapped as a
one-element array; a block that fails, or yields more values than it has lines, is read again
line by line. These tests hold it to the line-by-line model path (``read_events`` ->
``derive_steps``) on the same bytes: the same steps, or the same error (message, line, field),
for every line of the malformed-input corpus placed inside a block, for lines that are not
events alone but join into events across a newline, and for blank lines, CRLF, a header
mid-file and a last line without a newline; and ``fold_trace`` on a file scores as the model
path does, whether steps are read one by one first or not.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from hbeval_core.events import read_events
from hbeval_core.events._structs import chunk_decoder, struct_chunks, struct_decoder, struct_types
from hbeval_core.live._scoreloop import fold_structs
from hbeval_core.live._trace import fold_trace
from hbeval_core.live.derive import Deriver, derive_steps
from hbeval_core.live.monitor import Monitor

from ..events.test_fast_reader import corpus
from .test_scoreloop import generated, model_summary, outcome, summary

pytestmark = pytest.mark.skipif(struct_decoder() is None, reason="msgspec is not installed")

START = '{"kind":"tool_start","run_id":"r","call_id":"c1","tool":"t","args":{"a":1}}'
END = '{"kind":"tool_end","run_id":"r","call_id":"c1","tool":"t","result":"ok"}'


def model_outcome(data: bytes) -> tuple[str, Any]:
    return outcome(lambda: [s.as_tuple() for s in derive_steps(read_events(io.BytesIO(data)))])


def block_outcome(data: bytes, size: int) -> tuple[str, Any]:
    """The scoring loop's steps (or error) reading ``data`` from a file in ``size``-byte blocks."""

    def run() -> list[Any]:
        deriver = Deriver()
        deriver._as_tuples = True
        got: list[Any] = []
        fh = io.BytesIO(data)
        fold_structs(
            struct_chunks(iter(fh), 0, fh, size), deriver, struct_types(), got.extend, [], 7
        )
        return got

    return outcome(run)


def joined(lines: list[str | bytes], end: bytes = b"\n") -> bytes:
    return b"".join((x.encode() if isinstance(x, str) else x) + end for x in lines)


def test_each_malformed_line_inside_a_block_fails_or_scores_as_alone() -> None:
    prefix = generated(0, 3)
    suffix = generated(2, 2)
    assert len(prefix) > 8
    mismatches = []
    for line in corpus():
        data = joined([*prefix, line, *suffix])
        want = model_outcome(data)
        # One block holding the line in its middle, and every line a block of its own.
        for size in (len(data), 1):
            got = block_outcome(data, size)
            if got != want:
                mismatches.append((line[:200], size, want, got))
    assert mismatches == []


def test_one_bad_line_in_the_middle_of_a_block_is_named_by_its_line() -> None:
    lines = generated(0, 60)
    bad = len(lines) // 2
    lines[bad] = lines[bad].replace('"run_id": ', '"run_id": 5, "x": ', 1)
    data = joined(lines)
    got = block_outcome(data, 1 << 15)
    assert got == model_outcome(data)
    assert got[0] == "error" and got[1][1] == bad + 1


# Lines that are no event alone, placed so that their block decodes when wrapped: a value
# split over two lines (inside a string, at a nested array of a free-form field, between
# members) and a line with two values, which together keep as many values as lines.
SPLIT = [
    ['{"kind":"tool_start","run_id":"r","call_id":"x', 'y","tool":"t"}'],
    ['{"kind":"tool_start","run_id":"r","call_id":"x","tool":"t","args":{"a":[[1', "2]]}}"],
    ['{"kind":"tool_start","run_id":"r","call_id":"x","tool":"t"', ',"args":{"a":1}}'],
    ['{"kind":"tool_start","run_id":"r","call_id":"x"', '"tool":"t"}'],
]
TWO_IN_ONE = [f"{START}] [{END}", f"{START} {END}", f"{START}{END}", f"{START}],[{END}"]


@pytest.mark.parametrize("two", TWO_IN_ONE)
@pytest.mark.parametrize("split", SPLIT, ids=range(len(SPLIT)))
def test_lines_that_join_into_events_across_a_newline_fail_as_alone(
    split: list[str], two: str
) -> None:
    for lines in ([START, *split, two, END], [START, two, *split, END], [two], split):
        data = joined(lines)
        want = model_outcome(data)
        assert want[0] == "error"
        for size in (len(data), 1, 40):
            assert block_outcome(data, size) == want, (lines, size)
        # The block's one decode call alone does not tell: it fails, or counts more values
        # than lines, which sends the block line by line.
        wrapped = b"[" + data.replace(b"\n", b"]\n[")
        try:
            count = len(chunk_decoder()(memoryview(wrapped)[:-1]))
        except ValueError:
            continue
        assert count != data.count(b"\n"), lines


LAYOUTS = {
    "blank lines": lambda ls: [ls[0], "", *ls[1:3], "   ", "\t", *ls[3:]],
    "crlf": lambda ls: [x + "\r" for x in ls],
    "spaces around": lambda ls: [f"  {x} " for x in ls],
    "header mid-file": lambda ls: [*ls[:5], '{"format":"hb-events/1"}', *ls[5:]],
    "form feed line": lambda ls: [*ls[:5], "\x0c", *ls[5:]],
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("final_newline", [True, False])
def test_layouts_score_as_line_by_line(layout: str, final_newline: bool) -> None:
    lines = LAYOUTS[layout](generated(1, 40))
    data = joined(lines)
    if not final_newline:
        data = data[:-1]
    want = model_outcome(data)
    for size in (len(data) + 1, 1 << 15, 1000, 97, 1):
        assert block_outcome(data, size) == want, size


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("stop_after", [None, 0, 30])
def test_files_score_as_the_model_path(tmp_path: Path, seed: int, stop_after: int | None) -> None:
    lines = generated(seed, 1500)  # several blocks of CHUNK_BYTES
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > 4 * (1 << 15)
    want = model_summary(lines)
    rows: list[Any] = []

    def on_step(step: Any) -> bool:
        rows.append(step)
        return stop_after is not None and len(rows) <= stop_after

    got = fold_trace(path, Monitor(), on_step if stop_after is not None else None)
    assert summary(got) == want
    assert block_outcome(path.read_bytes(), 1 << 15) == model_outcome(path.read_bytes())


def test_a_trace_of_lines_only_the_model_reads_scores_the_same(tmp_path: Path) -> None:
    """Every block fails (a step event or a lax value in each): read line by line, backing off."""
    lines = []
    for i, line in enumerate(generated(3, 1500)):
        lines.append(line)
        if i % 7 == 0:
            lines.append(json.dumps({"kind": "step", "run_id": "r0", "action": f"a{i % 5}"}))
    data = joined(lines)
    for size in (1 << 15, 300):
        assert block_outcome(data, size) == model_outcome(data)
