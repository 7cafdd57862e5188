"""Clocks for time-based faults: the real one, and virtual ones that only pretend to wait.

Timeouts and latency faults wait through a ``Clock`` so that tests (and battery runs that do not
care about wall time) can use ``FakeClock``: virtual time advances, nothing sleeps, and the agent
sees exactly the same fault text.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Anything that can wait and tell the time, in seconds."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (or pretend to)."""

    def now(self) -> float:
        """The current time in Unix seconds."""


@runtime_checkable
class AsyncClock(Clock, Protocol):
    """A clock that can also wait without blocking the event loop."""

    async def asleep(self, seconds: float) -> None:
        """Wait ``seconds`` asynchronously (or pretend to)."""


class SystemClock:
    """The real clock: ``time.sleep`` / ``asyncio.sleep`` and ``time.time``."""

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds``."""
        if seconds > 0:
            time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop."""
        # Imported here: asyncio is costly to import and most users of this module are sync.
        import asyncio

        if seconds > 0:
            await asyncio.sleep(seconds)

    def now(self) -> float:
        """Wall-clock time in Unix seconds."""
        return time.time()


class FakeClock:
    """A virtual clock: ``sleep`` advances time at once and records each wait it was asked for."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self.sleeps: list[float] = []
        """Every wait requested, in order (seconds)."""

    def sleep(self, seconds: float) -> None:
        """Advance virtual time by ``seconds`` without waiting."""
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0 (got {seconds})")
        self.sleeps.append(seconds)
        self._now += seconds

    async def asleep(self, seconds: float) -> None:
        """Async twin of ``sleep``: advances virtual time, never yields to real time."""
        self.sleep(seconds)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward without recording a sleep."""
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0 (got {seconds})")
        self._now += seconds

    def now(self) -> float:
        """The virtual time."""
        return self._now

    @property
    def slept(self) -> float:
        """Total virtual seconds slept."""
        return sum(self.sleeps)


class VirtualClock:
    """A clock whose waits are skipped: ``now()`` is real time plus every wait asked for.

    Battery runs use it by default: timeout and latency faults then cost the runner nothing
    while the agent still receives the same error text; ``slept`` counts towards the trial's
    wall-time budget.
    """

    def __init__(self) -> None:
        self.slept = 0.0

    def sleep(self, seconds: float) -> None:
        """Skip ``seconds`` of waiting."""
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0 (got {seconds})")
        self.slept += seconds

    async def asleep(self, seconds: float) -> None:
        """Async twin of ``sleep``."""
        self.sleep(seconds)

    def now(self) -> float:
        """Real time plus the waits skipped so far."""
        return time.time() + self.slept


__all__ = ["AsyncClock", "Clock", "FakeClock", "SystemClock", "VirtualClock"]
