"""Scoring a large JSONL trace end to end vs a bare json.loads loop over the same file.

Writes an N-event hb-events/1 trace (model_start, model_end with a tool call, tool_start,
tool_end per step; every fifth call faulted), then, interleaved, times:
  bare         : for line in file: json.loads(line)
  hbeval       : `hbeval score`'s path: read_events (validated) -> Monitor.observe -> summary
  score_events : read_events -> monitor.score_events (the one-loop fold) -> summary
  validation   : read_events alone (each line parsed and validated into an event model), the
                 floor under both hbeval paths
and prints the median seconds of wall clock and of this thread's CPU time (other processes'
load does not count), the ratios to the bare loop, and the peak RSS of a scoring subprocess.

    .venv/bin/python benchmarks/bench_score.py [--events N] [--repeats R]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def write_trace(path: Path, n_events: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"format":"hb-events/1"}\n')
        fh.write('{"kind":"run_start","run_id":"r1","agent_id":"bench"}\n')
        i = 0
        step = 0
        while i < n_events - 2:
            c = f"c{step}"
            m = f"m{step}"
            fh.write(
                json.dumps(
                    {
                        "kind": "model_start",
                        "run_id": "r1",
                        "call_id": m,
                        "messages": [
                            {
                                "role": "tool",
                                "content": "order 42 shipped",
                                "tool_call_id": f"c{step - 1}",
                            }
                        ],
                    }
                )
                + "\n"
            )
            text = "Checking the order status." if step % 3 else ""
            fh.write(
                json.dumps(
                    {
                        "kind": "model_end",
                        "run_id": "r1",
                        "call_id": m,
                        "text": text,
                        "tool_calls": [
                            {"id": c, "name": "lookup_order", "args": {"order_id": step % 50}}
                        ],
                        "usage": {"input_tokens": 120, "output_tokens": 14},
                    }
                )
                + "\n"
            )
            fh.write(
                json.dumps(
                    {
                        "kind": "tool_start",
                        "run_id": "r1",
                        "call_id": c,
                        "tool": "lookup_order",
                        "args": {"order_id": step % 50},
                    }
                )
                + "\n"
            )
            if step % 5 == 4:
                fh.write(
                    json.dumps(
                        {
                            "kind": "fault_injected",
                            "run_id": "r1",
                            "call_id": c,
                            "tool": "lookup_order",
                            "mode": "error_5xx",
                            "effect": "error",
                            "payload": "HTTP 503",
                        }
                    )
                    + "\n"
                )
                fh.write(
                    json.dumps(
                        {
                            "kind": "tool_error",
                            "run_id": "r1",
                            "call_id": c,
                            "tool": "lookup_order",
                            "error": "HTTP 503 Service Unavailable",
                            "latency_ms": 1.5,
                        }
                    )
                    + "\n"
                )
                i += 5
            else:
                fh.write(
                    json.dumps(
                        {
                            "kind": "tool_end",
                            "run_id": "r1",
                            "call_id": c,
                            "tool": "lookup_order",
                            "result": {"status": "shipped", "order_id": step % 50},
                            "latency_ms": 2.0,
                        }
                    )
                    + "\n"
                )
                i += 4
            step += 1
        fh.write('{"kind":"run_end","run_id":"r1"}\n')


def timed(fn: Callable[[Path], object], path: Path) -> tuple[float, float]:
    """Wall-clock and thread CPU seconds of ``fn(path)``."""
    gc.collect()
    t0, c0 = time.perf_counter(), time.thread_time()
    fn(path)
    return time.perf_counter() - t0, time.thread_time() - c0


def bare(path: Path) -> None:
    loads = json.loads
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            loads(line)


def ours(path: Path) -> None:
    from hbeval_core.events import read_events
    from hbeval_core.monitor import Monitor

    m = Monitor()
    observe = m.observe
    for ev in read_events(path):
        observe(ev)
    m.summary()


def folded(path: Path) -> None:
    from hbeval_core.events import read_events
    from hbeval_core.monitor import score_events

    score_events(read_events(path)).summary()


def validation(path: Path) -> None:
    from hbeval_core.events import read_events

    for _ in read_events(path):
        pass


RSS_CODE = """
import resource, sys
from hbeval_core.events import read_events
from hbeval_core.monitor import Monitor
m = Monitor()
for ev in read_events(sys.argv[1]):
    m.observe(ev)
print(m.step_count, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        write_trace(path, args.events)
        size = os.path.getsize(path)
        print(f"trace: {args.events:,} events, {size / 1e6:.1f} MB")
        runs: dict[str, Callable[[Path], object]] = {
            "bare json.loads loop": bare,
            "hbeval score path": ours,
            "score_events loop": folded,
            "validation alone": validation,
        }
        wall: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeats):  # interleaved, so drift hits all alike
            for name, fn in runs.items():
                w, c = timed(fn, path)
                wall[name].append(w)
                cpu[name].append(c)
        mw = {name: statistics.median(v) for name, v in wall.items()}
        mc = {name: statistics.median(v) for name, v in cpu.items()}
        base = "bare json.loads loop"
        print(f"{'':22}{'wall s':>8}{'CPU s':>8}{'M ev/s':>8}   ratio to bare (wall, CPU)")
        for name in runs:
            print(
                f"{name:22}{mw[name]:8.2f}{mc[name]:8.2f}{args.events / mc[name] / 1e6:8.2f}"
                f"   {mw[name] / mw[base]:.2f}x, {mc[name] / mc[base]:.2f}x"
            )
        print("(lower is faster; the hbeval paths cannot beat 'validation alone')")
        proc = subprocess.run(
            [sys.executable, "-c", RSS_CODE, str(path)], capture_output=True, text=True, check=True
        )
        steps, rss_kb = proc.stdout.split()
        print(f"scoring subprocess   : {int(steps):,} steps, peak RSS {int(rss_kb) / 1024:.0f} MB")


if __name__ == "__main__":
    main()
