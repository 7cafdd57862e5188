"""Reading an events file at the parser's floor, for scoring: dicts instead of models.

``fast_lines`` reads JSONL like ``read_events`` and yields each event as a plain ``dict`` of
the fields the line gives, validated by pydantic-core against a TypedDict twin of the event's
model: the same field types, constraints (``ge=0``), ``extra="forbid"`` and ``allow_inf_nan``,
built from the models' own field definitions, so a line is accepted, coerced and refused by the
very validators the model uses, without the cost of building a model instance. A line the twin
refuses goes through exactly the validated path (``io._validated``'s loop), so it fails with the
same message, line and field. ``step`` events (whose fields the deriver copies verbatim) are
validated as models, as are kinds any future model gives a field the twin cannot mirror.

``orjson`` is not needed here: pydantic-core parses and validates in one pass, about as fast as
``json.loads`` alone. For scoring a file, ``line_blocks`` reads it in blocks of whole lines and
looks for ``NaN`` and ``Infinity`` once per block (``may_hold_nan``); a line of a block that may
hold one is then looked at alone, as here. With msgspec installed, scoring reads structs
instead (``_structs``).
"""

from __future__ import annotations

import io
import types
from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import IO, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from typing_extensions import NotRequired, Required, TypedDict  # pydantic's TypedDict below 3.12

from ._base import EventBase
from .io import _slow_line

__all__ = [
    "FAST_KINDS",
    "fast_lines",
    "line_blocks",
    "may_hold_nan",
    "slow_event",
    "twin_adapter",
    "whole_line_reads",
]

FAST_KINDS = frozenset(
    {
        "run_start",
        "run_end",
        "span_start",
        "span_end",
        "model_start",
        "model_end",
        "tool_start",
        "tool_end",
        "tool_error",
        "fault_injected",
        "replan",
        "claim",
        "halt",
        "directive",
    }
)
"""Kinds read as dicts (``Deriver.feed_raw``); ``step`` events always come as models."""


def _twin(model: type[BaseModel], done: dict[type[BaseModel], Any]) -> Any:
    """A TypedDict with ``model``'s fields, constraints and config; nested models twinned."""
    if model in done:
        return done[model]
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if info.alias or info.validation_alias or info.discriminator:
            raise TypeError(f"{model.__name__}.{name}: aliases are not mirrored")
        ann = _twin_type(info.annotation, done)
        if info.metadata:
            params = (ann, *info.metadata)
            ann = Annotated[params]
        # kind is the union's tag: a line without it is refused by the models' union too.
        required = info.is_required() or name == "kind"
        fields[name] = Required[ann] if required else NotRequired[ann]
    config = ConfigDict(
        extra=model.model_config.get("extra"),
        allow_inf_nan=model.model_config.get("allow_inf_nan", True),
    )
    twin = TypedDict(f"{model.__name__}Dict", fields)  # type: ignore[misc]
    twin.__pydantic_config__ = config  # type: ignore[attr-defined]
    done[model] = twin
    return twin


def _twin_type(ann: Any, done: dict[type[BaseModel], Any]) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return _twin(ann, done)
    origin, args = get_origin(ann), get_args(ann)
    if origin is None or origin is Literal:
        return ann
    twinned = tuple(_twin_type(a, done) for a in args)
    if twinned == args:
        return ann
    if origin is Union or origin is types.UnionType:
        return Union[twinned]  # noqa: UP007 - built from a tuple
    if origin is list:
        return list.__class_getitem__(twinned[0])
    raise TypeError(f"{ann!r}: a model nested in this type is not mirrored")


@lru_cache(maxsize=1)
def twin_adapter() -> TypeAdapter[Any]:
    """The pydantic adapter of the fast kinds' TypedDict twins, keyed on ``kind``."""
    from . import Event

    union = get_args(Event)[0]
    done: dict[type[BaseModel], Any] = {}
    twins = []
    for model in get_args(union):
        kind = model.model_fields["kind"].default
        if isinstance(model, type) and issubclass(model, EventBase) and kind in FAST_KINDS:
            twins.append(_twin(model, done))
    return TypeAdapter(Annotated[Union[tuple(twins)], Field(discriminator="kind")])  # noqa: UP007


def fast_lines(
    source: str | Path | IO[str] | IO[bytes] | Iterable[str | bytes],
) -> Iterator[dict[str, Any] | EventBase]:
    """Events of a JSONL source as validated dicts (fast kinds) or models (the rest).

    Accepts and refuses exactly what ``read_events`` does, with the same errors (see the
    module docstring).
    """
    validate_twin = twin_adapter().validator.validate_json
    fh = open(source, "rb") if isinstance(source, (str, Path)) else None
    try:
        lines: Iterable[Any] = fh if fh is not None else source  # type: ignore[assignment]
        lineno = 0
        for raw in lines:
            lineno += 1
            if raw.__class__ is not bytes:
                raw = raw.encode("utf-8")
            # As io._validated: a NaN or an infinity may hide in a free-form field, where the
            # JSON parser would take it; the stdlib path refuses it by name.
            if raw.find(b"NaN") < 0 and raw.find(b"Infinity") < 0:
                try:
                    yield validate_twin(raw)
                    continue
                except ValueError:
                    pass
            event = slow_event(raw, lineno)
            if event is not None:
                yield event
    finally:
        if fh is not None:
            fh.close()


BLOCK_BYTES = 1 << 15
"""Bytes read per block by ``line_blocks`` (then up to the end of the line)."""
_BLOCK_LINES = 512
"""Lines per block when the source is an iterable of lines rather than a file."""
_HOPS = 16
"""Hits of a word's first letter that ``may_hold_nan`` looks at before it searches for the word."""


def may_hold_nan(data: bytes) -> bool:
    """Exactly ``b"NaN" in data or b"Infinity" in data``, faster on text without them.

    ``bytes.find`` of a one-byte needle is ``memchr`` (tens of bytes per instruction), of a
    longer one a byte-by-byte search (about a nanosecond a byte): so the first letters are
    found with ``memchr`` and the words checked there; past ``_HOPS`` hits (text with many a
    capital N or I) the word itself is searched for from there.
    """
    find, starts = data.find, data.startswith
    for letter, word in ((b"N", b"NaN"), (b"I", b"Infinity")):
        at = find(letter)
        hops = 0
        while at >= 0:
            if starts(word, at):
                return True
            hops += 1
            if hops > _HOPS:
                if find(word, at) >= 0:
                    return True
                break
            at = find(letter, at + 1)
    return False


def line_blocks(
    lines: Iterator[bytes], fh: IO[bytes] | None = None, size: int = BLOCK_BYTES
) -> Iterator[tuple[list[bytes], bool]]:
    """The lines of a source in blocks, each with whether it may hold NaN or an infinity.

    From a binary file ``fh`` (``lines`` unused) a block is about ``size`` bytes of whole lines,
    split as iterating the file splits, and the NaN guard of ``fast_lines`` (a line that may
    hold ``NaN`` or ``Infinity`` is read the validated way) is looked up once for the block:
    False means no line of it holds either, True that each line must be looked at. From
    ``lines``, blocks of lines each marked True.
    """
    if fh is None:
        while True:
            block = list(islice(lines, _BLOCK_LINES))
            if not block:
                return
            yield block, True
    for data in whole_line_reads(fh, size):
        yield io.BytesIO(data).readlines(), may_hold_nan(data)


def whole_line_reads(fh: IO[bytes], size: int) -> Iterator[bytes]:
    """``fh`` read about ``size`` bytes at a time, each read carried on to the end of its line."""
    read, readline = fh.read, fh.readline
    while True:
        data = read(size)
        if not data:
            return
        if data[-1] != 10:  # up to the end of the line
            data += readline()
        yield data


def slow_event(raw: bytes, lineno: int) -> EventBase | None:
    """A line the twins refused (or may hold NaN): exactly ``io._validated``'s path for it.

    The event as a model, None for a blank or header line, or ``EventFormatError``.
    """
    from . import event_adapter

    adapter = event_adapter()
    if raw.find(b"NaN") < 0 and raw.find(b"Infinity") < 0:
        try:
            return adapter.validator.validate_json(raw)  # type: ignore[no-any-return]
        except ValueError:
            pass
    if not raw.strip():
        return None
    return _slow_line(raw, lineno, adapter.validate_python)
