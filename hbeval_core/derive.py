"""Alias of :mod:`hbeval_core.live.derive`, where derivation lives; kept so old imports work.

``import hbeval_core.derive`` gives the very same module object as ``hbeval_core.live.derive``.
"""

from __future__ import annotations

import sys

from .live import derive as _live_derive
from .live.derive import (
    DERIVE_V1,
    DERIVE_V2,
    DERIVE_VERSION,
    CallLinker,
    Deriver,
    Issued,
    StepRecord,
    action_label,
    canonical_args,
    derive_steps,
)

__all__ = [
    "DERIVE_V1",
    "DERIVE_V2",
    "DERIVE_VERSION",
    "CallLinker",
    "Deriver",
    "Issued",
    "StepRecord",
    "action_label",
    "canonical_args",
    "derive_steps",
]

sys.modules[__name__] = _live_derive
