"""Import cost of `from hbeval_core import Monitor` beyond the interpreter's own start, and
(``--spans N``) the time and peak RSS of importing an OTLP/JSON-lines recording of N spans.

Interleaves fresh interpreters running `pass`, our import, and the reference SDK's monitor module
import, and prints medians and the differences. With ``--spans`` it writes a recording of N spans
(traces of 10: a root, four model calls and four tool calls, one request per line) and runs, each
in a fresh interpreter, reading its spans (``_otlp.spans_of``), reading its trials and the whole
``import_recordings`` into a new SQLite file, printing seconds and peak RSS of each.

    .venv/bin/python benchmarks/bench_import.py [--runs N]
    .venv/bin/python benchmarks/bench_import.py --spans 1000000
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CASES = {
    "python -c pass": "pass",
    "from hbeval_core import Monitor": "from hbeval_core import Monitor",
    "reference: import hb_eval_sdk.monitoring": "import hb_eval_sdk.monitoring",
}


def once(code: str) -> float | None:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    dt = time.perf_counter() - t0
    return dt if proc.returncode == 0 else None


def _kv(key: str, value: str | int) -> dict[str, Any]:
    typed = {"stringValue": value} if isinstance(value, str) else {"intValue": str(value)}
    return {"key": key, "value": typed}


def _trace_spans(t: int) -> list[dict[str, Any]]:
    tid, root, t0 = f"{t:032x}", f"{t:014x}00", 1_700_000_000_000_000_000
    spans: list[dict[str, Any]] = []
    for i in range(4):
        call = f"c{t}-{i}"
        reply = [{"role": "assistant", "parts": [{"type": "tool_call", "id": call,
                  "name": "lookup", "arguments": {"q": f"item {i}"}}]}]  # fmt: skip
        at = t0 + i * 100_000_000
        spans.append({
            "traceId": tid, "spanId": f"{t:014x}{2 * i + 1:02x}", "parentSpanId": root,
            "name": "chat model", "startTimeUnixNano": str(at),
            "endTimeUnixNano": str(at + 10_000_000), "status": {"code": 1},
            "attributes": [_kv("gen_ai.operation.name", "chat"),
                           _kv("gen_ai.usage.input_tokens", 120),
                           _kv("gen_ai.usage.output_tokens", 30),
                           _kv("gen_ai.output.messages", json.dumps(reply))],
        })  # fmt: skip
        spans.append({
            "traceId": tid, "spanId": f"{t:014x}{2 * i + 2:02x}", "parentSpanId": root,
            "name": "execute_tool lookup", "startTimeUnixNano": str(at + 20_000_000),
            "endTimeUnixNano": str(at + 30_000_000), "status": {"code": 1},
            "attributes": [_kv("gen_ai.operation.name", "execute_tool"),
                           _kv("gen_ai.tool.name", "lookup"), _kv("gen_ai.tool.call.id", call),
                           _kv("gen_ai.tool.call.result", f"in stock: {i}")],
        })  # fmt: skip
    spans.append({"traceId": tid, "spanId": root, "name": "agent", "status": {"code": 1},
                  "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t0 + 900_000_000)})  # fmt: skip
    return spans


def write_recording(path: Path, spans: int) -> None:
    """An OTLP/JSON-lines file of ``spans`` spans, one ``ExportTraceServiceRequest`` a line."""
    with path.open("w", encoding="utf-8") as fh:
        written, t = 0, 0
        while written < spans:
            for sp in _trace_spans(t)[: spans - written]:
                req = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [sp]}]}]}
                fh.write(json.dumps(req) + "\n")
                written += 1
            t += 1


_PHASES = {
    "read spans": "from hbeval.importers._otlp import spans_of\n"
    "n = len(spans_of(P, open(P, 'rb').read()))",
    "read trials": "from hbeval.importers import read_trials\nn = len(read_trials('otlp-json', [P]))",
    "whole import": "from hbeval.importers import import_recordings\nfrom hbeval.store import open_store\n"
    "n = import_recordings('otlp-json', [P], store=open_store(D)).trials",
}


def _phase(code: str, path: Path, db: Path) -> str:
    script = (
        "import resource, sys, time\n"
        f"P, D = {str(path)!r}, {str(db)!r}\n"
        "t0 = time.perf_counter()\n"
        f"{code}\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(f'{n:>9} {time.perf_counter() - t0:9.1f} s {rss:9.0f} MB')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else f"failed: {done.stderr[-300:]}"


def recording_import(spans: int) -> None:
    """Time and peak RSS of reading and importing an OTLP/JSON-lines file of ``spans`` spans."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spans.jsonl"
        write_recording(path, spans)
        print(f"{spans} spans, {path.stat().st_size / 1e6:.0f} MB of OTLP/JSON lines")
        print(f"{'phase':14s} {'count':>9} {'time':>11} {'peak RSS':>12}")
        for name, code in _PHASES.items():
            db = Path(tmp) / f"{name.replace(' ', '-')}.db"
            print(f"{name:14s} {_phase(code, path, db)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--spans", type=int, default=0, help="time an OTLP import of N spans instead")
    args = ap.parse_args()
    if args.spans:
        recording_import(args.spans)
        return
    samples: dict[str, list[float]] = {k: [] for k in CASES}
    for _ in range(args.runs):
        for name, code in CASES.items():
            dt = once(code)
            if dt is not None:
                samples[name].append(dt)
    base = statistics.median(samples["python -c pass"])
    for name, xs in samples.items():
        if not xs:
            print(f"{name:45s} unavailable")
            continue
        med = statistics.median(xs)
        print(f"{name:45s} {med * 1000:7.1f} ms   (+{(med - base) * 1000:6.1f} ms over bare start)")


if __name__ == "__main__":
    main()
