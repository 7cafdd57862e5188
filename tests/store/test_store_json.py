"""Stored documents (configs, verdicts, reports) are written exactly as ``json.dumps`` writes them.

``store._json.dumps`` lets orjson write plain data and sends everything else to ``json.dumps``.
Each test compares its text, byte for byte, or its error type, with the stdlib encoder called
with the store's options, over values at the borders of what orjson writes the same way:
floats around 1e-4 and 1e16 (where Python switches to an exponent), every BMP character and
control character, big integers, NaN, lone surrogates, Enum members, subclasses, tuples,
non-string keys, cycles and deep nesting; and over a real verdict and report of a battery run.
"""

from __future__ import annotations

import enum
import json
import math
import random
import struct
from collections import OrderedDict
from typing import Any

import pytest

from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore, _json
from hbeval.store._validate import encode_json
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from hbeval_plain import think, tool

orjson = pytest.importorskip("orjson")


def reference(value: Any) -> str:
    """What the store wrote before: the stdlib encoder with the store's options."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    text.encode("utf-8")
    return text


def outcome(fn: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(value)
    except (ValueError, TypeError, RecursionError) as exc:
        return "error", type(exc)


def assert_same(value: Any) -> None:
    assert outcome(lambda v: _json.dumps(v, utf8=True), value) == outcome(reference, value)


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    LOW = 1


class Text(str):
    pass


def test_floats_at_the_borders_and_in_between_are_spelled_alike() -> None:
    rng = random.Random(7)
    borders = [1e-4, 1e16, 9.999999999999999e-05, 9999999999999998.0, 1e15, 5e-324, 0.0, -0.0]
    values = [s * b for b in borders for s in (1, -1)]
    values += [10 ** rng.uniform(-8, 20) * rng.choice((1, -1)) for _ in range(20000)]
    values += [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(5000)]
    values = [v for v in values if math.isfinite(v)]
    for v in values:
        assert _json.dumps({"x": v}) == reference({"x": v}), v
    assert _json.dumps(values) == reference(values)
    plain = [v for v in values if v == 0 or 1e-4 <= abs(v) < 1e16]
    assert plain and _json._plain(plain)  # these went through orjson


def test_every_bmp_character_and_escape_is_written_alike() -> None:
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(chars)
    doc = {"t": text, "each": chars[:600], 'k\n\t"\\': "\x00\x1f\x7f\u2028\u2029", "e": "😀"}
    assert _json._plain(doc)
    assert _json.dumps(doc) == reference(doc)


@pytest.mark.parametrize(
    "value",
    [
        {"n": float("nan")},
        {"n": [1.0, float("inf")]},
        {"n": -float("inf")},
        {"s": "lone \ud800 surrogate"},
        {"big": 2**64, "neg": -(2**63) - 1, "huge": 10**40},
        {"max": 2**64 - 1, "min": -(2**63)},
        {"e": Colour.RED},
        {"e": Level.LOW},
        {"s": Text("sub")},
        {Text("key"): 1},
        {"t": (1, 2.5, "x")},
        {1: "int key", None: "none key", False: "bool key", 2.5: "float key"},
        {"o": OrderedDict(a=1)},
        {"set": {1, 2}},
        {"b": b"bytes"},
        {"obj": object()},
        {"tiny": 1e-05, "exp": 1e16},
    ],
)
def test_values_orjson_writes_differently_or_refuses_go_to_the_stdlib(value: Any) -> None:
    assert_same(value)


def test_cycles_and_deep_nesting_behave_as_the_stdlib() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert_same(loop)
    deep: Any = 1
    for _ in range(300):  # deeper than orjson writes
        deep = [deep]
    assert_same({"d": deep})


def test_store_errors_name_the_field_as_before() -> None:
    with pytest.raises(ValueError, match="verdict"):
        encode_json("verdict", {"x": float("nan")})
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        encode_json("verdict", {"x": object()})


@tool
def lookup(item: int) -> dict[str, Any]:
    """A scripted tool."""
    return {"item": item, "price": 12.5, "note": "façade ✓"}


def agent_factory() -> Any:
    def agent(question: str) -> str:
        for i in range(3):
            think(f"looking up {i}", tool_calls=[("lookup", {"item": i})])
            try:
                lookup(item=i)
            except Exception:
                continue
        return "summary ok"

    return agent


def test_a_real_report_and_its_verdicts_are_stored_as_the_stdlib_writes_them() -> None:
    store = InMemoryStore()
    task = Task(id="t", question="summarise", required=("summary",))
    report = run_battery(
        None, agent_factory, [task], Battery.hbeval(n_scenarios=12, seed=3), trials=2,
        store=store, run_id="r", seed=3,
    )  # fmt: skip
    doc = report.to_dict()  # the report as written
    assert _json._plain(doc)
    assert encode_json("report", doc) == reference(doc)
    verdicts = [t.verdict for t in store.list_trials("r") if t.verdict is not None]
    assert len(verdicts) == 24
    for verdict in verdicts:
        assert encode_json("verdict", verdict) == reference(verdict)


def test_an_encoded_verdict_is_written_as_its_text_and_stored_as_the_stdlib_writes_it() -> None:
    """A run hands the store each verdict with the text its secret check wrote (``Encoded``):
    what the store keeps is that text, and it is the stdlib's text of the verdict the run
    reports."""
    verdict = {"passed": True, "score": 0.5, "note": "façade"}
    assert _json.dumps(_json.Encoded(verdict, reference(verdict))) == reference(verdict)
    store = InMemoryStore()
    task = Task(id="t", question="summarise", required=("summary",))
    report = run_battery(
        None, agent_factory, [task], Battery.hbeval(n_scenarios=6, seed=3), trials=2,
        store=store, run_id="r", seed=3,
    )  # fmt: skip
    kept = {key: text for key, (_, text) in store._runs["r"].trials.items()}
    assert len(kept) == 12
    for trial in report.to_dict()["trials"]:
        assert kept[trial["trial_key"]] == reference(trial["verdict"])
