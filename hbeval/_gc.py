"""The cyclic garbage collector while hbeval builds many short-lived objects at once.

Two phases build tens of thousands of small objects that stay alive until the phase ends: a run
building its report over all its trials' verdicts (no agent runs in it), and EDM admitting a
batch (per episode its parsed form, its trace's events and derivation state, its figures, its
row and its decision). With the collector running, every 700 allocations start a collection that
walks them all (and every tenth one walks the survivors again), only to find nothing to free:
neither phase makes reference cycles, and reference counting frees their temporaries. On an
admission batch of 10,000 that walking took a tenth to a fifth of the CPU time
(``benchmarks/bench_edm.py``).

:func:`collector_paused` pauses the collector for the block and, once the block's temporaries
are gone, collects the youngest generation once, so what survives is walked once, as it would
have been at least once with the collector running. A collector the application disabled is
left disabled; it is enabled again however the block ends.
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
