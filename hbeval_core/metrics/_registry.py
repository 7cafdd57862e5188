"""Registry of metric functions, so a report can say which metric ran, at which version, how."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class MetricSpec:
    """One registered metric: its name, version, function and one-line summary."""

    name: str
    version: str
    func: Callable[..., Any]
    summary: str

    def record(self, **params: object) -> dict[str, object]:
        """The provenance entry a report stores: metric name, version and the parameters used."""
        return {
            "metric": self.name,
            "version": self.version,
            "params": dict(sorted(params.items())),
        }


_REGISTRY: dict[str, MetricSpec] = {}

METRICS: Mapping[str, MetricSpec] = MappingProxyType(_REGISTRY)
"""Every registered metric by name (read-only view)."""


def metric(name: str, *, version: str = "1") -> Callable[[F], F]:
    """Decorator that registers a metric function under ``name`` and ``version``.

    The function itself is returned unchanged, so registration costs nothing at call time.
    """

    def register(func: F) -> F:
        existing = _REGISTRY.get(name)
        # A module reload re-registers the same function; two different functions under one
        # name would make reports ambiguous, so that is refused.
        if existing is not None and _qualname(existing.func) != _qualname(func):
            raise ValueError(f"metric {name!r} is already registered by {_qualname(existing.func)}")
        lines = (func.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = MetricSpec(name, version, func, lines[0] if lines else "")
        return func

    return register


def get_metric(name: str) -> MetricSpec:
    """The registered metric called ``name``; KeyError listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def _qualname(func: Callable[..., Any]) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
