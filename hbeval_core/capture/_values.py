"""Values as events carry them: a JSON-safe copy, the agent keeping the original object."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["jsonable"]

_SCALARS: Final = (str, int, bool, type(None))
_MAX_DEPTH: Final = 32


def jsonable(value: Any, depth: int = 0, *, models: bool = False) -> Any:
    """A JSON-safe copy of ``value`` for an event (the agent keeps the original object).

    Non-finite floats and anything else JSON cannot hold become their ``repr``; so does what
    lies deeper than 32 levels. ``models=True`` copies a pydantic model as its ``model_dump()``.
    """
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth > _MAX_DEPTH:
        return repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1, models=models) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1, models=models) for v in value]
    dump = getattr(value, "model_dump", None) if models else None
    if callable(dump):
        try:
            return jsonable(dump(), depth + 1, models=models)
        except Exception:
            return repr(value)
    return repr(value)
