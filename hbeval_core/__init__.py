"""hbeval's small core: what an adapter needs, and nothing of the product.

Vocabulary, fingerprints and versions; events (``hb-events/1``); the adapter contract; capture
(the recorder base and the trial template); live derivation, the ``Monitor`` and its policies;
the metric functions; faults (batteries, plans, the injector, tool boundaries). The product
that runs batteries, stores, scores and reports is the package ``hbeval``, on top of this one.

Imports no agent framework, ever, and nothing of ``hbeval``. Heavy modules load on first use,
so ``from hbeval_core import Monitor`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import _moved

__version__ = "0.1.0"

_moved.install()  # 0.1's import paths keep working, with a warning, until 0.2

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
