"""Monitor.record_step throughput and memory, ours vs the HB-Eval reference SDK, side by side.

Runs both implementations interleaved in one process on the same step streams (nominal and
degraded: every step faulted, failing and untraceable, so every metric breaches every step) and
prints steps/s, the ratio, and the memory each keeps after a million degraded steps.

    .venv/bin/python benchmarks/bench_monitor.py [--steps N] [--repeats R]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from hbeval_core import Monitor


def reference_session() -> Any | None:
    try:
        from hb_eval_sdk.monitoring import MonitorSession
    except ImportError:
        return None
    return MonitorSession(None, "bench", stream=False, send_summary=False)


STREAMS: dict[str, dict[str, Any]] = {
    "nominal": {"action": "lookup", "success": True, "had_fault": False, "traceable": True},
    "degraded": {"action": "lookup", "success": False, "had_fault": True, "traceable": False},
}


def rate(make: Callable[[], Any], kwargs: dict[str, Any], n: int) -> float:
    target = make()
    record = target.record_step
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(n):
        record(**kwargs)
    return n / (time.perf_counter() - t0)


def retained_bytes(make: Callable[[], Any], kwargs: dict[str, Any], n: int) -> int:
    gc.collect()
    tracemalloc.start()
    target = make()
    for _ in range(n):
        target.record_step(**kwargs)
    size, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del target
    return size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--memory-steps", type=int, default=1_000_000)
    args = ap.parse_args()
    impls: dict[str, Callable[[], Any]] = {"hbeval": Monitor}
    if reference_session() is not None:
        impls["reference"] = reference_session
    else:
        print("reference SDK not installed (pip install 'hbeval[bench]'): ours only")

    print(
        f"record_step, thresholds on, halt and policy off; {args.steps:,} steps x {args.repeats} interleaved runs"
    )
    for stream, kwargs in STREAMS.items():
        samples: dict[str, list[float]] = {k: [] for k in impls}
        for _ in range(args.repeats):
            for name, make in impls.items():
                samples[name].append(rate(make, kwargs, args.steps))
        line = [f"{stream:9s}"]
        for name, xs in samples.items():
            line.append(
                f"{name} {statistics.median(xs) / 1e6:.2f}M/s (spread {min(xs) / 1e6:.2f}-{max(xs) / 1e6:.2f})"
            )
        if "reference" in samples:
            ratio = statistics.median(samples["hbeval"]) / statistics.median(samples["reference"])
            line.append(f"ratio hbeval/reference {ratio:.2f}x")
        print("  ".join(line))

    kwargs = STREAMS["degraded"]
    print(f"memory kept after {args.memory_steps:,} degraded steps (tracemalloc):")
    for name, make in impls.items():
        size = retained_bytes(make, kwargs, args.memory_steps)
        print(f"  {name:9s} {size / 1e6:8.1f} MB")
    half = retained_bytes(Monitor, kwargs, args.memory_steps // 2)
    full = retained_bytes(Monitor, kwargs, args.memory_steps)
    print(
        f"  hbeval at {args.memory_steps // 2:,} vs {args.memory_steps:,} steps: {half:,} vs {full:,} bytes (flat)"
    )


if __name__ == "__main__":
    main()
