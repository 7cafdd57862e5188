"""How an adapter package announces itself: an ``AdapterInfo`` behind a ``hbeval.adapters`` entry point.

An adapter package declares, in its own packaging metadata::

    [project.entry-points."hbeval.adapters"]
    myframework = "my_adapter._entry:ENTRY"

where ``ENTRY`` is an ``AdapterInfo``. The module holding it must import nothing heavy (no
framework): hbeval reads every entry to decide which adapter runs a target, and imports the
adapter itself (``AdapterInfo.adapter``) only when a target needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["ENTRY_POINT_GROUP", "AdapterInfo"]

ENTRY_POINT_GROUP: Final = "hbeval.adapters"
"""The entry-point group adapters register under."""


@dataclass(frozen=True)
class AdapterInfo:
    """What hbeval needs to know about an adapter before importing it."""

    kind: str
    """The adapter kind (``--target-kind``), e.g. ``langgraph``."""
    adapter: str
    """``"module:attr"`` of a callable with no arguments returning the ``Adapter``."""
    module_prefixes: tuple[str, ...] = ()
    """Module prefixes of the framework's classes: a target whose class (or a base) comes from
    one of them is this adapter's. Empty: chosen only by ``--target-kind`` or a detector."""
    demo: str | None = None
    """Module with the demo's ``careful`` and ``naive`` agent factories and its ``tasks``."""
    demo_priority: int = 0
    """Which demo ``hbeval demo`` prefers when several are installed (highest first)."""
    extra: str | None = None
    """The ``hbeval[extra]`` that installs the framework, for error messages."""

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind.strip():
            raise ValueError("AdapterInfo field 'kind' must be a non-empty name")
        module, sep, attr = (
            self.adapter.partition(":") if isinstance(self.adapter, str) else ("", "", "")
        )
        if not (module and sep and attr):
            raise ValueError(
                f"AdapterInfo {self.kind!r}: field 'adapter' must be 'module:attr' "
                f"(got {self.adapter!r})"
            )
