"""Clocks moved to ``hbeval_core.contract``; this name stays so existing imports keep working."""

from __future__ import annotations

from ..contract._clock import AsyncClock, Clock, FakeClock, SystemClock, VirtualClock

__all__ = ["AsyncClock", "Clock", "FakeClock", "SystemClock", "VirtualClock"]
