"""Recordings in: import throughput on the tau-bench file, and the span processor's cost per span.

1. **Import** of ``../shared/corpora/tau-bench/gpt-4o-airline.json`` (200 runs), in two parts:
   reading (JSON to hb-events) and the whole import (reading, scoring every trial, building the
   report, writing a fresh SQLite store). Printed: median seconds, runs/s and events/s.
2. **Span processor**: the cost of one ``execute_tool`` span (GenAI attributes) under an SDK
   ``TracerProvider`` with a no-op processor, and with ``HBEvalSpanProcessor`` (whose host-side
   work is one append; the mapping and the live monitor run on its worker). Interleaved
   rounds; medians of wall time on the host thread and of process CPU time (every thread,
   the worker's drain included), per span, and their differences. Threads share the GIL, so
   the worker's CPU shows up in the host's wall time too.
3. **Export** of that imported run over OTLP/HTTP to a receiver on 127.0.0.1 that reads each
   request and answers, decoding nothing (so the figure is hbeval's side): building the spans
   (protobuf) alone, and the whole ``export_otlp`` (build, serialise, POST in batches of 100
   trials). Printed: median seconds, spans/s and the bytes sent.

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

from hbeval.importers import import_recordings, read_trials
from hbeval.otel import HBEvalSpanProcessor
from hbeval.store import open_store

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
    names = ("no-op processor", "HBEvalSpanProcessor")
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else tuple(reversed(names)):
            provider = TracerProvider()
            proc: Any = NoOp() if name == names[0] else HBEvalSpanProcessor(max_queue=n + 10)
            provider.add_span_processor(proc)
            c0 = time.process_time()
            wall[name].append(_spans(provider, n) / (n + 1) * 1e6)
            if isinstance(proc, HBEvalSpanProcessor):
                assert proc.force_flush(60_000) and proc.dropped == 0
                assert proc.traces and next(iter(proc.traces.values())).tool_calls == n
            # CPU of every thread of the process: the host's spans plus the worker's mapping.
            cpu[name].append((time.process_time() - c0) / (n + 1) * 1e6)
            provider.shutdown()
    print(f"span processor: {n} execute_tool spans per round, {rounds} rounds")
    print(f"  {'':<20} {'wall, host thread':>18} {'CPU, all threads':>18}")
    for name in names:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"  {name:<20} {w:13.1f} µs {c:13.1f} µs  per span")
    dw = statistics.median(wall[names[1]]) - statistics.median(wall[names[0]])
    dc = statistics.median(cpu[names[1]]) - statistics.median(cpu[names[0]])
    print(f"  {'difference':<20} {dw:+13.1f} µs {dc:+13.1f} µs  per span")


def _receiver() -> tuple[Any, str, list[int]]:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sizes: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            sizes.append(len(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", sizes


def bench_export(rounds: int) -> None:
    if not TAU.is_file():
        print(f"export: skipped, {TAU} is absent")
        return
    from hbeval.export import ExportSummary, build_trace_request, export_otlp, load_run

    store = open_store(":memory:")
    run_id = import_recordings("tau-bench", [TAU], store=store).run_id
    report, trials = load_run(run_id, store)
    server, url, sizes = _receiver()
    builds, sends = [], []
    spans = 0
    try:
        for _ in range(rounds):
            summary = ExportSummary(run_id=run_id)
            t0 = time.perf_counter()
            build_trace_request(report, trials, summary).SerializeToString()
            builds.append(time.perf_counter() - t0)
            spans = summary.spans
            sizes.clear()
            t0 = time.perf_counter()
            export_otlp(run_id, endpoint=url, store=store)
            sends.append(time.perf_counter() - t0)
    finally:
        server.shutdown()
        store.close()
    print(f"export of the imported run: {len(trials)} trials, {spans} spans, {rounds} rounds")
    for label, times in (("build spans", builds), ("full export", sends)):
        med = statistics.median(times)
        print(f"  {label:<15} {med:7.3f} s  {spans / med:10.0f} spans/s")
    print(f"  sent {sum(sizes)} bytes in {len(sizes)} requests (traces and metrics)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spans", type=int, default=2000)
    args = parser.parse_args()
    bench_import(args.rounds)
    bench_processor(args.rounds, args.spans)
    bench_export(args.rounds)


if __name__ == "__main__":
    main()
