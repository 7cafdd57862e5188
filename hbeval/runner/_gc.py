"""The cyclic garbage collector while a run builds its report.

When the trials are done, the run reads their verdicts back from the store (or holds them),
builds the report over all of them and saves it: tens of thousands of dicts and lists that all
stay alive until the report is built, and most of which die right after. With the collector
running, every 700 of them start a collection that walks them all (and every tenth one walks
the survivors of the last ten again), only to find nothing to free: the objects are freed by
reference counting once the report is built, and this code makes no reference cycles.

:func:`collector_paused` pauses the collector for that phase (hbeval's own code only: no agent
runs in it), and once the phase's temporary objects are gone, collects the youngest generation
once, so what survives (the report) is walked once, inside the run, as it would have been at
least once with the collector running. A collector the application disabled is left disabled.
The collector is enabled again however the phase ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; then enable it and collect generation 0."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)
