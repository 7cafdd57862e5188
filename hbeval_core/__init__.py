"""hbeval core: events, step derivation, live HB-Eval metrics, faults, scoring and storage.

Imports no agent framework, ever. Heavy modules load on first use, so
``from hbeval_core import Monitor`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> module that defines it; resolved lazily on first attribute access.
_EXPORTS: dict[str, str] = {
    "Monitor": "hbeval_core.live.monitor",
    "SafeHaltError": "hbeval_core.live.monitor",
    "Directive": "hbeval_core.live.monitor",
    "Breach": "hbeval_core.live.monitor",
    "PolicyRule": "hbeval_core.live.monitor",
    "Deriver": "hbeval_core.live.derive",
    "StepRecord": "hbeval_core.live.derive",
    "derive_steps": "hbeval_core.live.derive",
    "fingerprint": "hbeval_core.fingerprint",
    "canonical_json": "hbeval_core.fingerprint",
    "read_events": "hbeval_core.events",
    "write_events": "hbeval_core.events",
    "parse_event": "hbeval_core.events",
    "EventFormatError": "hbeval_core.events",
    "Task": "hbeval_core.contract",
    "ExpectedCall": "hbeval_core.contract",
    "TrialResult": "hbeval_core.contract",
    "Adapter": "hbeval_core.contract",
    "Outcome": "hbeval_core.contract",
    "ToolCall": "hbeval_core.contract",
}

__all__ = [
    "Adapter",
    "Breach",
    "Deriver",
    "Directive",
    "EventFormatError",
    "ExpectedCall",
    "Monitor",
    "Outcome",
    "PolicyRule",
    "SafeHaltError",
    "StepRecord",
    "Task",
    "ToolCall",
    "TrialResult",
    "__version__",
    "canonical_json",
    "derive_steps",
    "fingerprint",
    "parse_event",
    "read_events",
    "write_events",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hbeval_core' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from .contract import Adapter, ExpectedCall, Outcome, Task, ToolCall, TrialResult
    from .events import EventFormatError, parse_event, read_events, write_events
    from .fingerprint import canonical_json, fingerprint
    from .live.derive import Deriver, StepRecord, derive_steps
    from .live.monitor import Breach, Directive, Monitor, PolicyRule, SafeHaltError
