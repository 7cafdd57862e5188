"""Reading an events file with msgspec, when it is installed: one C pass parses and checks a line.

``struct_decoder()`` decodes a line into a ``msgspec.Struct`` twin of the event's model, built
from the model's own field definitions (types, ``ge`` bounds, defaults, ``extra="forbid"`` as
``forbid_unknown_fields``): the same attribute names as the model, so the deriver reads a struct
exactly as it reads the model (``Deriver.feed``). msgspec is stricter than pydantic's lax mode (no
``"3"`` for an int, no ``1.0`` for an int, no ``"true"`` for a bool), never looser: a line it
refuses goes through exactly the validated path (``_fast.slow_event``), so it is accepted,
coerced or refused there with the same message, line and field as ``read_events``; a line it
accepts is one the model accepts with the same values (``tests/events/test_fast_reader.py``
checks both over the malformed-input corpus). NaN and infinities are no JSON to msgspec, and
numbers beyond a float's range are refused, so no NaN can slip into a free-form field.

Structs are built with ``gc=False``: parsed JSON holds no reference cycles, so the collector
need not track a million of them. ``struct_decoder()`` is None without msgspec (the pydantic
twins of ``_fast`` are used then).

``struct_chunks`` reads a file in blocks of lines with one decode call per block (see there for
why the block decodes exactly as its lines one by one).
"""

from __future__ import annotations

import io
import types
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import IO, Annotated, Any, Literal, Union, cast, get_args, get_origin

from pydantic import BaseModel

from ._base import EventBase
from ._fast import FAST_KINDS, slow_event, whole_line_reads

__all__ = [
    "CHUNK_BYTES",
    "Refused",
    "fast_structs",
    "full_struct_types",
    "struct_chunks",
    "struct_decoder",
    "struct_types",
]

CHUNK_BYTES = 1 << 15
"""Bytes read per block by ``struct_chunks`` (then up to the end of the line); measured: larger
blocks fall out of the processor's caches and read slower."""
_CHUNK_LINES = 512
"""Lines per block when the source is an iterable of lines rather than a file."""
_MAX_SKIP = 6
"""After blocks that fail in a row, up to 2**6 - 1 blocks are read line by line before the next
try (a trace full of lines only the model reads does not pay for a failed block each time)."""


_READ_COLLECTIONS = frozenset({"args", "tool_calls"})
"""Defaulted collections the deriver reads (``Deriver.feed``): an absent one is made empty,
as the model makes it. Any other absent collection (``attrs`` on every event, a model call's
``messages``, ...) is left ``msgspec.UNSET`` instead of a new empty dict or list per event:
nothing reads it from a struct, and ``msgspec.to_builtins`` leaves it out, so the model built
from such a struct takes its own default."""


def _struct(
    model: type[BaseModel], done: dict[Any, Any], tag: str | None, full: bool = False
) -> Any:
    """A msgspec Struct with ``model``'s fields, bounds, defaults and config; nested ones too.

    ``full``: every defaulted collection is made as the model makes it (none left ``UNSET``),
    so the struct reads like the model wherever it is read (``full_struct_types``)."""
    import msgspec
    from annotated_types import Ge

    if model in done:
        return done[model]
    fields: list[tuple[Any, ...]] = []
    for name, info in model.model_fields.items():
        if name == "kind":
            continue  # the union's tag
        if info.alias or info.validation_alias or info.discriminator:
            raise TypeError(f"{model.__name__}.{name}: aliases are not mirrored")
        ann = _struct_type(info.annotation, done, full)
        bounds: dict[str, Any] = {}
        for meta in info.metadata:
            if not isinstance(meta, Ge):
                raise TypeError(f"{model.__name__}.{name}: {meta!r} is not mirrored")
            bounds["ge"] = meta.ge
        if bounds:
            ann = _bounded(ann, msgspec.Meta(**bounds))
        if info.is_required():
            fields.append((name, ann))
        elif info.default_factory is not None and name not in _READ_COLLECTIONS and not full:
            fields.append((name, ann, msgspec.UNSET))  # absent: see _READ_COLLECTIONS
        elif info.default_factory is not None:
            factory = cast(Callable[[], Any], info.default_factory)  # the models take no data
            fields.append((name, ann, msgspec.field(default_factory=factory)))
        else:
            fields.append((name, ann, info.default))
    if model.model_config.get("extra") != "forbid":
        raise TypeError(f"{model.__name__}: only extra='forbid' is mirrored")
    tagging: dict[str, Any] = {} if tag is None else {"tag_field": "kind", "tag": tag}
    struct = msgspec.defstruct(
        f"{model.__name__}Struct",
        fields,
        kw_only=True,
        forbid_unknown_fields=True,
        gc=False,
        **tagging,
    )
    if tag is not None:
        struct.kind = tag  # type: ignore[attr-defined]  # read as ev.kind, as on the model
    done[model] = struct
    return struct


def _bounded(ann: Any, meta: Any) -> Any:
    """``ann`` with ``meta`` on its one non-None member (``int | None`` -> ``Annotated[int, ...] | None``)."""
    origin, args = get_origin(ann), get_args(ann)
    if origin is Union or origin is types.UnionType:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"{ann!r}: a bound on a union is not mirrored")
        return Annotated[inner[0], meta] | None
    return Annotated[ann, meta]


def _struct_type(ann: Any, done: dict[Any, Any], full: bool = False) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return _struct(ann, done, None, full)
    origin, args = get_origin(ann), get_args(ann)
    if origin is None or origin is Literal:
        return ann
    mirrored = tuple(_struct_type(a, done, full) for a in args)
    if origin is Union or origin is types.UnionType:
        return Union[mirrored]  # noqa: UP007 - built from a tuple
    if origin is list:
        return list.__class_getitem__(mirrored[0])
    if origin is dict:
        return dict.__class_getitem__(mirrored)
    raise TypeError(f"{ann!r}: not mirrored")


@lru_cache(maxsize=1)
def struct_types() -> dict[str, Any] | None:
    """The fast kinds' struct twins by kind (None without msgspec)."""
    try:
        import msgspec  # noqa: F401
    except ImportError:
        return None
    from . import Event

    done: dict[Any, Any] = {}
    structs: dict[str, Any] = {}
    for model in get_args(get_args(Event)[0]):
        kind = model.model_fields["kind"].default
        if isinstance(model, type) and issubclass(model, EventBase) and kind in FAST_KINDS:
            structs[kind] = _struct(model, done, kind)
    return structs


@lru_cache(maxsize=1)
def full_struct_types() -> dict[str, Any] | None:
    """Struct twins by kind with every defaulted collection made (``_struct``'s ``full``): what
    ``msgspec.convert`` turns an event dict into when the struct stands in for the model
    (``hbeval.scoring._dict_trace``). None without msgspec."""
    try:
        import msgspec  # noqa: F401
    except ImportError:
        return None
    from . import Event

    done: dict[Any, Any] = {}
    structs: dict[str, Any] = {}
    for model in get_args(get_args(Event)[0]):
        kind = model.model_fields["kind"].default
        if isinstance(model, type) and issubclass(model, EventBase) and kind in FAST_KINDS:
            structs[kind] = _struct(model, done, kind, full=True)
    return structs


@lru_cache(maxsize=1)
def struct_decoder() -> Any:
    """The msgspec decoder of the fast kinds' struct twins (None without msgspec)."""
    structs = struct_types()
    if structs is None:
        return None
    import msgspec

    return msgspec.json.Decoder(Union[tuple(structs.values())])  # noqa: UP007


@lru_cache(maxsize=1)
def chunk_decoder() -> Any:
    """``decode_lines`` of one-element arrays of the fast kinds' twins (``struct_chunks``)."""
    structs = struct_types()
    if structs is None:
        return None
    import msgspec

    one = tuple.__class_getitem__(Union[tuple(structs.values())])  # noqa: UP007
    return msgspec.json.Decoder(one).decode_lines


class Refused:
    """A line the struct twins refused, to be read the validated way (``slow_event``) in turn."""

    __slots__ = ("line", "raw")

    def __init__(self, raw: bytes, line: int) -> None:
        self.raw = raw
        self.line = line


def struct_chunks(
    lines: Iterator[bytes],
    lineno: int,
    fh: IO[bytes] | None = None,
    size: int = CHUNK_BYTES,
) -> Iterator[list[tuple[Any]]]:
    """The events after line ``lineno`` in blocks, each event as a one-element tuple.

    Each event is a struct, or ``Refused`` for a line the twins refuse (``slow_event`` then
    reads it, in turn, so an error names the same line as ``read_events``). From a binary file
    ``fh`` (``lines`` unused) a block is about ``size`` bytes of whole lines decoded in one call;
    from ``lines``, each line is decoded alone (``struct_decoder``).

    A block is decoded with every line ``L`` wrapped as ``[L]``: the block's newlines become
    ``]\n[``, and msgspec's ``decode_lines`` reads the whitespace-separated values as
    one-element arrays of a struct. That gives exactly the lines' own results, or fails:
    a line that holds part of a value cannot pass, because the inserted ``]`` must then close
    an array inside a value and the ``[`` after it cannot follow a value there, and a raw
    newline inside a string is no JSON; so every ``]\n[`` stands between top-level values,
    each line yields at least one, and a line that yields more than one (``{...}] [{...}``)
    shows as more values than lines. A block that fails, or gives more values than lines, is
    read again line by line (``tests/live/test_score_blocks.py`` checks both ways on the
    malformed-input corpus).
    """
    decode = struct_decoder().decode
    if fh is None:
        while True:
            block = list(islice(lines, _CHUNK_LINES))
            if not block:
                return
            yield _one_by_one(block, lineno, decode)
            lineno += len(block)
    decode_lines = chunk_decoder()
    fails = skip = 0
    for data in whole_line_reads(fh, size):
        if skip:
            skip -= 1
        else:
            wrapped = data.replace(b"\n", b"]\n[")
            count = (len(wrapped) - len(data)) >> 1  # newlines
            if data[-1] == 10:
                buf: Any = memoryview(b"[" + wrapped)[:-1]
            else:  # the last line, without a newline
                buf = b"[" + wrapped + b"]"
                count += 1
            try:
                events = decode_lines(buf)
            except (ValueError, RecursionError):  # DecodeError, ValidationError; deep nesting
                events = None
            if events is not None and len(events) == count:
                fails = 0
                lineno += count
                yield events
                continue
            fails = min(fails + 1, _MAX_SKIP)
            skip = (1 << fails) - 1
        block = io.BytesIO(data).readlines()  # split as iterating the file splits
        yield _one_by_one(block, lineno, decode)
        lineno += len(block)


def _one_by_one(block: list[bytes], lineno: int, decode: Any) -> list[tuple[Any]]:
    out: list[tuple[Any]] = []
    append = out.append
    for line_no, raw in enumerate(block, lineno + 1):
        try:
            append((decode(raw),))
        except (ValueError, RecursionError):  # refused: read by slow_event in turn
            append((Refused(raw, line_no),))
    return out


def fast_structs(
    source: str | Path | IO[str] | IO[bytes] | Iterable[str | bytes],
) -> Iterator[Any]:
    """Events of a JSONL source as structs (fast kinds) or models (the rest), msgspec required.

    Accepts and refuses exactly what ``read_events`` does, with the same errors (module
    docstring). ``live._trace.fold_trace`` inlines this loop.
    """
    decoder = struct_decoder()
    if decoder is None:
        raise ImportError("fast_structs needs msgspec (pip install 'hbeval[all]')")
    decode = decoder.decode
    fh = open(source, "rb") if isinstance(source, (str, Path)) else None
    try:
        lines: Iterable[Any] = fh if fh is not None else source  # type: ignore[assignment]
        lineno = 0
        for raw in lines:
            lineno += 1
            if raw.__class__ is not bytes:
                raw = raw.encode("utf-8")
            try:
                yield decode(raw)
                continue
            except (ValueError, RecursionError):  # DecodeError, ValidationError; deep nesting
                pass
            event = slow_event(raw, lineno)
            if event is not None:
                yield event
    finally:
        if fh is not None:
            fh.close()
