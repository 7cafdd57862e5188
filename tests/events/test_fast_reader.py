"""The fast reader accepts and refuses exactly what the validated reader does, naming the same field.

``events._fast.fast_lines`` yields dicts validated against TypedDict twins of the event models;
``read_events`` yields models. Over a corpus of valid events of every kind and thousands of
malformed variants of them (each field missing, null, of every wrong JSON type, negative, out of
its literal set; unknown keys and kinds; NaN, infinities, huge numbers, lone surrogates, invalid
UTF-8, broken JSON, deep nesting), both readers must agree line by line: the same event (the
model built from the fast dict equals the model read directly) or the same error (message, line
and field). Scores of whole traces read both ways must be identical.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from hbeval_core.events import EventBase, EventFormatError, event_adapter, read_events
from hbeval_core.events._fast import fast_lines
from hbeval_core.events._structs import fast_structs, struct_decoder
from hbeval_core.live._trace import fold_trace
from hbeval_core.live.derive import Deriver
from hbeval_core.live.monitor import Monitor

BASE = {"run_id": "r1"}
FULL_BASE = {
    "run_id": "r1",
    "event_id": "e1",
    "parent_id": "p1",
    "step": 3,
    "ts": 1700000000.25,
    "seq": 7,
    "attrs": {"node": "agent", "n": [1, 2.5, None, True]},
}
VALID: list[dict[str, Any]] = [
    {
        "kind": "run_start",
        **FULL_BASE,
        "agent_id": "a",
        "task_id": "t",
        "scenario": 0,
        "trial": 1,
        "framework": "langgraph",
        "input": {"q": "where is order 42?"},
    },
    {"kind": "run_end", **BASE, "status": "error", "output": [1, "x"], "error": "boom"},
    {"kind": "span_start", **BASE, "span_id": "s1", "scope": "node", "name": "agent"},
    {
        "kind": "span_end",
        **BASE,
        "span_id": "s1",
        "scope": "graph",
        "status": "error",
        "error": "x",
    },
    {
        "kind": "model_start",
        **FULL_BASE,
        "call_id": "m1",
        "model": "gpt",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "content": "ok", "tool_call_id": "c0"},
        ],
    },
    {
        "kind": "model_end",
        **BASE,
        "call_id": "m1",
        "text": "Looking it up.",
        "reasoning": "r",
        "tool_calls": [
            {"id": "c1", "name": "lookup", "args": {"order_id": 42}},
            {"id": "c2", "name": "refund", "args": {}},
        ],
        "usage": {"input_tokens": 120, "output_tokens": 14},
        "latency_ms": 12.5,
        "error": None,
    },
    {"kind": "tool_start", **BASE, "call_id": "c1", "tool": "lookup", "args": {"order_id": 42}},
    {
        "kind": "fault_injected",
        **BASE,
        "call_id": "c1",
        "tool": "lookup",
        "mode": "error_5xx",
        "effect": "error",
        "payload": "HTTP 503",
        "intended": {"p": 1.0},
        "injected": "applied",
        "observed": "exception",
        "plan_id": "p",
        "fault_id": "f",
        "attempt": 0,
        "forbidden_tool": None,
    },
    {
        "kind": "tool_error",
        **BASE,
        "call_id": "c1",
        "tool": "lookup",
        "error": "HTTP 503",
        "error_type": "HTTPError",
        "latency_ms": 1,
    },
    {
        "kind": "tool_end",
        **BASE,
        "call_id": "c2",
        "tool": "refund",
        "result": {"ok": True},
        "status": "ok",
        "latency_ms": 2.0,
    },
    {"kind": "replan", **BASE, "reason": "the lookup failed"},
    {"kind": "claim", **BASE, "name": "deliberate_handling", "value": {"x": 1}, "text": "t"},
    {
        "kind": "halt",
        **BASE,
        "metric": "frr",
        "value": 0.25,
        "threshold": 0.5,
        "reason": "r",
        "trigger": "policy",
        "enforced": True,
    },
    {
        "kind": "directive",
        **BASE,
        "action": "retry",
        "reason": "r",
        "metric": "frr",
        "value": 0.1,
        "tool": "lookup",
    },
    {
        "kind": "step",
        **BASE,
        "action": "lookup",
        "success": False,
        "had_fault": True,
        "recovered_intentionally": None,
        "traceable": True,
        "replanned": False,
        "handled_deliberately": True,
        "metadata": {"k": "v"},
    },
    {"kind": "tool_end", "run_id": "r1", "call_id": "c3", "tool": "t"},  # defaults only
]
WRONG_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2.5,
    -0.5,
    1e300,
    "",
    "x",
    "3",
    "true",
    "ok",
    [],
    [1],
    {},
    {"a": 1},
    2**70,
    3.0,
]


def mutations(event: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in event:
        if key != "kind":
            out.append({k: v for k, v in event.items() if k != key})  # missing
        for value in WRONG_VALUES:
            out.append({**event, key: value})
    for key, value in event.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for inner in value[0]:
                out.append({**event, key: [{k: v for k, v in value[0].items() if k != inner}]})
                for wrong in WRONG_VALUES:
                    out.append({**event, key: [{**value[0], inner: wrong}, *value[1:]]})
            out.append({**event, key: [{**value[0], "extra": 1}]})
        if isinstance(value, dict) and key == "usage":
            for inner in ("input_tokens", "output_tokens"):
                for wrong in WRONG_VALUES:
                    out.append({**event, key: {**value, inner: wrong}})
    out.append({**event, "unknown_field": 1})
    out.append({**event, "kind": "tool_ended"})
    return out


RAW_LINES: list[bytes] = [
    b"",
    b"   ",
    b'{"format":"hb-events/1"}',
    b'{"format":"hb-events/9"}',
    b"[1, 2]",
    b'"text"',
    b"{not json",
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t",}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": NaN}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "latency_ms": NaN}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": -Infinity}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": 1e400}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "latency_ms": 1e400}',
    b'{"kind": "tool_end", "run_id": "r\\ud800", "call_id": "c", "tool": "t"}',
    b'{"kind": "tool_end", "run_id": "r\\ud83d\\ude00", "call_id": "c", "tool": "t"}',
    b'{"kind": "tool_end", "run_id": "r\xff", "call_id": "c", "tool": "t"}',
    b'{"kind": "tool_end", "run_id": "a", "run_id": "b", "call_id": "c", "tool": "t"}',
    b'{"kind": "tool_start", "run_id": "r", "call_id": "c", "tool": "t", "args": {"n": 123456789012345678901234567890}}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": '
    + b"[" * 5000
    + b"]" * 5000
    + b"}",
    b"[" * 100_000 + b"]" * 100_000,
    b'{"run_id": "r", "call_id": "c", "tool": "t"}',
    b'{"kind": null, "run_id": "r"}',
    b'{"kind": 3, "run_id": "r"}',
    b'\xef\xbb\xbf{"kind": "replan", "run_id": "r"}',
    b'{"kind": "replan", "run_id": "r"}\r',
    # Where a stricter or differently built parser (msgspec, for fast_structs) could differ.
    b'{"kind": "tool_start", "run_id": "r", "call_id": "c", "tool": "t", "args": {"a": 1, "a": 2}}',
    b'{"kind": "tool_end", "kind": "tool_error", "run_id": "r", "call_id": "c", "tool": "t", "error": "x"}',
    b'{"kind": "tool_error", "kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "error": "x"}',
    b'{"run_id": "r", "call_id": "c", "tool": "t", "kind": "tool_end"}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "latency_ms": -0.0}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "latency_ms": 1E2, "step": 1e2}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "step": 2.0}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": 1.7976931348623157e308}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": 1e-400}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": {"x": -1e400}}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": "NaN"}',
    b'{"kind": "model_end", "run_id": "r", "call_id": "m", "tool_calls": [{"id": "c", "name": "t", "args": {"x": "\\ud83d\\ude00"}}]}',
    b'{"kind": "model_end", "run_id": "r", "call_id": "m", "usage": {"input_tokens": 1, "input_tokens": -1}}',
    b'{"kind": "model_end", "run_id": "r", "call_id": "m", "usage": {"input_tokens": -1, "input_tokens": 1}}',
    b'{"kind": "model_end", "run_id": "r", "call_id": "m", "usage": null, "text": null}',
    b'{"kind": "model_start", "run_id": "r", "call_id": "m", "messages": [{"role": "user"}]}',
    b'{"kind": "halt", "run_id": "r", "enforced": 1}',
    b'{"kind": "halt", "run_id": "r", "value": "0.5"}',
    b'{"kind": "run_start", "run_id": "r", "scenario": -3, "trial": -18446744073709551617}',
    b'{"kind": "replan", "run_id": "r", "attrs": {"\\u0000": "\\u0000"}}',
    b' {"kind": "replan", "run_id": "r"}  ',
    b'{"kind": "replan", "run_id": "r"} {"kind": "replan", "run_id": "r"}',
    b'{"kind": "replan", "run_id": "r", "reason": "caf\xc3\xa9 \xe2\x82\xac"}',
    # Inside free-form fields, what a reader that skips them unparsed (msgspec.Raw) would
    # take and the model refuses: bytes that are no UTF-8, an integer past int's digit limit.
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": "\xff"}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": {"a\xff": 1}}',
    b'{"kind": "replan", "run_id": "r", "attrs": {"x": ["\xc0\x80"]}}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": '
    + b"9" * 4301
    + b"}",
    b'{"kind": "replan", "run_id": "r", "attrs": {"n": -' + b"9" * 5000 + b"}}",
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": "\xed\xa0\x80"}',
    b'{"kind": "tool_end", "run_id": "r", "call_id": "c", "tool": "t", "result": 1e99999}',
]


def corpus() -> list[bytes]:
    lines = [json.dumps(e).encode() for e in VALID]
    for event in VALID:
        lines += [json.dumps(m).encode() for m in mutations(event)]
    return lines + RAW_LINES


def outcome(reader: Any, line: bytes) -> tuple[str, Any]:
    try:
        items = list(reader([line]))
    except EventFormatError as exc:
        return "error", (str(exc), exc.line, exc.field)
    except RecursionError:
        return "recursion", None
    if not items:
        return "skipped", None
    (item,) = items
    if isinstance(item, dict):
        item = event_adapter().validate_python(item)
    elif not isinstance(item, EventBase):  # a msgspec struct (fast_structs)
        import msgspec

        item = event_adapter().validate_python(msgspec.to_builtins(item))
    return "event", item


def test_the_corpus_covers_both_outcomes() -> None:
    kinds = {outcome(read_events, line)[0] for line in corpus()}
    assert {"event", "error", "skipped"} <= kinds


def _readers() -> list[Any]:
    readers: list[Any] = [fast_lines]
    if struct_decoder() is not None:
        readers.append(fast_structs)
    return readers


@pytest.mark.parametrize("reader", _readers(), ids=lambda r: r.__name__)
def test_each_line_is_read_the_same_way(reader: Any) -> None:
    mismatches = []
    for line in corpus():
        want = outcome(lambda src: read_events(iter(src)), line)
        got = outcome(reader, line)
        if want != got:
            mismatches.append((line[:200], want, got))
    assert mismatches == []


def test_fast_dicts_derive_the_same_steps() -> None:
    rng = random.Random(5)
    lines = [json.dumps(e).encode() for e in VALID if e["kind"] != "step"]
    for _ in range(300):
        lines.append(json.dumps(rng.choice(VALID)).encode())
    model_steps = []
    deriver = Deriver()
    for ev in read_events(iter(lines)):
        step = deriver.feed(ev)
        if step is not None:
            model_steps.append(step)
    raw_steps = []
    deriver = Deriver()
    for ev in fast_lines(lines):
        step = deriver.feed_raw(ev) if isinstance(ev, dict) else deriver.feed(ev)
        if step is not None:
            raw_steps.append(step)
    assert len(model_steps) > 50
    assert raw_steps == model_steps
    if struct_decoder() is not None:
        deriver = Deriver()
        struct_steps = [s for s in map(deriver.feed, fast_structs(lines)) if s is not None]
        assert struct_steps == model_steps


def write_trace(path: Path, n_steps: int, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w") as fh:
        fh.write('{"format":"hb-events/1"}\n')
        for i in range(n_steps):
            run = f"r{i % 3}"
            args = {"order_id": rng.randrange(20)}
            text = "Checking." if rng.random() < 0.7 else ""
            call = f"c{i}" if rng.random() < 0.9 else f"other{i}"
            events: list[dict[str, Any]] = [
                {"kind": "model_start", "run_id": run, "call_id": f"m{i}"},
                {
                    "kind": "model_end",
                    "run_id": run,
                    "call_id": f"m{i}",
                    "text": text,
                    "tool_calls": [{"id": f"c{i}", "name": "lookup", "args": args}],
                },
                {
                    "kind": "tool_start",
                    "run_id": run,
                    "call_id": call,
                    "tool": "lookup",
                    "args": args,
                },
            ]
            if rng.random() < 0.3:
                events.append(
                    {
                        "kind": "fault_injected",
                        "run_id": run,
                        "call_id": call,
                        "mode": rng.choice(["error_5xx", "empty_response"]),
                        "effect": rng.choice(["error", "result_altered"]),
                    }
                )
            if rng.random() < 0.2:
                events.append(
                    {
                        "kind": "tool_error",
                        "run_id": run,
                        "call_id": call,
                        "tool": "lookup",
                        "error": "503",
                    }
                )
            else:
                events.append(
                    {
                        "kind": "tool_end",
                        "run_id": run,
                        "call_id": call,
                        "tool": "lookup",
                        "result": "ok",
                        "status": "error" if rng.random() < 0.1 else "ok",
                    }
                )
            if rng.random() < 0.05:
                events.append({"kind": "replan", "run_id": run})
            if rng.random() < 0.05:
                events.append(
                    {
                        "kind": "step",
                        "run_id": run,
                        "action": "manual",
                        "success": rng.random() < 0.5,
                    }
                )
            for ev in events:
                fh.write(json.dumps(ev) + "\n")


def _struct_modes() -> list[bool]:
    return [False, True] if struct_decoder() is not None else [False]


@pytest.mark.parametrize("structs", _struct_modes(), ids=lambda s: "structs" if s else "dicts")
@pytest.mark.parametrize("seed", range(3))
def test_scores_are_identical(tmp_path: Path, seed: int, structs: bool) -> None:
    path = tmp_path / "trace.jsonl"
    write_trace(path, 2_000, seed)
    ref = Monitor(halt_policy={"metric": "frr", "below": 0.3, "for_steps": 4})
    ref_rows = []
    for ev in read_events(path):
        step = ref.observe(ev)
        if step is not None:
            ref_rows.append((step, ref.metrics))
    fast = Monitor(halt_policy={"metric": "frr", "below": 0.3, "for_steps": 4})
    rows: list[Any] = []
    fold_trace(path, fast, lambda step: rows.append((step, fast.metrics)), structs=structs)
    assert rows == ref_rows
    batched = fold_trace(path, Monitor(), structs=structs)
    plain = Monitor()
    for ev in read_events(path):
        plain.observe(ev)
    a, b, c = fast.summary(), ref.summary(), batched.summary()
    for doc in (a, b, c, plain_doc := plain.summary()):
        for d in doc["directives"]:
            d["occurred_at"] = 0
        if doc["halt_record"]:
            doc["halt_record"]["occurred_at"] = 0
    assert a == b
    assert c == plain_doc
    assert b["step_count"] > 2_000


@pytest.mark.parametrize("structs", _struct_modes(), ids=lambda s: "structs" if s else "dicts")
def test_scores_are_identical_without_model_events(tmp_path: Path, structs: bool) -> None:
    # Every step unobserved (hb-derive/3): TI undefined on each, in the fast and model paths.
    path = tmp_path / "trace.jsonl"
    write_trace(path, 500, 7)
    kept = [
        line
        for line in path.read_text().splitlines()
        if '"kind": "model_' not in line and '"kind": "step"' not in line
    ]
    path.write_text("\n".join(kept) + "\n")
    ref = Monitor()
    ref_rows = []
    for ev in read_events(path):
        step = ref.observe(ev)
        if step is not None:
            ref_rows.append((step, ref.metrics, ref.undefined))
    fast = Monitor()
    rows: list[Any] = []
    fold_trace(
        path, fast, lambda step: rows.append((step, fast.metrics, fast.undefined)), structs=structs
    )
    assert rows == ref_rows
    docs = [fold_trace(path, Monitor(), structs=structs).summary(), ref.summary(), fast.summary()]
    for doc in docs:
        for d in doc["directives"]:
            d["occurred_at"] = 0  # when the directive was folded: not a score
    batched = docs[0]
    assert batched == docs[1] == docs[2]
    assert batched["metrics"]["ti"] is None and batched["undefined"]["ti"] == "no_model_events"
    assert batched["step_count"] > 400
