"""The contract between hbeval's core and the framework adapters.

How a run ended is decided here, once, from the exception that stopped it.
"""

from __future__ import annotations

from ._status import (
    RUN_STATUS_FOR_EXCEPTION,
    Ended,
    describe_error,
    ended_by,
    is_infra_error,
    run_status_of,
)

__all__ = [
    "RUN_STATUS_FOR_EXCEPTION",
    "Ended",
    "describe_error",
    "ended_by",
    "is_infra_error",
    "run_status_of",
]
