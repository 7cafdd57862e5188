"""Monitor.record_step throughput and memory against the tally floor (and the reference SDK).

The floor is ``Tally``: an object with the same ``record_step`` signature doing O(1) counter
updates, the least any live monitor can cost per step. Runs hbeval's ``Monitor``, the floor and,
when installed, the HB-Eval reference SDK interleaved in one process on the same step streams
(nominal; degraded: every step faulted, failing and untraceable, so FRR and TI breach on every
step) and prints steps/s (median of the interleaved runs), the ratio hbeval / floor (goal: at
most 2.5x), whether PEI equals a from-scratch count, and the memory kept after a million
degraded steps (flat: the same at half and at all the steps).

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


class Tally:
    """The floor: ``record_step``'s signature and O(1) counter updates, nothing else."""

    def __init__(self) -> None:
        self.steps = self.ok = self.faulted = self.traceable = self.replans = 0

    def record_step(
        self,
        *,
        action: str = "",
        success: bool = True,
        had_fault: bool = False,
        recovered_intentionally: bool | None = None,
        traceable: bool = True,
        replanned: bool = False,
        handled_deliberately: bool | None = None,
        **metadata: Any,
    ) -> None:
        self.steps += 1
        if success:
            self.ok += 1
        if had_fault:
            self.faulted += 1
        if traceable:
            self.traceable += 1
        if replanned:
            self.replans += 1


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


def rate(make: Callable[[], Any], kwargs: dict[str, Any], n: int) -> tuple[float, float]:
    """Steps per second of wall clock and of this thread's CPU time (a loaded machine's
    waiting for a CPU counts in the first, not in the second)."""
    target = make()
    record = target.record_step
    gc.collect()
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(n):
        record(**kwargs)
    if hasattr(target, "step_count"):
        target.step_count  # noqa: B018 - reading folds queued steps: part of the cost
    return n / (time.perf_counter() - t0), n / (time.thread_time() - c0)


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


def pei_exact(n: int = 20_000) -> bool:
    """PEI v2 after every 1000th step of a mixed stream equals a count made from scratch."""
    m = Monitor()
    episodes = transitions = 0
    seen: set[str] = set()
    prev_fault = False
    for i in range(n):
        had_fault = (i // 7) % 3 == 0
        action = f"tool_{(i * 7919) % 97}"
        success = not had_fault or i % 2 == 0
        opened = had_fault and not prev_fault
        episodes += opened
        if action not in seen and had_fault and success and not opened:
            transitions += 1
        seen.add(action)
        prev_fault = had_fault
        m.record_step(action=action, success=success, had_fault=had_fault)
        if i % 1000 == 999:
            expected = max(0.0, 1.0 - abs(episodes - transitions) / (i + 1))
            if m.metrics["pei"] != expected:
                return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--memory-steps", type=int, default=1_000_000)
    args = ap.parse_args()
    impls: dict[str, Callable[[], Any]] = {"hbeval": Monitor, "floor": Tally}
    if reference_session() is not None:
        impls["reference"] = reference_session
    else:
        print("reference SDK not installed (pip install 'hbeval[bench]'): ours only")

    print(
        f"record_step, thresholds on, halt and policy off; {args.steps:,} steps x {args.repeats} interleaved runs"
    )
    for stream, kwargs in STREAMS.items():
        wall: dict[str, list[float]] = {k: [] for k in impls}
        cpu: dict[str, list[float]] = {k: [] for k in impls}
        for _ in range(args.repeats):
            for name, make in impls.items():
                w, c = rate(make, kwargs, args.steps)
                wall[name].append(w)
                cpu[name].append(c)
        for clock, samples in (("wall", wall), ("CPU", cpu)):
            med = {k: statistics.median(v) for k, v in samples.items()}
            line = [f"{stream:9s} {clock:4s}"]
            line += [f"{name} {med[name] / 1e6:.2f}M/s" for name in impls]
            line.append(f"hbeval/floor {med['floor'] / med['hbeval']:.2f}x (goal <= 2.5x)")
            if "reference" in med:
                line.append(f"reference/hbeval {med['reference'] / med['hbeval']:.2f}x")
            print("  ".join(line))
    print(f"PEI exact on a mixed stream (against a from-scratch count): {pei_exact()}")

    kwargs = STREAMS["degraded"]
    print(f"memory kept after {args.memory_steps:,} degraded steps (tracemalloc):")
    for name, make in impls.items():
        if name == "floor":
            continue
        size = retained_bytes(make, kwargs, args.memory_steps)
        print(f"  {name:9s} {size / 1e6:8.1f} MB")
    half = retained_bytes(Monitor, kwargs, args.memory_steps // 2)
    full = retained_bytes(Monitor, kwargs, args.memory_steps)
    print(
        f"  hbeval at {args.memory_steps // 2:,} vs {args.memory_steps:,} steps: {half:,} vs {full:,} bytes (flat)"
    )


if __name__ == "__main__":
    main()
