"""JSON text of stored documents (configs, verdicts, reports), faster.

:func:`dumps` returns exactly the text ``json.dumps(value, separators=(",", ":"),
ensure_ascii=False, allow_nan=False)`` returns, byte for byte, and raises what it raises. When
orjson is importable and the value is plain JSON data that orjson writes the same way, orjson
writes it (several times faster on a report of a few hundred trials); anything else goes to
``json.dumps`` itself. "Plain" is checked by one walk before orjson sees the value: exact
``dict`` (with exact ``str`` keys), ``list``, ``str``, ``int``, ``bool`` and ``None``, and
finite floats from 1e-4 up to (not including) 1e16 in magnitude, or zero. Outside that range
Python writes an exponent (``1e-05``) where orjson writes digits (``0.00001``); an ``Enum``
member is its value to orjson and an error to ``json.dumps``; subclasses, tuples and other
types are written differently or refused differently. orjson's own refusals (a lone surrogate,
an integer beyond 64 bits, nesting deeper than it goes) also send the value to ``json.dumps``.
``tests/store/test_store_json.py`` compares both encoders over the cases at the borders.

:func:`loads` returns the value ``json.loads(text)`` returns, faster: orjson parses ``text``, and
its value is kept only when orjson writes it back as exactly ``text``; anything else (text orjson
refuses or would spell differently) goes to ``json.loads``. The round trip makes the two parsers
agree: an integer token beyond 64 bits, which orjson reads as a float, is written back as a
float; a float token reproduced byte for byte is the shortest spelling of orjson's value, which
``json.loads`` (correctly rounded) reads as that same value; duplicate keys, whitespace, escapes
spelled otherwise, ``NaN`` and lone surrogates never reproduce. Stored documents were written by
:func:`dumps` (compact, the spelling orjson gives plain data), so they nearly all take the fast
path. ``tests/store/test_store_json.py`` compares both parsers over malformed and border texts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["Encoded", "dumps", "loads"]

_LOW: Final = 1e-4
_HIGH: Final = 1e16
_SCALARS: Final = frozenset({str, int, bool, type(None)})

_orjson_dumps: Callable[[Any], bytes] | None = None
_orjson_loads: Callable[[str], Any] | None = None
_orjson_error: type[Exception] = ValueError
try:  # optional: the stdlib gives the same text, more slowly
    import orjson

    _orjson_dumps = orjson.dumps
    _orjson_loads = orjson.loads
    _orjson_error = orjson.JSONEncodeError
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    pass


def _plain(value: Any) -> bool:
    """True when ``value`` holds only what orjson and ``json.dumps`` write alike (see above)."""
    cls = value.__class__
    if cls is dict:
        for key in value:
            if key.__class__ is not str:
                return False
        items = value.values()
    elif cls is list:
        items = value
    elif cls is float:
        return bool(value == 0.0 or _LOW <= abs(value) < _HIGH)
    else:
        return cls in _SCALARS
    for item in items:
        cls = item.__class__
        if cls in _SCALARS:
            continue
        if cls is float:
            if item == 0.0 or _LOW <= abs(item) < _HIGH:  # NaN compares false: not plain
                continue
            return False
        if (cls is dict or cls is list) and _plain(item):
            continue
        return False
    return True


class Encoded(dict[str, Any]):
    """A JSON object already written: a copy of the dict, with the text ``dumps(value,
    utf8=True)`` gave for it, which :func:`dumps` returns instead of writing it again (the
    runner checks a verdict's text for secrets, then hands the store the same text). Made
    right before it is recorded, from a dict nothing changes in between."""

    __slots__ = ("text",)

    def __init__(self, value: Mapping[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text


def _stdlib_dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps(value: Any, *, utf8: bool = False) -> str:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)``.

    ``utf8``: also refuse text UTF-8 cannot hold (a lone surrogate) with the
    ``UnicodeEncodeError`` that ``text.encode("utf-8")`` raises.
    """
    if value.__class__ is Encoded:
        return value.text
    if _orjson_dumps is not None:
        try:
            plain = _plain(value)
        except RecursionError:
            plain = False
        if plain:
            try:
                return _orjson_dumps(value).decode()  # orjson writes only valid UTF-8
            except _orjson_error:  # a lone surrogate, an int beyond 64 bits, deep nesting
                pass
    text = _stdlib_dumps(value)
    if utf8:
        text.encode("utf-8")
    return text


def loads(text: Any) -> Any:
    """``json.loads(text)``: the same value (types included), or the same error."""
    if _orjson_loads is not None and _orjson_dumps is not None and text.__class__ is str:
        try:
            value = _orjson_loads(text)
            if _orjson_dumps(value).decode() == text:
                return value
        except (ValueError, TypeError):  # refused by orjson (its errors are ValueErrors)
            pass
    return json.loads(text)
