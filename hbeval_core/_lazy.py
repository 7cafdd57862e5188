"""Lazy package exports: a name's module is imported when the name is first used.

Adapter packages export names whose modules import their framework; importing the package
itself must stay cheap, so each name resolves on first attribute access and is then cached.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    public: Sequence[str],
    aliases: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    ``exports`` maps each name to the module defining it (absolute, or relative to
    ``package``); ``aliases`` maps a public name to the name it has in that module.
    """
    renamed = dict(aliases or {})

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), renamed.get(name, name))
        vars(sys.modules[package])[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__
