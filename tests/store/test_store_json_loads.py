"""``store._json.loads`` gives exactly what ``json.loads`` gives, or fails as it fails.

The stored JSON columns (verdicts, reports, configs) are read with msgspec when it is installed
and with ``json.loads`` otherwise; a run's report must not depend on which. Compared here over
the texts where the parsers differ (numbers past 64 bits or past the float range, ``NaN``, lone
surrogates, byte-order marks, other encodings, control characters, deep nesting) and over
random texts: valid documents written several ways, and damaged ones.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from hbeval.store import _json

msgspec = pytest.importorskip("msgspec")


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (``1 == 1.0`` is not enough; NaN and
    the sign of zero count)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def outcome(fn: Any, text: Any) -> tuple[str, Any]:
    try:
        return "value", fn(text)
    except Exception as exc:  # the class is what is compared
        return "error", type(exc)


def check(text: Any) -> None:
    want = outcome(json.loads, text)
    got = outcome(_json.loads, text)
    assert want[0] == got[0], (text, want, got)
    if want[0] == "value":
        assert same(want[1], got[1]), (text, want, got)
    else:
        assert issubclass(got[1], want[1]) or issubclass(want[1], got[1]), (text, want, got)


def test_msgspec_reads_the_columns_when_installed() -> None:
    _json.loads("{}")
    assert _json._msgspec_decode is not None  # else the comparisons below test json.loads alone


BORDERS = [
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890123456789",
    '{"big": -98765432109876543210987654321, "n": [1e16, 1e-5, 0.1, -0.0, -0]}',
    "1e400",
    "-1e400",
    "1.7976931348623157e308",
    "1.7976931348623159e308",
    "2.2250738585072011e-308",
    "5e-324",
    "1e-400",
    "0.30000000000000004",
    "9007199254740993",
    "9007199254740993.0",
    "NaN",
    "-Infinity",
    '{"x": NaN}',
    '"\\ud800"',
    '"\\udc00\\ud800"',
    '"\\ud83d\\ude00"',
    '"\\u0000"',
    '"a\x00b"',
    '"a\x1fb"',
    '"a\x7fb"',
    '"tab\tin"',
    "\ufeff{}",
    '{"a": 1, "a": 2}',
    '{"a": {"b": [1, {"c": null}]}, "a": true}',
    " \t\r\n{} \n",
    "{}\x00",
    "[1,]",
    '{"a":1,}',
    "01",
    "1.",
    ".5",
    "+1",
    "-",
    "tru",
    "",
    " ",
    "[" * 3000 + "]" * 3000,
    '{"a":' * 2000 + "1" + "}" * 2000,
    "[" * 100 + "]" * 100,
    '"\u00e9\u4e2d\U0001f600"',
]


@pytest.mark.parametrize("text", BORDERS, ids=range(len(BORDERS)))
def test_border_texts(text: str) -> None:
    check(text)
    check(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-32"])
def test_byte_encodings_json_loads_detects(encoding: str) -> None:
    check('{"k": [1, 2.5, "\u00e9"]}'.encode(encoding))


@pytest.mark.parametrize("value", [None, 1, 2.5, object(), ["[]"]])
def test_values_that_are_not_text(value: Any) -> None:
    check(value)


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([rng.randrange(-1000, 1000), rng.getrandbits(rng.randrange(1, 130))])
    if kind == 2:
        return -rng.getrandbits(rng.randrange(1, 130))
    if kind == 3:
        return rng.choice(
            [
                rng.random(),
                rng.uniform(-1e300, 1e300),
                rng.random() * 10 ** rng.randrange(-320, 300),
            ]
        )
    if kind in (4, 5):
        alphabet = 'ab\u00e9\u4e2d\U0001f600"\\/\b\f\n\r\t\x00\x1f '
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
    if kind in (6, 7):
        return {str(random_value(rng, 5)): random_value(rng, depth + 1) for _ in range(3)}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_random_documents_written_several_ways() -> None:
    rng = random.Random(20261203)
    for _ in range(3000):
        value = random_value(rng)
        for text in (
            json.dumps(value),
            json.dumps(value, ensure_ascii=False),
            json.dumps(value, indent=rng.choice([None, 1, "\t"]), separators=(",", ":")),
        ):
            check(text)
            check(text.encode("utf-8", "surrogatepass"))


def test_random_damage() -> None:
    """Documents with bytes dropped, doubled or replaced: both accept or both refuse."""
    rng = random.Random(7)
    pieces = list('{}[]:,"\\0123456789.eE+-truefalsnNaIiy \t\n\x00\x7f\u00e9\ud800')
    for _ in range(6000):
        text = json.dumps(random_value(rng))
        chars = list(text)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(chars) + 1)
            action = rng.randrange(3)
            if action == 0 and at < len(chars):
                del chars[at]
            elif action == 1:
                chars.insert(at, rng.choice(pieces))
            elif at < len(chars):
                chars[at] = rng.choice(pieces)
        check("".join(chars))


def test_without_msgspec_it_is_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_json, "_msgspec_tried", True)
    monkeypatch.setattr(_json, "_msgspec_decode", None)
    for text in ("18446744073709551616", '{"a": NaN}', "[1.5, true]"):
        check(text)
