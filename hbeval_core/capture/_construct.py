"""``construct``: an event built exactly as validation would build it, without validating."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["construct"]

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
