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
writes NaN as ``null`` (the stdlib encoder and ``dump_event`` refuse it), so the builders test
every number they pass on (numeric fields, and every float inside free-form values): an event
holding a NaN or an infinity never reaches orjson; ``dump_event`` refuses it and the error names
the field. (Scanning each body for ``null`` instead cost more than the encoding itself.)

A trial's events are encoded once: :func:`encoded_events` returns them as :class:`EncodedEvents`,
a list that carries the kinds and bodies made of it, and :func:`encode_events` hands those back
without encoding again while the list still holds exactly those events (the same objects in the
same order; events are frozen). The runner encodes a trial's events when it checks them for
secrets and values the store cannot hold, so the store writes the rows made then."""

from __future__ import annotations

import json
import operator
import types
import typing
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from hbeval_core.events import EventBase, dump_event

from ._validate import find_unstorable

_Builder = Callable[[Any], dict[str, Any]]


class _NotPlain(TypeError):
    """A value the fast path leaves to ``dump_event``."""


def _nested(obj: Any) -> dict[str, Any]:
    """Encoder hook, called for any value JSON does not know: leave the event to dump_event."""
    raise _NotPlain(type(obj).__name__)


def _is_plain(value: Any) -> bool:
    """True when ``value`` is JSON built only of exact dict, list, str, int, float, bool and None,
    with every float finite.

    Free-form fields (``args``, ``result``, ``attrs``, ...) can hold any Python object, and some
    that orjson writes natively are written differently by ``dump_event`` (an ``Enum`` member is its
    value for orjson, ``"Colour.RED"`` for ``dump_event``; a NaN is ``null`` for orjson, an error
    for ``dump_event``). Anything else sends the event to ``dump_event``. Only containers and
    floats reach this walk; the other scalars are checked inline.
    """
    cls = value.__class__
    if cls is dict:
        items = value.values()
    elif cls is list:
        items = value
    else:
        return cls in _EXACT or (cls is float and not value - value)
    for item in items:
        cls = item.__class__
        if cls in _EXACT:
            continue
        if cls is float:
            if item - item:  # NaN or an infinity: inf - inf is NaN, which is truthy
                return False
            continue
        if (cls is dict or cls is list) and _is_plain(item):
            continue
        return False
    return True


_SCALARS = frozenset({str, int, float, bool, type(None)})
_EXACT = frozenset({str, int, bool, type(None)})
"""Scalars written alike by every encoder (floats also need a finiteness check)."""


def _numbers_in(annotation: Any) -> set[Any]:
    """The members of a scalar field's annotation: ``int | None`` gives ``{int, None}``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return set().union(*(_numbers_in(a) for a in typing.get_args(annotation)))
    return {None if annotation is type(None) else annotation}


def _finite_check(annotation: Any) -> str:
    """The generated test that refuses a NaN or an infinity in a scalar field.

    ``v - v`` is 0 for every finite number and NaN (truthy) for NaN and the infinities. A field
    typed only with numbers (and None, which the default test has already set aside) takes it
    as is; any other field (text, flags, literals: a float gets there only through
    ``model_construct``) tests for a float first.
    """
    members = _numbers_in(annotation)
    if members <= {int, float, None}:
        return "if {0} - {0}: raise _NotPlain({1!r})"
    # Text, flags and literals: a float here comes only from model_construct, but a NaN must
    # still be refused, not written as null.
    return "if {0}.__class__ is float and {0} - {0}: raise _NotPlain({1!r})"


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
_orjson_dumps: Callable[..., bytes] | None = None
# Route these to the hook (and so to dump_event), not to orjson's own rendering.
_ORJSON_OPTIONS = 0
try:  # orjson is optional; the stdlib encoder gives the same content, more slowly.
    import orjson

    _orjson_dumps = orjson.dumps
    _ORJSON_OPTIONS = (
        orjson.OPT_PASSTHROUGH_DATETIME
        | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_SUBCLASS
    )
    _to_json = partial(orjson.dumps, default=_nested, option=_ORJSON_OPTIONS)
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    pass
_ORJSON_TO_JSON = _to_json
"""``_to_json`` as imported; ``encode_events`` calls orjson directly while it is still in place."""


_BUILDERS: dict[tuple[type[Any], bool], _Builder | None] = {}
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


def _make_builder(cls: type[BaseModel], checked: bool) -> _Builder | None:
    """Compile ``obj -> dict`` for one model class, or None when it must go through ``dump_event``.

    The function is generated (one ``if`` per field, defaults bound as constants, nested models
    converted inline) because a generic loop over the fields costs a third more per event at
    the store's rates. The rule per field is pydantic's ``exclude_defaults``: keep the value
    unless it equals the default. A nested model whose class is not exactly the declared one
    (``checked``: event classes are looked up by their exact class, so only nested models need
    the test), a free-form field holding more than plain JSON, or a NaN or an infinity in any
    field raises ``_NotPlain``, so ``dump_event`` serialises (and refuses) that event. Numeric
    fields are checked here because orjson would write a NaN as ``null``; every float the
    builder passes on is finite, so the encoder's output needs no second look.
    """
    if not _plain_serialisation(cls):
        return None
    _BUILDERS[cls, checked] = None  # a self-referencing model goes through dump_event
    fields = cls.model_fields
    kind = fields["kind"].default if "kind" in fields else None
    names: dict[str, Any] = {
        "_NotPlain": _NotPlain,
        "_cls": cls,
        "_EXACT": _EXACT,
        "_is_plain": _is_plain,
    }
    lines = ["def build(obj):"]
    if checked:
        lines.append("    if obj.__class__ is not _cls: raise _NotPlain(_cls.__name__)")
    lines.append("    d = obj.__dict__")
    # Leading fields that are always written go straight into the dict literal.
    head = [f"'kind': {kind!r}"] if isinstance(kind, str) else []
    body: list[str] = []
    for i, (name, info) in enumerate(fields.items()):
        if name == "kind" and isinstance(kind, str):
            continue
        if info.default_factory is not None:
            default = info.default_factory()  # type: ignore[call-arg]
        else:
            default = info.default
        value, check = "{}", ""
        nested = _model_in(info.annotation)
        nested_builder = _builder_for(nested[1], checked=True) if nested else None
        if nested and nested_builder is not None:
            names[f"_b{i}"] = nested_builder
            value = f"_b{i}({{}})" if nested[0] == "one" else f"list(map(_b{i}, {{}}))"
        elif not _scalar_annotation(info.annotation):  # free-form: walk it before trusting it
            check = (
                f"if v{i}.__class__ not in _EXACT and not _is_plain(v{i}): "
                f"raise _NotPlain({name!r})"
            )
        else:
            check = _finite_check(info.annotation).format(f"v{i}", name)
        if default is PydanticUndefined:  # required: always present
            condition = ""
        elif default is None:
            condition = f"if v{i} is not None:"
        else:
            names[f"_d{i}"] = default
            condition = f"if v{i} is not _d{i} and v{i} != _d{i}:"
        if not condition and not check:  # written as it is: no local name needed
            if not body:
                head.append(f"{name!r}: " + value.format(f"d[{name!r}]"))
            else:
                body.append(f"    out[{name!r}] = " + value.format(f"d[{name!r}]"))
            continue
        body.append(f"    v{i} = d[{name!r}]")
        pad = "    " if not condition else "        "
        if condition:
            body.append(f"    {condition}")
        if check:
            body.append(pad + check)
        body.append(f"{pad}out[{name!r}] = " + value.format(f"v{i}"))
    lines.append(f"    out = {{{', '.join(head)}}}")
    lines.extend(body)
    lines.append("    return out")
    # The source is built above from the class's own field names and nothing else.
    exec("\n".join(lines), names)
    builder: _Builder = names["build"]
    return builder


def _builder_for(cls: type[Any], *, checked: bool = True) -> _Builder | None:
    """The cached builder of a model class (None: serialise it with dump_event)."""
    key = (cls, checked)
    if key in _BUILDERS:
        return _BUILDERS[key]
    builder = _make_builder(cls, checked) if issubclass(cls, BaseModel) else None
    _BUILDERS[key] = builder
    return builder


def _event_info(cls: type[Any]) -> tuple[_Builder | None, str] | None:
    """Builder and kind of an event class (cached), or None when ``cls`` is not an event."""
    info = _EVENT_INFO.get(cls)
    if info is None and issubclass(cls, EventBase) and "kind" in cls.model_fields:
        builder = _builder_for(cls, checked=False)  # looked up by exact class: no class test
        info = _EVENT_INFO[cls] = (builder, cls.model_fields["kind"].default)
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


class EncodedEvents(list[EventBase]):
    """A list of events with the kinds and bodies :func:`encoded_events` made of them.

    It is an ordinary list of events to every reader. :func:`encode_events` returns its rows
    instead of encoding again as long as the list holds exactly the events they were made from
    (the same objects, in the same order; events are frozen): a list changed since is encoded
    anew. Pickled or copied, it becomes a plain list, so the rows never travel (a Ray worker's
    trial arrives as plain events and the store encodes them).
    """

    _made_from: tuple[EventBase, ...]
    _kinds: tuple[str, ...]
    _bodies: tuple[str, ...]

    def rows(self) -> tuple[list[str], list[str]] | None:
        """The kinds and bodies, or None when the list no longer holds the events they encode."""
        made = self._made_from
        if len(self) != len(made) or not all(map(operator.is_, self, made)):
            return None
        return list(self._kinds), list(self._bodies)

    def __reduce__(self) -> tuple[type[list[EventBase]], tuple[list[EventBase]]]:
        return list, (list(self),)

    def __copy__(self) -> list[EventBase]:
        return list(self)


def encoded_events(
    events: Iterable[EventBase], kinds: list[str], bodies: list[str]
) -> EncodedEvents:
    """``events`` with the rows :func:`encode_events` returned for them (``kinds``, ``bodies``).

    Only this module's callers that have just encoded exactly these events use it; the rows
    are then written as they are.
    """
    out = EncodedEvents(events)
    if len(out) != len(bodies) or len(kinds) != len(bodies):
        raise ValueError(f"{len(out)} events but {len(bodies)} bodies; encode them together")
    out._made_from = tuple(out)
    out._kinds = tuple(kinds)
    out._bodies = tuple(bodies)
    return out


def encode_events(events: Iterable[EventBase]) -> tuple[list[str], list[str]]:
    """Kinds and JSON bodies of a batch, in order; the first bad event fails the whole batch.

    The error names the event's position (``events[3]``) and the field at fault. This loop is
    the store's ingest hot path, hence the cached per-class lookups, the local names and the
    direct orjson call (a ``partial`` with keywords costs a dict per call). An
    :class:`EncodedEvents` still holding the events it was made from gives its rows back.
    """
    if events.__class__ is EncodedEvents:
        rows = events.rows()
        if rows is not None:
            return rows
    kinds: list[str] = []
    bodies: list[str] = []
    add_kind, add_body = kinds.append, bodies.append
    info_of, to_json, dumps = _EVENT_INFO.get, _to_json, _orjson_dumps
    direct = dumps is not None and to_json is _ORJSON_TO_JSON
    hook, options = _nested, _ORJSON_OPTIONS
    for ev in events:
        cls = type(ev)
        info = info_of(cls) or _event_info(cls)
        if info is None:
            raise ValueError(f"events[{len(bodies)}] is a {cls.__name__}, not an hbeval event")
        builder, kind = info
        if builder is not None:
            # The builder refuses NaN and infinities and anything an encoder would render
            # differently from dump_event: what it returns is plain JSON data.
            try:
                if direct:
                    raw = dumps(builder(ev), default=hook, option=options)  # type: ignore[misc]
                else:
                    raw = to_json(builder(ev))
            except (TypeError, ValueError, KeyError):  # not plain: dump_event decides below
                pass
            else:
                add_kind(kind)
                add_body(raw.decode())
                continue
        try:
            text = dump_event(ev)  # refuses NaN itself
            text.encode("utf-8")  # SQLite and UTF-8 files cannot hold lone surrogates
        except ValueError as exc:
            raise ValueError(f"events[{len(bodies)}]: {_problem(ev, exc)}") from None
        except RecursionError:
            raise ValueError(
                f"events[{len(bodies)}]: a value is nested too deeply to be stored"
            ) from None
        except Exception as exc:  # an object whose __str__ raises, ...
            raise ValueError(
                f"events[{len(bodies)}]: cannot be serialised: {type(exc).__name__}: {exc}"
            ) from None
        add_kind(kind)
        add_body(text)
    return kinds, bodies
