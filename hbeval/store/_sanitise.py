"""Make a trial's trace storable: what cannot be stored is replaced, and the trace says what.

A tool argument, a result or a final answer can hold values no JSON store can keep: a lone
surrogate, an integer longer than Python will print (4,300 digits), a list nested thousands of
levels deep, an object whose ``__str__`` raises, a NaN. The store refuses such an event (its
``ValueError`` names the field). Inside a battery one such value must not take the run down, so
the runner passes every trace through :func:`storable_events` first, which leaves storable
events exactly as they are and rebuilds the others:

* a lone surrogate becomes U+FFFD (the replacement character);
* an integer over :data:`MAX_INT_DIGITS` digits becomes text holding its sign, first and last
  digits and its length;
* NaN and infinities become the text ``nan``, ``inf``, ``-inf``;
* anything nested deeper than :data:`MAX_DEPTH` levels, and any object that cannot be turned into
  text, becomes a placeholder naming its type.

Every rebuilt event carries ``attrs["sanitised"]`` (:data:`hbeval_core.vocab.ATTR_SANITISED`):
one line per replaced value, naming its field path and what was done, so the trace never hides
that it was changed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from pydantic import BaseModel

from hbeval_core.events import ChatMessage, EventBase, ModelStart, ToolEnd, ToolError
from hbeval_core.vocab import ATTR_SANITISED

from ._codec import encode_events, encoded_events
from ._json import dumps
from ._redact import ATTR_RESULT_TRUNCATED, REDACTED, Redactor

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "sanitise_value",
    "storable_events",
    "storable_text",
]

MAX_DEPTH: Final = 100
"""Containers nested deeper than this are replaced by a placeholder (JSON readers recurse)."""
MAX_INT_DIGITS: Final = 4300
"""Python's default limit for turning an int into text (``sys.get_int_max_str_digits``)."""
_SAFE_BITS: Final = 14_000
"""Ints with at most this many bits have fewer than 4,300 digits: no need to count them."""
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_EDGE_DIGITS: Final = 12

TextHook = Callable[[str, str, list[str]], str]
"""``(text, path, notes) -> text``: a further rewrite of every string (redaction)."""
NameTest = Callable[[str], bool]
"""``name -> bool``: True when a mapping key names a secret (its whole value is replaced)."""


def storable_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (unchanged when it has none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _digits(n: int) -> int:
    """Decimal digits of ``n > 0`` without turning it into text (which Python refuses)."""
    count = int(n.bit_length() * 0.30102999566398120) + 1
    power = 10 ** (count - 1)
    while power > n:
        count -= 1
        power //= 10
    while power * 10 <= n:
        count += 1
        power *= 10
    return count


def _big_int_text(value: int) -> str | None:
    """A short text standing in for an int over the digit limit; None when it is short enough."""
    magnitude = -value if value < 0 else value
    if magnitude.bit_length() <= _SAFE_BITS:
        return None
    digits = _digits(magnitude)
    if digits <= MAX_INT_DIGITS:
        return None
    head = magnitude // 10 ** (digits - _EDGE_DIGITS)
    tail = magnitude % 10**_EDGE_DIGITS
    sign = "-" if value < 0 else ""
    return f"{sign}{head}...{tail:0{_EDGE_DIGITS}d} (integer of {digits} digits, truncated)"


def _type_name(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__name__


class _Walk:
    """One pass over a value, rebuilding only what must change and noting each change."""

    def __init__(
        self,
        notes: list[str],
        text_hook: TextHook | None = None,
        secret_name: NameTest | None = None,
    ) -> None:
        self.notes = notes
        self.text_hook = text_hook
        self.secret_name = secret_name

    def text(self, value: str, path: str) -> str:
        clean = storable_text(value)
        if clean is not value:
            self.notes.append(f"{path}: lone surrogates replaced by U+FFFD")
        if self.text_hook is not None:
            clean = self.text_hook(clean, path, self.notes)
        return clean

    def value(self, value: Any, path: str, depth: int) -> Any:
        cls = value.__class__
        if cls is str:
            return self.text(value, path)
        if value is None or cls is bool:
            return value
        if cls is int:
            short = _big_int_text(value)
            if short is None:
                return value
            self.notes.append(f"{path}: integer over {MAX_INT_DIGITS} digits truncated")
            return short
        if cls is float:
            if math.isfinite(value):
                return value
            self.notes.append(f"{path}: {value!r} stored as text")
            return repr(value)
        if depth >= MAX_DEPTH and isinstance(
            value, (Mapping, list, tuple, set, frozenset, BaseModel)
        ):
            self.notes.append(f"{path}: nested deeper than {MAX_DEPTH} levels, replaced")
            return f"<{_type_name(value)} nested deeper than {MAX_DEPTH} levels>"
        if isinstance(value, BaseModel):
            return self.model(value, path, depth)
        if isinstance(value, Mapping):
            return self.mapping(value, path, depth)
        if isinstance(value, (list, tuple, set, frozenset)):
            return self.sequence(value, path, depth)
        if isinstance(value, str):  # a str subclass: its text, cleaned
            return self.text(str.__str__(value), path)
        if isinstance(value, (int, float)):  # int/float subclasses (enums, numpy scalars)
            return self.value(int(value) if isinstance(value, int) else float(value), path, depth)
        return self.other(value, path)

    def other(self, value: Any, path: str) -> Any:
        """An object JSON does not know: the store writes ``str(value)``, if that works."""
        try:
            text = str(value)
        except Exception as exc:  # its __str__ or __repr__ raises: a placeholder instead
            self.notes.append(
                f"{path}: {_type_name(value)} could not be turned into text "
                f"({type(exc).__name__}), replaced"
            )
            return f"<unrepresentable {_type_name(value)}>"
        if not isinstance(text, str):
            self.notes.append(f"{path}: {_type_name(value)} has no text form, replaced")
            return f"<unrepresentable {_type_name(value)}>"
        clean = self.text(text, path)
        return value if clean is text else clean

    def key(self, key: Any, path: str) -> Any:
        if key.__class__ is str:
            clean = storable_text(key)
            if clean is not key:
                self.notes.append(f"{path}: key with lone surrogates, replaced by U+FFFD")
            return clean
        if key is None or key.__class__ in (bool, float):
            return key
        if key.__class__ is int and _big_int_text(key) is None:
            return key
        text = self.other(key, f"{path} (key)")
        return text if isinstance(text, str) else str(text)

    def mapping(self, value: Mapping[Any, Any], path: str, depth: int) -> Any:
        out: dict[Any, Any] = {}
        changed = value.__class__ is not dict
        for key, item in value.items():
            name = key if key.__class__ is str else repr(type(key).__name__)
            where = f"{path}.{storable_text(name)}"
            new_key = self.key(key, where)
            if (
                self.secret_name is not None
                and isinstance(new_key, str)
                and item is not None
                and item != ""
                and item != REDACTED
                and self.secret_name(new_key)
            ):
                self.notes.append(f"{where}: value of a secret-named field redacted")
                new_item: Any = REDACTED
            else:
                new_item = self.value(item, where, depth + 1)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value

    def sequence(self, value: Any, path: str, depth: int) -> Any:
        items = list(value)
        out = [self.value(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(items)]
        if any(a is not b for a, b in zip(out, items, strict=True)):
            return out
        return value

    def model(self, value: BaseModel, path: str, depth: int) -> Any:
        updates: dict[str, Any] = {}
        for name in type(value).model_fields:
            item = getattr(value, name, None)
            new = self.value(item, f"{path}.{name}" if path else name, depth + 1)
            if new is not item:
                updates[name] = new
        return value.model_copy(update=updates) if updates else value


def sanitise_value(
    value: Any,
    path: str = "value",
    *,
    text_hook: TextHook | None = None,
    redactor: Redactor | None = None,
) -> tuple[Any, list[str]]:
    """A storable (and, with ``redactor``, redacted) copy of ``value`` and the list of changes
    (``value`` itself when none)."""
    if redactor is not None:
        clean, changes, _ = sanitised_json(value, path, redactor)
        return clean, changes
    notes: list[str] = []
    return _Walk(notes, text_hook).value(value, path, 0), notes


def sanitised_json(value: Any, path: str, redactor: Redactor) -> tuple[Any, list[str], str | None]:
    """``sanitise_value(value, path, redactor=redactor)``, and the JSON text the store writes for
    ``value`` (``store._json.dumps(value, utf8=True)``) when ``value`` is returned as it was
    (None otherwise)."""
    notes: list[str] = []
    text: str | None = None
    try:
        text = dumps(value, utf8=True)  # the compact text the store would write
    except Exception:  # not storable as it is: walk it
        pass
    else:
        if not redactor.may_hold_secret(text):
            return value, notes, text
    clean = _Walk(notes, redactor.text_hook, redactor.secret_name).value(value, path, 0)
    return clean, notes, text if clean is value and not notes else None


def change_kind(note: str) -> str:
    """What a ``storable_events`` note says was done: ``redacted`` (a secret), ``capped`` (a
    text cut to the cap) or ``replaced`` (a value no store can hold)."""
    if "redacted" in note:
        return "redacted"
    if "cut to the first" in note:
        return "capped"
    return "replaced"


def _row(ev: EventBase) -> tuple[str, str] | None:
    """The event's stored kind and JSON text, or None when it cannot be stored as it is."""
    try:
        kinds, bodies = encode_events((ev,))
    except Exception:
        return None
    return kinds[0], bodies[0]


def _capped(ev: EventBase, redactor: Redactor, notes: list[str]) -> dict[str, Any]:
    """Field updates that bring an event's tool result, error or input texts under the cap."""
    updates: dict[str, Any] = {}
    if isinstance(ev, ToolEnd):
        result, original = redactor.cap_value(ev.result)
        if original is not None:
            updates["result"] = result
            notes.append(f"result: {original} bytes, cut to the first {redactor.max_result_bytes}")
            updates["attrs"] = {
                **ev.attrs,
                ATTR_RESULT_TRUNCATED: {
                    "original_bytes": original,
                    "kept_bytes": redactor.max_result_bytes,
                },
            }
    elif isinstance(ev, ToolError):
        text, original = redactor.cap_text(ev.error)
        if original is not None:
            updates["error"] = text
            notes.append(f"error: {original} bytes, cut to the first {redactor.max_result_bytes}")
    elif isinstance(ev, ModelStart):
        messages: list[ChatMessage] = []
        changed = False
        for i, message in enumerate(ev.messages):
            text, original = redactor.cap_text(message.content)
            if original is not None:
                changed = True
                message = message.model_copy(update={"content": text})
                notes.append(
                    f"messages[{i}].content: {original} bytes, cut to the first "
                    f"{redactor.max_result_bytes}"
                )
            messages.append(message)
        if changed:
            updates["messages"] = messages
    return updates


def _sanitise_event(
    ev: EventBase, text_hook: TextHook | None, redactor: Redactor | None = None
) -> tuple[EventBase, list[str]]:
    notes: list[str] = []
    updates: dict[str, Any] = {}
    if redactor is not None:
        updates = _capped(ev, redactor, notes)
        walk = _Walk(notes, redactor.text_hook, redactor.secret_name)
    else:
        walk = _Walk(notes, text_hook)
    for name in type(ev).model_fields:
        if name == "kind":
            continue
        item = updates.get(name, getattr(ev, name, None))
        new = walk.value(item, name, 0)
        if new is not item:
            updates[name] = new
    if not notes:
        return ev, notes
    attrs = dict(updates.get("attrs", ev.attrs))
    earlier = attrs.get(ATTR_SANITISED)
    attrs[ATTR_SANITISED] = [*(earlier if isinstance(earlier, list) else ()), *notes]
    updates["attrs"] = attrs
    return ev.model_copy(update=updates), notes


def _last_resort(ev: EventBase) -> EventBase:
    """Every field that still cannot be stored reset to its default, with a note (never expected)."""
    updates: dict[str, Any] = {}
    lost: list[str] = []
    for name, info in type(ev).model_fields.items():
        if name in ("kind", "run_id") or info.is_required():
            continue
        try:
            json.loads(json.dumps(getattr(ev, name, None), allow_nan=False, default=str))
        except Exception:
            updates[name] = info.get_default(call_default_factory=True)
            lost.append(name)
    notes = [f"{name}: could not be stored, dropped" for name in lost]
    if "attrs" not in lost:
        attrs = dict(ev.attrs)
        earlier = attrs.get(ATTR_SANITISED)
        notes = [*(earlier if isinstance(earlier, list) else ()), *notes]
    else:
        attrs = {}
    updates["attrs"] = {**attrs, ATTR_SANITISED: notes}
    return ev.model_copy(update=updates)


def storable_events(
    events: Iterable[EventBase],
    *,
    text_hook: TextHook | None = None,
    redactor: Redactor | None = None,
) -> tuple[list[EventBase], list[str]]:
    """``events`` made storable, and one note per change (``events`` unchanged when all store).

    With ``redactor`` every event is also redacted and its tool result capped (see
    ``Redactor``). Each note reads ``events[3] args.extra: lone surrogates replaced by
    U+FFFD``; the same lines (without the position) are on the rebuilt event's
    ``attrs["sanitised"]``.

    The events are encoded once, here: when every event of the result could be encoded, the
    list returned carries their store rows (``_codec.EncodedEvents``), which a store then
    writes as they are.
    """
    events = list(events)
    rows: tuple[list[str], list[str]] | None = None
    rewrite: list[bool] | None = None
    if text_hook is None:
        try:
            rows = encode_events(events)
        except Exception:  # ValueError, RecursionError, an object whose __str__ raises, ...
            rows = None  # some event cannot be stored as it is: each is looked at below
        if rows is not None:
            rewrite = [False] * len(events) if redactor is None else redactor.rewrites(rows[1])
            if not any(rewrite):
                return encoded_events(events, *rows), []
    out: list[EventBase] = []
    notes: list[str] = []
    kinds: list[str] = []
    bodies: list[str] = []
    for i, ev in enumerate(events):
        if text_hook is None:
            if rows is not None and rewrite is not None:
                row: tuple[str, str] | None = (rows[0][i], rows[1][i])
                needs = rewrite[i]
            else:
                row = _row(ev)
                needs = redactor is not None and row is not None and redactor.needs_rewrite(row[1])
            if row is not None and not needs:
                out.append(ev)  # storable, and nothing in it to redact or cut
                kinds.append(row[0])
                bodies.append(row[1])
                continue
        clean, changes = _sanitise_event(ev, text_hook, redactor)
        row = _row(clean)
        if changes and row is None:
            clean = _last_resort(clean)
            changes = list(clean.attrs[ATTR_SANITISED])
            row = _row(clean)
        out.append(clean)
        notes.extend(f"events[{i}] {change}" for change in changes)
        if row is not None:  # else left as it is: the store names the field it refuses
            kinds.append(row[0])
            bodies.append(row[1])
    if len(bodies) == len(out):
        return encoded_events(out, kinds, bodies), notes
    return out, notes
