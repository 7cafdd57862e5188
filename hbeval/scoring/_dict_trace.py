"""A trace given as event dicts, read through msgspec struct twins instead of pydantic models.

``trace_figures`` (what EDM computes an offered episode's figures with) gets most of its traces
as plain dicts. Validating each into its pydantic model costs more than everything the figures
then do with it; ``struct_trace`` checks the dicts with the models' msgspec twins instead
(``hbeval_core.events._structs.full_struct_types``: the same field names, types, ``ge`` bounds,
literals and ``extra="forbid"``, every defaulted collection made as the model makes it), which
read exactly like the models where the figures read them: ``analyse_trace`` takes an event's role
from its kind, and the deriver already reads the twins (``hbeval score``).

It answers None, and the caller validates the models as before, whenever the two could differ:
msgspec is missing; an entry is not a plain ``dict``; a kind has no twin (``step``); the trace
holds a fault (its receipt, signals and model-fault handling read the model classes); a value is
one the twin refuses (msgspec is stricter than pydantic's lax mode, never looser, so a lax value
such as ``"3"`` for an int is coerced, and a bad one refused with pydantic's own error, by the
models); or a float field is NaN or infinite (pydantic refuses those, a converted struct does not).
``tests/scoring/test_dict_trace.py`` compares the figures both ways.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

__all__ = ["struct_trace"]

_FAULT_KIND = "fault_injected"

# By kind: msgspec's convert, the struct twin, and the names of its float fields.
_Entry = tuple[Callable[..., Any], type[Any], tuple[str, ...]]


def _mentions(ann: Any, what: type) -> bool:
    if isinstance(ann, type):
        return issubclass(ann, what)
    return any(_mentions(a, what) for a in get_args(ann))


def _float_fields(model: type[BaseModel]) -> tuple[str, ...] | None:
    """``model``'s float fields (a float or an optional float), or None when a float sits
    anywhere else (in a collection, a union with other types, a nested model)."""
    names: list[str] = []
    for name, info in model.model_fields.items():
        ann = info.annotation
        origin, args = get_origin(ann), get_args(ann)
        if origin is Union or origin is types.UnionType:
            inner = [a for a in args if a is not type(None)]
            if inner == [float]:
                names.append(name)
                continue
        elif ann is float:
            names.append(name)
            continue
        if _mentions(ann, float):
            return None
        for nested in _models_in(ann):
            if _float_fields(nested) != ():
                return None
    return tuple(names)


def _models_in(ann: Any) -> list[type[BaseModel]]:
    if isinstance(ann, type):
        return [ann] if issubclass(ann, BaseModel) else []
    return [m for a in get_args(ann) for m in _models_in(a)]


@lru_cache(maxsize=1)
def _entries() -> dict[str, _Entry]:
    """The kinds a struct can stand in for, each role registered with ``analyse_trace``."""
    from hbeval_core.events import Event
    from hbeval_core.events._structs import full_struct_types

    from ._trace import register_role

    structs = full_struct_types()
    if structs is None:
        return {}
    import msgspec

    entries: dict[str, _Entry] = {}
    for model in get_args(get_args(Event)[0]):
        kind = model.model_fields["kind"].default
        floats = _float_fields(model)
        if kind == _FAULT_KIND or kind not in structs or floats is None:
            continue
        register_role(structs[kind], model)
        entries[kind] = (msgspec.convert, structs[kind], floats)
    return entries


def struct_trace(trace: Sequence[Any]) -> list[Any] | None:
    """``trace``'s event dicts as struct twins, or None when the models must be validated."""
    entries = _entries()
    if not entries:
        return None
    out: list[Any] = []
    append = out.append
    isfinite = math.isfinite
    get = entries.get
    for item in trace:
        if item.__class__ is not dict:
            return None
        kind = item.get("kind")
        entry = get(kind) if kind.__class__ is str else None
        if entry is None:
            return None
        convert, struct, floats = entry
        try:
            ev = convert(item, struct)
        except Exception:  # msgspec.ValidationError, or a value it cannot read at all
            return None
        for name in floats:
            value = getattr(ev, name)
            if value is not None and not isfinite(value):
                return None
        append(ev)
    return out
