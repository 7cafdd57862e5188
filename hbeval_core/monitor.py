"""Alias of :mod:`hbeval_core.live.monitor`, where the monitor lives; kept so old imports work.

``import hbeval_core.monitor`` gives the very same module object, so its names, its private
helpers and anything patched on it are shared with ``hbeval_core.live.monitor``.
"""

from __future__ import annotations

import sys

from .live import monitor as _live_monitor
from .live.monitor import (
    Breach,
    Directive,
    Monitor,
    PolicyRule,
    SafeHaltError,
    action_fingerprint,
    score_events,
)

__all__ = [
    "Breach",
    "Directive",
    "Monitor",
    "PolicyRule",
    "SafeHaltError",
    "action_fingerprint",
    "score_events",
]

sys.modules[__name__] = _live_monitor
