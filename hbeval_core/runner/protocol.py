"""Moved to ``hbeval_core.contract``; these names stay importable here."""

from __future__ import annotations

from ..contract._adapter import Adapter, TrialResult, token_usage, trace_kinds
from ..contract._status import is_infra_error, run_status_of

__all__ = [
    "Adapter",
    "TrialResult",
    "is_infra_error",
    "run_status_of",
    "token_usage",
    "trace_kinds",
]
