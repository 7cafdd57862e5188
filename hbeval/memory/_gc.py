"""The cyclic garbage collector while EDM admits a batch.

Admitting a batch builds, per episode, its parsed form, its trace's events and derivation
state, its figures, its row and its decision: tens of thousands of small objects for a batch of
a few thousand episodes, most alive until the batch is written. With the collector running,
every 700 allocations start a collection that walks them all (and every tenth one walks the
survivors again), only to find nothing to free: the admission makes no reference cycles, and
reference counting frees its temporaries. On a batch of 10,000 that walking took a tenth to a
fifth of the admission's CPU time (``benchmarks/bench_edm.py``).

:func:`collector_paused` pauses it for the batch and, once the batch is done, collects the
youngest generation once. A collector the application disabled is left disabled; it is
enabled again however the batch ends.
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
