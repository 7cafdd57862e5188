"""Moved to ``hbeval_core.cli``: ``hbeval demo`` and its helpers keep importing from here."""

from __future__ import annotations

from .cli._demo import (
    DEMO_TRACE,
    demo_trace_path,
    print_side_by_side,
    run,
    score_demo_trace,
    side_by_side_rows,
)

__all__ = [
    "DEMO_TRACE",
    "demo_trace_path",
    "print_side_by_side",
    "run",
    "score_demo_trace",
    "side_by_side_rows",
]
