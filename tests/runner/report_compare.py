"""Comparing two reports of the same measurement: everything but wall-clock figures."""

from __future__ import annotations

from typing import Any

TIMING_KEYS = {"started_at", "ended_at", "latency_ms", "created_at", "executor", "nodes"}
"""Keys whose values differ between two equal runs (times, and who ran the trials)."""


def without_timings(value: Any) -> Any:
    """A report with every wall-clock figure removed (what differs between two equal runs)."""
    if isinstance(value, dict):
        return {
            k: without_timings(v)
            for k, v in value.items()
            if k not in TIMING_KEYS and "latency" not in k
        }
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
