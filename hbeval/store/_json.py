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

:func:`loads` returns what ``json.loads(text)`` returns, or raises what it raises. When msgspec
is importable it reads the text first (a verdict in a third of the time, and the dicts it builds
share their keys: some 40% less memory for a run's verdicts held until its report is built).
Where msgspec reads a text it gives the same value (integers of any size included); what it
refuses and ``json.loads`` takes (``NaN``, ``Infinity``, a number beyond the float range, a lone
surrogate, a byte-order mark, text in UTF-16) goes to ``json.loads`` itself.
``tests/store/test_store_json_loads.py`` compares both over those cases and random texts.
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
_orjson_error: type[Exception] = ValueError
try:  # optional: the stdlib gives the same text, more slowly
    import orjson

    _orjson_dumps = orjson.dumps
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


_msgspec_decode: Callable[[Any], Any] | None = None
_msgspec_errors: tuple[type[Exception], ...] = ()
_msgspec_tried = False


def _load_msgspec() -> None:
    """Import msgspec's decoder on first use (its import costs some 25 ms of start-up)."""
    global _msgspec_decode, _msgspec_errors, _msgspec_tried
    _msgspec_tried = True
    try:
        import msgspec
    except ImportError:  # pragma: no cover - exercised only where msgspec is missing
        return
    # (UnicodeEncodeError: a ``str`` holding a lone surrogate, which msgspec reads as UTF-8.)
    _msgspec_errors = (msgspec.DecodeError, msgspec.ValidationError, UnicodeEncodeError)
    _msgspec_decode = msgspec.json.Decoder().decode


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``: the same value, or the same error (see the module's text)."""
    if not _msgspec_tried:
        _load_msgspec()
    if _msgspec_decode is not None:
        try:
            return _msgspec_decode(text)
        except _msgspec_errors:
            pass
        except RecursionError:  # deeper than the interpreter goes: json.loads fails alike
            pass
    return json.loads(text)
