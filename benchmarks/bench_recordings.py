"""Recordings in: import throughput on the tau-bench file, and the span processor's cost per span.

1. **Import** of ``../shared/corpora/tau-bench/gpt-4o-airline.json`` (200 runs), in two parts:
   reading (JSON to hb-events) and the whole import (reading, scoring every trial, building the
   report, writing a fresh SQLite store). Printed: median seconds, runs/s and events/s.
2. **Span processor**: the host thread's cost of one ``execute_tool`` span (GenAI attributes)
   under an SDK ``TracerProvider`` with a no-op processor, and with ``HBEvalSpanProcessor``
   (whose host-side work is one queue put; the mapping and the live monitor run on its worker).
   Interleaved rounds; median µs per span, the difference, and the worker's own time per span
   (draining the queue after the round).

    .venv/bin/python benchmarks/bench_recordings.py [--rounds 5] [--spans 2000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from hbeval_core.importers import import_recordings, read_trials
from hbeval_core.otel import HBEvalSpanProcessor
from hbeval_core.store import open_store

TAU = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "corpora"
    / "tau-bench"
    / "gpt-4o-airline.json"
)


class NoOp(SpanProcessor):
    """Does nothing with a span: the floor a processor cannot go below."""


def bench_import(rounds: int) -> None:
    if not TAU.is_file():
        print(f"import: skipped, {TAU} is absent")
        return
    reads, fulls = [], []
    runs = events = 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        trials = read_trials("tau-bench", [TAU])
        reads.append(time.perf_counter() - t0)
        runs, events = len(trials), sum(len(t.events) for t in trials)
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(str(Path(tmp) / "hb.db"))
            try:
                t0 = time.perf_counter()
                import_recordings("tau-bench", [TAU], store=store)
                fulls.append(time.perf_counter() - t0)
            finally:
                store.close()
    print(f"import of {TAU.name}: {runs} runs, {events} events, {rounds} rounds")
    for label, times in (("read to events", reads), ("full import", fulls)):
        med = statistics.median(times)
        print(
            f"  {label:<15} {med:7.3f} s  {runs / med:8.0f} runs/s  {events / med:10.0f} events/s"
        )


def _spans(provider: TracerProvider, n: int) -> float:
    tracer = provider.get_tracer("bench")
    t0 = time.perf_counter()
    with tracer.start_as_current_span(
        "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        for i in range(n):
            with tracer.start_as_current_span(
                "execute_tool lookup",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.id": f"call_{i}",
                    "gen_ai.tool.call.result": "ok",
                },
            ):
                pass
    return time.perf_counter() - t0


def bench_processor(rounds: int, n: int) -> None:
    results: dict[str, list[float]] = {"no-op processor": [], "HBEvalSpanProcessor": []}
    drains: list[float] = []
    for r in range(rounds):
        order = list(results) if r % 2 == 0 else list(reversed(results))
        for name in order:
            provider = TracerProvider()
            proc: Any = (
                NoOp() if name == "no-op processor" else HBEvalSpanProcessor(max_queue=n + 10)
            )
            provider.add_span_processor(proc)
            elapsed = _spans(provider, n)
            results[name].append(elapsed / (n + 1) * 1e6)
            if isinstance(proc, HBEvalSpanProcessor):
                t0 = time.perf_counter()
                proc.force_flush()
                drains.append((time.perf_counter() - t0) / (n + 1) * 1e6)
                assert proc.dropped == 0
            provider.shutdown()
    print(f"span processor, {n} execute_tool spans per round, {rounds} rounds (host thread)")
    base = statistics.median(results["no-op processor"])
    for name, values in results.items():
        med = statistics.median(values)
        extra = "" if name == "no-op processor" else f"  (+{med - base:.1f} µs per span)"
        print(f"  {name:<20} {med:7.1f} µs per span{extra}")
    print(
        f"  worker, after the round: {statistics.median(drains):.1f} µs per span (off the host thread)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spans", type=int, default=2000)
    args = parser.parse_args()
    bench_import(args.rounds)
    bench_processor(args.rounds, args.spans)


if __name__ == "__main__":
    main()
