"""A factory agent that waits on its "model" like a real one: for Ray, async and benchmarks.

``slow_careful()`` is the packaged careful support agent whose every message first waits
``DELAY`` seconds (as a model call would), so trials are I/O-bound and a battery lasts long
enough to be interrupted. Imported by reference (``tests.runner.ray_agent:slow_careful``) on
Ray workers.
"""

from __future__ import annotations

import os
import time
from typing import Any

from hbeval_plain.examples import CarefulAgent, tasks

__all__ = ["DELAY", "SlowCareful", "slow_careful", "slower_careful", "tasks"]

DELAY = float(os.environ.get("HBEVAL_TEST_AGENT_DELAY", "0.05"))


class SlowCareful(CarefulAgent):
    """The careful agent, waiting ``delay`` seconds per message before it answers."""

    def __init__(self, delay: float = DELAY) -> None:
        super().__init__()
        self.delay = delay

    def __call__(self, question: str) -> dict[str, Any]:
        time.sleep(self.delay)
        return super().__call__(question)


def slow_careful() -> SlowCareful:
    """A fresh slow careful agent (a factory: each trial gets its own)."""
    return SlowCareful()


def slower_careful() -> SlowCareful:
    """One that waits a second per message: a battery long enough to break in the middle."""
    return SlowCareful(1.0)
