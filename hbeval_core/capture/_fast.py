"""The fast path for events a recorder builds itself: no second validation, and no work at all
for what nothing reads during a run.

Building and validating a pydantic event costs microseconds, and a tool turn builds about ten;
capture sits on the agent's hot path. Two shortcuts, for fields the recorder's own code has
checked (validation stays at every trust boundary: files, stores, imports, user input):

* ``construct(cls, fields)`` builds exactly what validation would, without validating;
* ``DeferredRecorder`` keeps the events the live monitor never reads (spans, run starts) as
  builders and their arguments, built when ``events`` is first read, unless a sink, a battery
  trial or anything else needs them at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from ..events import EventBase
from ._recorder import BaseRecorder

__all__ = ["Deferred", "DeferredRecorder", "construct"]

M = TypeVar("M", bound=BaseModel)

_IMMUTABLE_DEFAULTS = (type(None), str, int, float, bool)
_new = object.__new__
_setattr = object.__setattr__

# Field-ordered defaults (required fields hold a placeholder) and the default factories.
_Prototype = tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]]
_PROTOTYPES: dict[type[BaseModel], _Prototype | None] = {}


def _prototype(cls: type[BaseModel]) -> _Prototype | None:
    """Field-ordered defaults and default factories of ``cls``, or None if ``construct`` can't.

    ``construct`` is only as good as ``model_construct`` for a model whose validation has no side
    effects of its own: no validators, serializers, private attributes, post-init hook, aliases,
    data-taking factories, extra fields or mutable plain defaults. A model that gains any of these
    falls back to validation by itself, so a change in the core can't silently skip checks here.
    """
    decorators = cls.__pydantic_decorators__
    if (
        cls.__pydantic_post_init__ is not None
        or cls.__private_attributes__
        or cls.__pydantic_root_model__
        or cls.model_config.get("extra") == "allow"
        or decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or decorators.field_serializers
        or decorators.model_serializers
    ):
        return None
    base: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, info in cls.model_fields.items():
        if info.alias is not None or info.validation_alias is not None:
            return None
        if info.default_factory is not None:
            if info.default_factory_takes_validated_data:
                return None
            factories.append((name, info.default_factory))  # type: ignore[arg-type]
            base[name] = None
        elif info.is_required():
            base[name] = None  # every caller passes it (keeps the field order of validation)
        elif isinstance(info.default, _IMMUTABLE_DEFAULTS):
            base[name] = info.default
        else:
            return None
    return base, tuple(factories)


def construct(cls: type[M], fields: dict[str, Any]) -> M:
    """``cls(**fields)`` without validation, for fields already known to be of the right type.

    Produces what validation would (same field order, ``model_fields_set`` and defaults, fresh
    default-factory values) at under half the cost. Callers guarantee: every required field is
    given, only field names are given, and each value already passes its field's checks (a
    ``str`` is exactly ``str``, a literal is one of its values, nested models are instances,
    floats are finite and within their bounds); when they can't, they validate instead. Models
    the shortcut can't build exactly (see ``_prototype``) are always validated.
    """
    try:
        proto = _PROTOTYPES[cls]
    except KeyError:
        proto = _PROTOTYPES[cls] = _prototype(cls)
    if proto is None:
        return cls(**fields)
    base, factories = proto
    values = base.copy()
    values.update(fields)
    for name, factory in factories:
        if name not in fields:
            values[name] = factory()
    model = _new(cls)
    _setattr(model, "__dict__", values)
    _setattr(model, "__pydantic_fields_set__", set(fields))
    _setattr(model, "__pydantic_extra__", None)
    _setattr(model, "__pydantic_private__", None)
    return model


# An event not built yet: (builder, *its arguments, seq, ts).
Deferred = tuple[Any, ...]
_now = time.time


class DeferredRecorder(BaseRecorder):
    """A ``BaseRecorder`` whose events the monitor never reads may be built on first read.

    ``record_checked_locked`` records an event from fields the caller vouches for (built with
    ``construct``); ``record_deferred_locked`` an event the monitor never reads, kept as its
    builder until ``events`` is read; ``add_finisher_locked`` work to do on an event before it
    is read (converting a model call's input messages, say).
    """

    def _init_events(self) -> None:
        self._events: list[EventBase] = []
        # Recorded since ``events`` was last read, in order: events, or deferred builders.
        self._pending: list[EventBase | Deferred] = []
        # Work to finish before ``events`` is read: (what, a callable doing it).
        self._finishers: list[tuple[str, Callable[[], None]]] = []

    def _append_locked(self, event: EventBase) -> None:
        self._pending.append(event)

    @property
    def events(self) -> list[EventBase]:
        """Every event recorded so far, in the order it was recorded.

        Events the monitor folds are built as they happen; deferred ones are built here, on
        first read, and pending finishers run. The list is the same object on every read; it
        grows as the recorder records.
        """
        if self._pending:
            with self._lock:
                self._flush_locked()
        return self._events

    @events.setter
    def events(self, value: list[EventBase]) -> None:
        with self._lock:
            self._pending.clear()
            self._finishers.clear()
            self._events = value

    def defer_events(self) -> bool:
        """Whether events the monitor never reads may wait until ``events`` is read.

        Not when a streaming sink or a battery trial (whose trace a timeout may cut) takes
        each event as it happens.
        """
        return self.trial is None and self.on_event is None

    def add_finisher_locked(self, what: str, finish: Callable[[], None]) -> None:
        """Run ``finish`` before ``events`` is next read (its error is a capture error)."""
        self._finishers.append((what, finish))

    def record_checked_locked(
        self, cls: type[EventBase], fields: dict[str, Any], checked: bool
    ) -> EventBase:
        """Number, build, record and observe one event; the caller holds the lock.

        ``fields`` holds every field but ``seq`` and ``ts``. ``checked``: the caller vouches
        that each already passes validation (see ``construct``) but ``run_id``, which is
        checked here (a fixed run id comes from the user); unchecked fields are validated.
        """
        fields["seq"] = self._seq
        fields["ts"] = _now()
        self._seq += 1
        event = (
            construct(cls, fields)
            if checked and type(fields["run_id"]) is str
            else self.build(cls, fields)
        )
        if self.trial is not None and not self._keep(event):
            return event
        self._pending.append(event)
        # Observed under the lock so the live monitor sees events in list order, even when
        # parallel tool calls report from several threads.
        self.monitor.observe(event)
        return event

    def record_deferred_locked(self, builder: Any, *args: Any) -> EventBase | None:
        """Record an event the monitor never reads: deferred as ``(builder, *args, seq, ts)``
        unless ``defer_events`` says no (then it is built and returned)."""
        seq = self._seq
        self._seq = seq + 1
        if self.defer_events():
            self._pending.append((builder, *args, seq, _now()))
            return None
        event: EventBase = builder(*args, seq, _now())
        if self._keep(event):
            self._pending.append(event)
        return event

    def _trim_locked(self, limit: int) -> None:
        """Keep only the newest ``limit`` events (the caller holds the lock)."""
        if len(self._pending) + len(self._events) <= limit:
            return
        self._flush_locked()
        excess = len(self._events) - limit
        if excess > 0:
            del self._events[:excess]

    def _flush_locked(self) -> None:
        """Run the finishers, build the deferred events, move everything into ``events``."""
        if self._finishers:
            for what, finish in self._finishers:
                try:
                    finish()
                except Exception as exc:
                    self.fail(f"events: {what}", exc)
            self._finishers.clear()
        pending, self._pending = self._pending, []
        out = self._events
        for item in pending:
            if type(item) is tuple:
                out.append(item[0](*item[1:]))  # pure builders of checked values
            else:
                out.append(item)  # type: ignore[arg-type]
