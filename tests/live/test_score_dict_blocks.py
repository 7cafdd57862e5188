"""Scoring a file with the dict reader in blocks (``events._fast.line_blocks``) reads as line by line.

Without msgspec, a file is read in blocks of whole lines and the NaN guard (a line that may hold
``NaN`` or ``Infinity`` goes the validated way, since pydantic's parser would take one inside a
free-form field) is looked up once per block by ``may_hold_nan``, exactly
``b"NaN" in block or b"Infinity" in block``. These tests hold that to its definition, the
blocks to the file's own lines, and the scoring loop over blocks to the model path
(``read_events`` -> ``derive_steps``): the same steps, or the same error (message, line, field),
for every line of the malformed-input corpus and for NaN and infinities hidden in a block.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from hbeval_core.events import read_events
from hbeval_core.events._fast import line_blocks, may_hold_nan, twin_adapter
from hbeval_core.live._scoreloop import fold_dicts
from hbeval_core.live._trace import fold_trace
from hbeval_core.live.derive import Deriver, derive_steps
from hbeval_core.live.monitor import Monitor

from ..events.test_fast_reader import corpus
from .test_scoreloop import generated, model_summary, outcome, summary


def model_outcome(data: bytes) -> tuple[str, Any]:
    return outcome(lambda: [s.as_tuple() for s in derive_steps(read_events(io.BytesIO(data)))])


def dict_block_outcome(data: bytes, size: int) -> tuple[str, Any]:
    """The dict scoring loop's steps (or error) reading ``data`` from a file in blocks."""

    def run() -> list[Any]:
        deriver = Deriver()
        deriver._as_tuples = True
        got: list[Any] = []
        fh = io.BytesIO(data)
        validate = twin_adapter().validator.validate_json
        fold_dicts(line_blocks(iter(fh), fh, size), 0, deriver, validate, got.extend, [], 7)
        return got

    return outcome(run)


def joined(lines: list[str | bytes]) -> bytes:
    return b"".join((x.encode() if isinstance(x, str) else x) + b"\n" for x in lines)


def test_may_hold_nan_is_exactly_the_two_searches() -> None:
    rng = random.Random(7)
    # Letters of both words, so first letters hit often (past the hops) and words nearly form.
    alphabet = b'NNNaaIInfity y{}",:0123\n'
    cases = [b"", b"N", b"NaN", b"Na", b"aN", b"Infinit", b"Infinity", b"-Infinity", b"xNaN"]
    cases += [b"N" * 40 + b"aN", b"I" * 40 + b"nfinity", b"NI" * 30, b"N" * 40, b"I" * 40]
    for _ in range(20000):
        n = rng.randrange(0, 120)
        cases.append(bytes(rng.choice(alphabet) for _ in range(n)))
    for _ in range(500):  # a word planted at a random place among many first letters
        word = rng.choice([b"NaN", b"Infinity"])
        body = bytearray(rng.choice(b"NIa ") for _ in range(rng.randrange(0, 80)))
        at = rng.randrange(0, len(body) + 1)
        cases.append(bytes(body[:at] + word + body[at:]))
    assert any(c.count(b"N") > 20 and b"NaN" in c for c in cases)
    for data in cases:
        assert may_hold_nan(data) == (b"NaN" in data or b"Infinity" in data), data


@pytest.mark.parametrize("size", [1, 7, 97, 1000, 1 << 15])
@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
@pytest.mark.parametrize("final_newline", [True, False])
def test_blocks_are_the_files_own_lines(size: int, ending: bytes, final_newline: bool) -> None:
    lines = [x.encode() for x in generated(2, 120)]
    lines[5:5] = [b"", b"  ", b'{"kind":"tool_start","args":{"x":NaN}}', b"\x0c", b"Infinity"]
    data = ending.join(lines) + (ending if final_newline else b"")
    blocks = list(line_blocks(iter([]), io.BytesIO(data), size))
    assert [x for block, _ in blocks for x in block] == list(io.BytesIO(data))
    for block, guard in blocks:
        assert guard == may_hold_nan(b"".join(block))
    assert any(guard for _, guard in blocks)
    assert size > len(data) or not all(guard for _, guard in blocks)


def test_lines_not_from_a_file_are_each_looked_at() -> None:
    lines = [x.encode() for x in generated(1, 1200)]
    blocks = list(line_blocks(iter(lines)))
    assert len(blocks) > 1
    assert [x for block, _ in blocks for x in block] == lines
    assert all(guard for _, guard in blocks)


def test_each_malformed_line_inside_a_block_fails_or_scores_as_alone() -> None:
    prefix = generated(0, 3)
    suffix = generated(2, 2)
    mismatches = []
    for line in corpus():
        data = joined([*prefix, line, *suffix])
        want = model_outcome(data)
        for size in (len(data), 1):  # one block holding the line, and a block per line
            got = dict_block_outcome(data, size)
            if got != want:
                mismatches.append((line[:200], size, want, got))
    assert mismatches == []


# A NaN or an infinity where pydantic's parser would take it: a free-form field.
HIDDEN = [
    '{"kind":"tool_start","run_id":"r0","call_id":"n1","tool":"t","args":{"x":NaN}}',
    '{"kind":"tool_end","run_id":"r0","call_id":"n1","tool":"t","result":[1,Infinity]}',
    '{"kind":"tool_end","run_id":"r0","call_id":"n1","tool":"t","result":{"v":-Infinity}}',
    '{"kind":"model_end","run_id":"r0","tool_calls":[{"id":"n2","name":"t","args":{"a":NaN}}]}',
]


@pytest.mark.parametrize("hidden", HIDDEN, ids=range(len(HIDDEN)))
def test_a_nan_hidden_in_a_block_is_refused_by_name_as_alone(hidden: str) -> None:
    lines = generated(0, 60)
    at = len(lines) // 2
    lines.insert(at, hidden)
    data = joined(lines)
    want = model_outcome(data)
    assert want[0] == "error" and want[1][1] == at + 1
    for size in (1 << 15, 300, 1):
        assert dict_block_outcome(data, size) == want, size


def test_text_that_spells_nan_in_a_string_scores_the_same() -> None:
    lines = generated(1, 60)
    lines.insert(10, json.dumps({"kind": "replan", "run_id": "r0", "reason": "NaN Infinity"}))
    lines.insert(20, json.dumps({"kind": "run_start", "run_id": "r9", "agent_id": "NaN"}))
    data = joined(lines)
    want = model_outcome(data)
    assert want[0] == "scored"
    for size in (1 << 15, 100, 1):
        assert dict_block_outcome(data, size) == want, size


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("stop_after", [None, 0, 30])
def test_files_score_as_the_model_path(tmp_path: Path, seed: int, stop_after: int | None) -> None:
    lines = generated(seed, 1500)  # several blocks
    lines.insert(700, json.dumps({"kind": "replan", "run_id": "r0", "reason": "NaN"}))
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > 4 * (1 << 15)
    want = model_summary(lines)
    rows: list[Any] = []

    def on_step(step: Any) -> bool:
        rows.append(step)
        return stop_after is not None and len(rows) <= stop_after

    got = fold_trace(path, Monitor(), on_step if stop_after is not None else None, structs=False)
    assert summary(got) == want
    assert dict_block_outcome(path.read_bytes(), 1 << 15) == model_outcome(path.read_bytes())


def test_a_file_with_a_nan_line_fails_naming_it(tmp_path: Path) -> None:
    lines = generated(3, 1500)
    lines.insert(1000, HIDDEN[0])
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    want = outcome(lambda: model_summary(lines))
    assert want[0] == "error" and want[1][1] == 1001
    assert outcome(lambda: summary(fold_trace(path, Monitor(), structs=False))) == want
