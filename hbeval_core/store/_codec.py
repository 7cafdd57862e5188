"""Event bodies for the store: the same JSON as ``dump_event``, about five times faster.

``dump_event`` asks pydantic for a dict of the event and then runs ``json.dumps``; at the store's
ingest rate that is most of the cost. :func:`encode_events` builds the same dict straight from
each event's attributes (kind first, fields in declaration order, fields equal to their default
left out, exactly as ``model_dump(exclude_defaults=True)`` does) and serialises it with orjson
when it is importable (the stdlib encoder otherwise). Anything that is not plain JSON data
(datetimes, enums, sets, bytes, very large ints, subclassed values, models with custom
serialisers, ...) goes through ``dump_event`` itself, so it alone decides how such values look.
The text can differ from ``dump_event`` only in spelling (``1e-07`` vs ``1e-7``): ``json.loads``
of both gives equal objects with keys in the same order at every level, and the tests check that
for every event kind and for the fallback cases.

NaN, infinities and lone surrogates are refused with a ``ValueError`` naming the field. orjson
writes NaN as ``null`` (the stdlib encoder and ``dump_event`` refuse it), so a body that contains
``null`` is checked against the event's values before it is accepted."""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ..events import EventBase, dump_event
from ._validate import find_unstorable

_Builder = Callable[[Any], dict[str, Any]]


class _NotPlain(TypeError):
    """A value the fast path leaves to ``dump_event``."""


def _nested(obj: Any) -> dict[str, Any]:
    """Encoder hook, called for any value JSON does not know: leave the event to dump_event."""
    raise _NotPlain(type(obj).__name__)


def _is_plain(value: Any) -> bool:
    """True when ``value`` is JSON built only of exact dict, list, str, int, float, bool and None.

    Free-form fields (``args``, ``result``, ``attrs``, ...) can hold any Python object, and some
    that orjson writes natively are written differently by ``dump_event`` (an ``Enum`` member is its
    value for orjson, ``"Colour.RED"`` for ``dump_event``). Anything else sends the event to
    ``dump_event``. Only containers reach this walk; scalars are checked inline.
    """
    cls = value.__class__
    items = value.values() if cls is dict else value if cls is list else None
    if items is None:
        return cls in _SCALARS
    for item in items:
        cls = item.__class__
        if cls in _SCALARS or ((cls is dict or cls is list) and _is_plain(item)):
            continue
        return False
    return True


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _scalar_annotation(annotation: Any) -> bool:
    """True for ``str``, ``int``, ``float``, ``bool``, ``None``, literals and unions of those."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return all(a is None or type(a) in (str, int, bool) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return all(_scalar_annotation(a) for a in typing.get_args(annotation))
    return annotation in _SCALARS


def _stdlib_to_json(obj: dict[str, Any]) -> bytes:
    """The stdlib serialiser (used when orjson is missing); NaN raises, sending it to dump_event."""
    text = json.dumps(
        obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_nested
    )
    return text.encode()


_to_json: Callable[[dict[str, Any]], bytes] = _stdlib_to_json
try:  # orjson is optional; the stdlib encoder gives the same content, more slowly.
    import orjson

    _to_json = partial(
        orjson.dumps,
        default=_nested,
        # Route these to the hook (and so to dump_event), not to orjson's own rendering.
        option=orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_SUBCLASS,
    )
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    pass


_BUILDERS: dict[type[Any], _Builder | None] = {}
_EVENT_INFO: dict[type[Any], tuple[_Builder | None, str]] = {}


def _plain_serialisation(cls: type[BaseModel]) -> bool:
    """True when dumping ``cls`` is a plain attribute copy (no custom serialisers or excludes)."""
    decorators = cls.__pydantic_decorators__
    if decorators.field_serializers or decorators.model_serializers:
        return False
    if cls.model_computed_fields or cls.model_config.get("serialize_by_alias"):
        return False
    return all(
        not info.exclude and getattr(info, "exclude_if", None) is None
        for info in cls.model_fields.values()
    )


def _model_in(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """``("one", M)`` for a field typed ``M`` or ``M | None``, ``("list", M)`` for ``list[M]``."""
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        annotation, origin = args[0], None
    if origin is list and len(args) == 1:
        inner = args[0]
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            return "list", inner
        return None
    if origin is None and isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "one", annotation
    return None


def _make_builder(cls: type[BaseModel]) -> _Builder | None:
    """Compile ``obj -> dict`` for one model class, or None when it must go through ``dump_event``.

    The function is generated (one ``if`` per field, defaults bound as constants, nested models
    converted inline) because a generic loop over the fields costs a third more per event at
    the store's rates. The rule per field is pydantic's ``exclude_defaults``: keep the value
    unless it equals the default. A nested model whose class is not exactly the declared one,
    or a free-form field holding more than plain JSON, raises ``_NotPlain``, so ``dump_event``
    serialises that event.
    """
    if not _plain_serialisation(cls):
        return None
    _BUILDERS[cls] = None  # a self-referencing model goes through dump_event
    fields = cls.model_fields
    kind = fields["kind"].default if "kind" in fields else None
    names: dict[str, Any] = {
        "_NotPlain": _NotPlain,
        "_cls": cls,
        "_SCALARS": _SCALARS,
        "_is_plain": _is_plain,
    }
    lines = [
        "def build(obj):",
        "    if obj.__class__ is not _cls: raise _NotPlain(_cls.__name__)",
        "    d = obj.__dict__",
        f"    out = {{'kind': {kind!r}}}" if isinstance(kind, str) else "    out = {}",
    ]
    for i, (name, info) in enumerate(fields.items()):
        if name == "kind" and isinstance(kind, str):
            continue
        if info.default_factory is not None:
            default = info.default_factory()  # type: ignore[call-arg]
        else:
            default = info.default
        value, check = "v", ""
        nested = _model_in(info.annotation)
        nested_builder = _builder_for(nested[1]) if nested else None
        if nested and nested_builder is not None:
            names[f"_b{i}"] = nested_builder
            value = f"_b{i}(v)" if nested[0] == "one" else f"list(map(_b{i}, v))"
        elif not _scalar_annotation(info.annotation):  # free-form: walk it before trusting it
            check = (
                f"if v.__class__ not in _SCALARS and not _is_plain(v): raise _NotPlain({name!r})"
            )
        lines.append(f"    v = d[{name!r}]")
        if default is PydanticUndefined:  # required: always present
            condition = ""
        elif default is None:
            condition = "if v is not None:"
        else:
            names[f"_d{i}"] = default
            condition = f"if v is not _d{i} and v != _d{i}:"
        pad = "    " if not condition else "        "
        if condition:
            lines.append(f"    {condition}")
        if check:
            lines.append(pad + check)
        lines.append(f"{pad}out[{name!r}] = {value}")
    lines.append("    return out")
    # The source is built above from the class's own field names and nothing else.
    exec("\n".join(lines), names)
    builder: _Builder = names["build"]
    return builder


def _builder_for(cls: type[Any]) -> _Builder | None:
    """The cached builder of a model class (None: serialise it with dump_event)."""
    if cls in _BUILDERS:
        return _BUILDERS[cls]
    builder = _make_builder(cls) if issubclass(cls, BaseModel) else None
    _BUILDERS[cls] = builder
    return builder


def _event_info(cls: type[Any]) -> tuple[_Builder | None, str] | None:
    """Builder and kind of an event class (cached), or None when ``cls`` is not an event."""
    info = _EVENT_INFO.get(cls)
    if info is None and issubclass(cls, EventBase) and "kind" in cls.model_fields:
        info = _EVENT_INFO[cls] = (_builder_for(cls), cls.model_fields["kind"].default)
    return info


def _problem(ev: EventBase, exc: Exception | None = None) -> str | None:
    """What makes ``ev`` unstorable (a NaN, an infinity, a lone surrogate), or None if nothing.

    With ``exc`` (the error pydantic or the encoder raised) a problem is always returned.
    """
    for name in type(ev).model_fields:
        found = find_unstorable(getattr(ev, name), name)
        if found is not None:
            return f"field {found}; NaN, infinities and lone surrogates are never stored"
    return None if exc is None else f"cannot be serialised: {exc}"


def encode_event(ev: EventBase) -> str:
    """One event as compact JSON, equal in content to ``dump_event(ev)``; NaN/inf refused."""
    return encode_events((ev,))[1][0]


def encode_events(events: Iterable[EventBase]) -> tuple[list[str], list[str]]:
    """Kinds and JSON bodies of a batch, in order; the first bad event fails the whole batch.

    The error names the event's position (``events[3]``) and the field at fault. This loop is
    the store's ingest hot path, hence the cached per-class lookups and local names.
    """
    kinds: list[str] = []
    bodies: list[str] = []
    add_kind, add_body = kinds.append, bodies.append
    info_of, to_json = _EVENT_INFO.get, _to_json
    for i, ev in enumerate(events):
        info = info_of(type(ev)) or _event_info(type(ev))
        if info is None:
            raise ValueError(f"events[{i}] is a {type(ev).__name__}, not an hbeval event")
        builder, kind = info
        text: str | None = None
        if builder is not None:
            try:
                raw = to_json(builder(ev))
            except (TypeError, ValueError):  # not plain JSON data: dump_event decides below
                pass
            else:
                if b"null" not in raw:  # the common case: no None, so no NaN either
                    add_kind(kind)
                    add_body(raw.decode())
                    continue
                text = raw.decode()
        problem: str | None = None
        try:
            if text is None:
                text = dump_event(ev)  # refuses NaN itself
                text.encode("utf-8")  # SQLite and UTF-8 files cannot hold lone surrogates
            if "null" in text:  # orjson writes NaN as null: make sure this null is a None
                problem = _problem(ev)
        except ValueError as exc:
            problem = _problem(ev, exc)
        if problem is not None or text is None:
            raise ValueError(f"events[{i}]: {problem}")
        add_kind(kind)
        add_body(text)
    return kinds, bodies
