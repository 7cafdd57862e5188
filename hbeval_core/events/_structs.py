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
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import IO, Annotated, Any, Literal, Union, cast, get_args, get_origin

from pydantic import BaseModel

from ._base import EventBase
from ._fast import FAST_KINDS, slow_event

__all__ = ["fast_structs", "struct_decoder", "struct_types"]


_READ_COLLECTIONS = frozenset({"args", "tool_calls"})
"""Defaulted collections the deriver reads (``Deriver.feed``): an absent one is made empty,
as the model makes it. Any other absent collection (``attrs`` on every event, a model call's
``messages``, ...) is left ``msgspec.UNSET`` instead of a new empty dict or list per event:
nothing reads it from a struct, and ``msgspec.to_builtins`` leaves it out, so the model built
from such a struct takes its own default."""


def _struct(model: type[BaseModel], done: dict[Any, Any], tag: str | None) -> Any:
    """A msgspec Struct with ``model``'s fields, bounds, defaults and config; nested ones too."""
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
        ann = _struct_type(info.annotation, done)
        bounds: dict[str, Any] = {}
        for meta in info.metadata:
            if not isinstance(meta, Ge):
                raise TypeError(f"{model.__name__}.{name}: {meta!r} is not mirrored")
            bounds["ge"] = meta.ge
        if bounds:
            ann = _bounded(ann, msgspec.Meta(**bounds))
        if info.is_required():
            fields.append((name, ann))
        elif info.default_factory is not None and name not in _READ_COLLECTIONS:
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


def _struct_type(ann: Any, done: dict[Any, Any]) -> Any:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return _struct(ann, done, None)
    origin, args = get_origin(ann), get_args(ann)
    if origin is None or origin is Literal:
        return ann
    mirrored = tuple(_struct_type(a, done) for a in args)
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
def struct_decoder() -> Any:
    """The msgspec decoder of the fast kinds' struct twins (None without msgspec)."""
    structs = struct_types()
    if structs is None:
        return None
    import msgspec

    return msgspec.json.Decoder(Union[tuple(structs.values())])  # noqa: UP007


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
