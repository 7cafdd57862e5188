"""`hbeval score` on a large JSONL trace vs bare parser loops over the same file, side by side.

Writes an N-event hb-events/1 trace (model_start, model_end with a tool call, tool_start,
tool_end per step; every fifth call faulted), then, interleaved, times:
  json.loads loop : for line in file: json.loads(line)              (the anchor without msgspec)
  orjson loop     : for line in file (bytes): orjson.loads(line)
  msgspec loop (dicts)   : for line in file (bytes): msgspec.json.Decoder().decode(line)
  msgspec loop (structs) : for line in file (bytes): decode(line) into hbeval's own validated
                    struct twins (the parser ``hbeval score`` uses; the fastest loop here)
  hbeval score    : `hbeval score`'s whole path without printing (cli.score_trace: the fast
                    reader, derivation, the monitor, the summary); with msgspec installed
                    (`hbeval[all]`) the reader is msgspec's
  score, pydantic : the same path with the reader used without msgspec (pydantic-core's
                    parse-and-validate into dicts), to compare with the json.loads loop
  model path      : read_events (a pydantic model per event) -> Monitor.observe -> summary,
                    the validated path the fast reader must match
Inside the clock, for every path: opening the file and reading it to its end, with the cyclic
garbage collector off (a full collection just before): ``hbeval score`` pauses the collector
while it folds a file, so every anchor loop runs with it paused too. Times are this thread's
CPU time (other processes' load does not count); wall time is printed too. Ratios are the
median over rounds of each round's ratio, with a 95% bootstrap interval over rounds. Goals:
``hbeval score`` at most 1.5x the fastest per-line parser loop; the reader without msgspec at
most 1.3x the json.loads loop. Then the peak RSS of a scoring subprocess.

Each path is first run once on a small trace, and that first call's CPU time printed apart: it
holds the imports and one-time set-up (hbeval's CLI, monitor and event models, the struct
twins; about 0.3 s), which `bench_cli_startup.py` measures as start-up, and which would
otherwise land in one of the timed repeats and, with three repeats, move their median.

With ``--stages`` it prints instead where the time of ``hbeval score`` goes, per event (CPU,
interleaved, medians), each stage adding one part of the path to the one before:
  orjson loop          : the anchor
  msgspec per line     : for line in file: decode(line) into the validated struct twins
  msgspec blocks       : the same structs, a block of lines per decode call (struct_chunks, as
                         hbeval score reads a file)
  + derive             : the scoring loop (live._scoreloop.fold_structs), steps dropped
  + fold               : the same, steps folded into a Monitor (fold_trace)
  + summary            : hbeval score's whole path (cli.score_trace)
and the same for the reader without msgspec (pydantic-core into dicts, fold_dicts).

    .venv/bin/python benchmarks/bench_score.py [--events N] [--repeats R] [--stages]
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

from _table import Row, bootstrap, median_ratio


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
    """Wall-clock and thread CPU seconds of ``fn(path)``, every path with the cyclic collector
    off (a full collection first): ``hbeval score`` pauses it while it folds, so each anchor
    loop runs with it paused too (equal collector state)."""
    gc.collect()
    gc.disable()
    try:
        t0, c0 = time.perf_counter(), time.thread_time()
        fn(path)
        return time.perf_counter() - t0, time.thread_time() - c0
    finally:
        gc.enable()


def bare(path: Path) -> None:
    loads = json.loads
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            loads(line)


def orjson_loop(path: Path) -> None:
    import orjson

    loads = orjson.loads
    with path.open("rb") as fh:
        for line in fh:
            loads(line)


def msgspec_loop(path: Path) -> None:
    """msgspec's JSON decoder per line into plain dicts and lists."""
    import msgspec

    loads = msgspec.json.Decoder().decode
    with path.open("rb") as fh:
        for line in fh:
            loads(line)


def msgspec_struct_loop(path: Path) -> None:
    """msgspec per line into hbeval's own validated struct twins (the parser hbeval uses)."""
    from hbeval_core.events._structs import struct_decoder

    decode = struct_decoder().decode
    with path.open("rb") as fh:
        for line in fh:
            try:
                decode(line)
            except ValueError:  # the header line is no event
                pass


def ours(path: Path) -> None:
    from hbeval_core.live._document import score_trace

    score_trace(path, label=str(path))


def ours_pydantic(path: Path) -> None:
    from hbeval_core.live._trace import fold_trace
    from hbeval_core.live.monitor import Monitor

    fold_trace(path, Monitor(), structs=False).summary()


def model_path(path: Path) -> None:
    from hbeval_core.events import read_events
    from hbeval_core.live.monitor import Monitor

    m = Monitor()
    observe = m.observe
    for ev in read_events(path):
        observe(ev)
    m.summary()


def stage_runs() -> dict[str, Callable[[Path], object]]:
    """The cumulative stages of ``--stages`` (module docstring), for both readers."""
    from hbeval_core.events._fast import line_blocks, twin_adapter
    from hbeval_core.events._structs import struct_chunks, struct_decoder, struct_types
    from hbeval_core.live._scoreloop import fold_dicts, fold_structs
    from hbeval_core.live._trace import fold_trace
    from hbeval_core.live.derive import Deriver
    from hbeval_core.live.monitor import Monitor

    runs: dict[str, Callable[[Path], object]] = {"orjson loop": orjson_loop}
    validate = twin_adapter().validator.validate_json

    def parse(decode: Callable[[bytes], object]) -> Callable[[Path], object]:
        def run(path: Path) -> None:
            with path.open("rb") as fh:
                for line in fh:
                    try:
                        decode(line)
                    except ValueError:
                        pass

        return run

    def derive(structs: bool) -> Callable[[Path], object]:
        def run(path: Path) -> None:
            deriver = Deriver()
            deriver._as_tuples = True
            with path.open("rb") as fh:
                if structs:
                    types = struct_types()
                    assert types is not None
                    chunks = struct_chunks(iter(fh), 0, fh)
                    fold_structs(chunks, deriver, types, lambda b: None, [], 512)
                else:
                    blocks = line_blocks(iter(fh), fh)
                    fold_dicts(blocks, 0, deriver, validate, lambda b: None, [], 512)

        return run

    def fold(structs: bool) -> Callable[[Path], object]:
        return lambda path: fold_trace(path, Monitor(), structs=structs)

    def blocks(path: Path) -> None:
        with path.open("rb") as fh:
            for _ in struct_chunks(iter(fh), 0, fh):
                pass

    decoder = struct_decoder()
    if decoder is not None:
        runs["msgspec per line"] = parse(decoder.decode)
        runs["msgspec blocks"] = blocks
        runs["+ derive"] = derive(True)
        runs["+ fold"] = fold(True)
        runs["+ summary"] = ours
    runs["json.loads loop"] = bare
    runs["pydantic parse"] = parse(validate)
    runs["+ derive (dicts)"] = derive(False)
    runs["+ fold (dicts)"] = fold(False)
    runs["+ summary (dicts)"] = ours_pydantic
    return runs


def warm_up(runs: dict[str, Callable[[Path], object]], tmp: Path) -> None:
    """Run each path once on a small trace: imports and one-time set-up, printed, not timed."""
    small = tmp / "warm-up.jsonl"
    write_trace(small, 2_000)
    first = {name: timed(fn, small)[1] for name, fn in runs.items()}
    print("first call on 2,000 events (imports, one-time set-up; not in the timings), CPU ms:")
    print("  " + ", ".join(f"{name} {ms * 1e3:.0f}" for name, ms in first.items()))


def stages(path: Path, n_events: int, repeats: int) -> None:
    runs = stage_runs()
    warm_up(runs, path.parent)
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            cpu[name].append(timed(fn, path)[1])
    mc = {name: statistics.median(v) for name, v in cpu.items()}
    print(f"{'stage':20}{'us/event':>10}{'/orjson':>9}{'/json.loads':>12}")
    for name in runs:
        us = mc[name] / n_events * 1e6
        rel = f"{mc[name] / mc['orjson loop']:8.2f}x{mc[name] / mc['json.loads loop']:11.2f}x"
        print(f"{name:20}{us:10.3f}{rel}")


ANCHORS = {
    "json.loads loop": bare,
    "orjson loop": orjson_loop,
    "msgspec loop (dicts)": msgspec_loop,
    "msgspec loop (hbeval's structs)": msgspec_struct_loop,
}


def headline(n_events: int, rounds: int, *, pydantic: bool = False) -> list[Row]:
    """The table's rows: ``hbeval score`` against the fastest per-line parser loop (and, with
    ``pydantic``, the reader without msgspec against the json.loads loop), interleaved rounds,
    thread CPU time, the collector off for every path."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        write_trace(path, n_events)
        runs: dict[str, Callable[[Path], object]] = {**ANCHORS, "hbeval score": ours}
        if pydantic:
            runs["score, pydantic"] = ours_pydantic
        else:
            del runs["json.loads loop"]
        small = Path(tmp) / "warm-up.jsonl"
        write_trace(small, 2_000)
        for fn in runs.values():
            timed(fn, small)
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for r in range(rounds):
            names = list(runs)
            for name in names[r % len(names) :] + names[: r % len(names)]:
                cpu[name].append(timed(runs[name], path)[1])
        why = stage_note(path, n_events, cpu)
    inside = (
        f"reading a {n_events:,}-event file line by line: parse only (anchor) / parse, "
        "validate, derive, fold, summary (hbeval); collector off for both; thread CPU"
    )
    anchors = [a for a in ANCHORS if a in cpu]
    fastest = min(anchors, key=lambda a: statistics.median(cpu[a]))
    rows = []
    for anchor in anchors:
        point, lo, hi = bootstrap([cpu["hbeval score"], cpu[anchor]], median_ratio)
        goal = 1.5 if anchor == fastest else None
        rows.append(
            Row("hbeval score", anchor + (" (fastest)" if goal else ""), inside, point, lo, hi,
                "x", goal, why=why)
        )  # fmt: skip
    if pydantic:
        point, lo, hi = bootstrap([cpu["score, pydantic"], cpu["json.loads loop"]], median_ratio)
        rows.append(
            Row("hbeval score, reader without msgspec", "json.loads loop", inside, point, lo, hi,
                "x", 1.3)
        )  # fmt: skip
    return rows


def stage_note(path: Path, n_events: int, cpu: dict[str, list[float]]) -> str:
    """Where ``hbeval score``'s time goes, per event (one pass of each ``--stages`` step)."""
    stages = stage_runs()
    keys = ("msgspec blocks", "+ derive", "+ fold")
    if not all(k in stages for k in keys):
        return ""
    us = {k: timed(stages[k], path)[1] / n_events * 1e6 for k in keys}
    total = statistics.median(cpu["hbeval score"]) / n_events * 1e6
    anchor = statistics.median(cpu["msgspec loop (hbeval's structs)"]) / n_events * 1e6
    return (
        f"Per event (CPU): the anchor parses into hbeval's structs in {anchor:.2f} us; "
        f"hbeval score takes {total:.2f} us: block decoding {us['msgspec blocks']:.2f}, "
        f"derivation +{us['+ derive'] - us['msgspec blocks']:.2f} (linking each call to the "
        "model output that issued it: a table of every issued call id, kept for the run), "
        f"the monitor's fold +{us['+ fold'] - us['+ derive']:.2f}, the summary "
        f"{total - us['+ fold']:+.2f}. 1.5x the anchor leaves {0.5 * anchor:.2f} us for all "
        "that is not parsing."
    )


RSS_CODE = """
import resource, sys
from hbeval_core.live._document import score_trace
doc = score_trace(sys.argv[1], label="trace")
print(doc["step_count"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--stages", action="store_true", help="where the time goes, per stage")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        write_trace(path, args.events)
        size = os.path.getsize(path)
        print(f"trace: {args.events:,} events, {size / 1e6:.1f} MB")
        if args.stages:
            stages(path, args.events, args.repeats)
            return
        runs: dict[str, Callable[[Path], object]] = {"json.loads loop": bare}
        try:
            import orjson  # noqa: F401

            runs["orjson loop"] = orjson_loop
            runs["msgspec loop (dicts)"] = msgspec_loop
            runs["msgspec loop (structs)"] = msgspec_struct_loop
        except ImportError:
            print("orjson not installed: no orjson anchor (pip install 'hbeval[all]')")
        runs["hbeval score"] = ours
        runs["score, pydantic"] = ours_pydantic
        runs["model path"] = model_path
        warm_up(runs, Path(tmp))
        wall: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeats):  # interleaved, so drift hits all alike
            for name, fn in runs.items():
                w, c = timed(fn, path)
                wall[name].append(w)
                cpu[name].append(c)
        mw = {name: statistics.median(v) for name, v in wall.items()}
        mc = {name: statistics.median(v) for name, v in cpu.items()}
        print(f"{'':24}{'wall s':>8}{'CPU s':>8}{'M ev/s':>8}")
        for name in runs:
            print(f"{name:24}{mw[name]:8.2f}{mc[name]:8.2f}{args.events / mc[name] / 1e6:8.2f}")
        print("CPU ratios, median of per-round ratios [95% bootstrap interval over rounds]:")
        for ours_name, anchor in (
            ("hbeval score", "orjson loop"),
            ("hbeval score", "msgspec loop (dicts)"),
            ("hbeval score", "msgspec loop (structs)"),
            ("score, pydantic", "json.loads loop"),
            ("model path", "json.loads loop"),
        ):
            if ours_name in cpu and anchor in cpu:
                point, lo, hi = bootstrap([cpu[ours_name], cpu[anchor]], median_ratio)
                print(f"  {ours_name} / {anchor}: {point:.2f}x [{lo:.2f}, {hi:.2f}]")
        print(
            "goals: 'hbeval score' at most 1.5x the fastest per-line parser loop (msgspec or "
            "orjson); 'score, pydantic' at most 1.3x the json.loads loop"
        )
        proc = subprocess.run(
            [sys.executable, "-c", RSS_CODE, str(path)], capture_output=True, text=True, check=True
        )
        steps, rss_kb = proc.stdout.split()
        print(f"scoring subprocess   : {int(steps):,} steps, peak RSS {int(rss_kb) / 1024:.0f} MB")


if __name__ == "__main__":
    main()
