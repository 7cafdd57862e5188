"""Every headline speed figure of hbeval beside its anchor, printed as one table.

Runs the headline part of each benchmark in this process, one after another (interleaved
rounds within each), and prints one Markdown table: the figure, its anchor, what is inside
the clock, the value with its 95% bootstrap interval over rounds (or over queries and batches
where stated), the goal, and whether the interval meets it (``yes``: the whole interval is on
the goal's side; ``no``: all of it is on the other side; ``unresolved``: the interval straddles
the goal). Below the table, for each row not met, what blocks it and where the time goes.

Modes (the default is what benchmarks/README.md's table is measured with; about four minutes
on the 2-core machine when nothing else runs):

* ``--smoke``: tiny sizes, seconds; checks the table is produced (``tests/test_bench_run_all.py``),
  its figures mean nothing;
* ``--quick``: small sizes, about a minute; figures indicative, intervals wide;
* default: the table's sizes;
* ``--full``: larger sizes and more rounds (1M-event trace, the reader without msgspec, the
  runner at twice the trials), about ten minutes.

``--callgrind`` adds instruction counts of the LangGraph variants (valgrind's callgrind, one
process per variant; the reads inside the counted region, as inside the clock), which resolve
differences that CPU time on a shared machine cannot, and of one EDM ``admit_many`` of 1,000
episodes (thousands of instructions per episode). ``--json FILE`` writes the rows too.

    .venv/bin/python benchmarks/run_all.py [--smoke | --quick | --full] [--callgrind] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _table import Row, markdown, notes  # noqa: E402

# Per mode, the arguments each benchmark's headline() is called with.
MODES: dict[str, dict[str, dict[str, object]]] = {
    "smoke": {
        "langgraph": {"rounds": 3, "warmup": 1},
        "score": {"n_events": 3_000, "rounds": 2},
        "ingest": {"n_events": 2_000, "rounds": 2, "bundle_trials": 20},
        "runner": {"rounds": 2, "scenarios": 6, "trials": 1},
        "edm": {"size": 2_000, "n_queries": 100},
    },
    "quick": {
        "langgraph": {"rounds": 30},
        "score": {"n_events": 100_000, "rounds": 5},
        "ingest": {"n_events": 20_000, "rounds": 4, "bundle_trials": 200},
        "runner": {"rounds": 3},
        "edm": {"size": 20_000, "n_queries": 2_000},
    },
    "default": {
        "langgraph": {"rounds": 120},
        "score": {"n_events": 300_000, "rounds": 7},
        "ingest": {"n_events": 30_000, "rounds": 6, "bundle_trials": 300},
        "runner": {"rounds": 8},
        "edm": {"size": 100_000, "n_queries": 3_000},
    },
    "full": {
        "langgraph": {"rounds": 400},
        "score": {"n_events": 1_000_000, "rounds": 15, "pydantic": True},
        "ingest": {"n_events": 200_000, "rounds": 9},
        "runner": {"rounds": 10},
        "runner x2": {"rounds": 10, "trials": 10},
        "edm": {"size": 100_000, "n_queries": 5_000},
    },
}

CALLGRIND_VARIANTS = (
    "bare", "noop-same", "hbeval-read", "hbeval-live", "openinference", "edm-admission",
)  # fmt: skip


def _benchmarks() -> dict[str, Callable[..., list[Row]]]:
    """Each benchmark's headline, imported when run (LangGraph and faiss load on first use)."""

    def langgraph(**kw: object) -> list[Row]:
        import bench_langgraph_overhead

        return bench_langgraph_overhead.headline(**kw)  # type: ignore[arg-type]

    def score(**kw: object) -> list[Row]:
        import bench_score

        return bench_score.headline(**kw)  # type: ignore[arg-type]

    def ingest(**kw: object) -> list[Row]:
        import bench_store_ingest

        return bench_store_ingest.headline(**kw)  # type: ignore[arg-type]

    def runner(**kw: object) -> list[Row]:
        import bench_runner

        return bench_runner.headline(**kw)  # type: ignore[arg-type]

    def edm(**kw: object) -> list[Row]:
        import bench_edm

        return bench_edm.headline(**kw)  # type: ignore[arg-type]

    return {
        "langgraph": langgraph,
        "score": score,
        "ingest": ingest,
        "runner": runner,
        "runner x2": runner,
        "edm": edm,
    }


ADMISSION_EPISODES = 1_000
"""Episodes of the one ``admit_many`` call counted under callgrind (``bench_edm.py
--marked-admission``)."""


def instructions(variant: str, rounds: int = 10) -> float | None:
    """Millions of instructions per run of one LangGraph variant under callgrind, or, for the
    variant ``edm-admission``, per ``ADMISSION_EPISODES`` episodes admitted (None when valgrind
    is missing or the run failed)."""
    if shutil.which("valgrind") is None:
        return None
    if variant == "edm-admission":
        script = ["bench_edm.py", "--marked-admission", str(ADMISSION_EPISODES)]
        rounds = 1
    else:
        script = ["bench_langgraph_overhead.py", "--marked", variant, "--rounds", str(rounds),
                  "--warmup", "2"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p",
            "--zero-before=getppid", "--dump-before=getpgrp",
            sys.executable, str(HERE / script[0]), *script[1:],
        ]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            return None
        dumps = sorted(Path(tmp).glob("cg.out.*.1"))
        if not dumps:
            return None
        m = re.search(r"^summary:\s+(\d+)", dumps[0].read_text(), re.MULTILINE)
        return int(m.group(1)) / rounds / 1e6 if m else None


def callgrind_rows() -> list[Row]:
    """Instruction counts (deterministic to about 0.5%: no interval from rounds)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:  # one valgrind process per core
        got = dict(zip(CALLGRIND_VARIANTS, pool.map(instructions, CALLGRIND_VARIANTS), strict=True))
    print(
        "instructions per run (M): "
        + ", ".join(f"{v} {m:.2f}" if m else f"{v} -" for v, m in got.items()),
        file=sys.stderr,
    )
    rows: list[Row] = []
    base, anchor = got.get("bare"), got.get("noop-same")
    inside = "callgrind instructions per run, read inside the counted region"
    for ours in ("hbeval-read", "hbeval-live"):
        value = got.get(ours)
        if value is not None and anchor:
            r = value / anchor
            rows.append(
                Row(f"LangGraph run, {ours}, instructions", "noop-same", inside,
                    r, r * 0.995, r * 1.005, "x", 1.05)
            )  # fmt: skip
    oi, read = got.get("openinference"), got.get("hbeval-read")
    if oi is not None and read is not None and base is not None and read > base:
        r = (oi - base) / (read - base)
        rows.append(
            Row("OpenInference / hbeval added over bare, instructions", "hbeval-read", inside,
                r, r * 0.99, r * 1.01, "x", 20.0, better="ge")
        )  # fmt: skip
    admission = got.get("edm-admission")
    if admission is not None:
        per = admission * 1e6 / ADMISSION_EPISODES / 1e3
        rows.append(
            Row("EDM admission, instructions per episode", "(absolute)",
                f"callgrind instructions of one admit_many of {ADMISSION_EPISODES:,} episodes "
                "(figures from each trace, rule, embedding, SQLite), divided by the episodes",
                per, per * 0.995, per * 1.005, "k", None)
        )  # fmt: skip
    return rows


def run(mode: str, *, callgrind: bool = False, only: list[str] | None = None) -> list[Row]:
    """All rows of ``mode`` (``only``: these benchmarks), printing progress to stderr."""
    benches = _benchmarks()
    rows: list[Row] = []
    for name, kwargs in MODES[mode].items():
        if only and name.split()[0] not in only:
            continue
        t = time.perf_counter()
        got = benches[name](**kwargs)
        if name == "runner x2":
            for row in got:
                row.figure += " (twice the trials)"
        rows += got
        print(f"[{name}: {time.perf_counter() - t:.1f} s]", file=sys.stderr, flush=True)
    if callgrind:
        t = time.perf_counter()
        rows += callgrind_rows()
        print(f"[callgrind: {time.perf_counter() - t:.1f} s]", file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    group = ap.add_mutually_exclusive_group()
    for mode in ("smoke", "quick", "full"):
        group.add_argument(f"--{mode}", action="store_const", const=mode, dest="mode")
    ap.add_argument(
        "--callgrind", action="store_true", help="instruction counts (LangGraph, EDM admission)"
    )
    ap.add_argument("--only", help="comma-separated: langgraph,score,ingest,runner,edm")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)
    mode = args.mode or "default"
    only = args.only.split(",") if args.only else None
    t = time.perf_counter()
    load = os.getloadavg()
    rows = run(mode, callgrind=args.callgrind, only=only)
    took = time.perf_counter() - t
    print(
        f"hbeval benchmarks, mode {mode}: {took:.0f} s; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average {load[0]:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )
    print()
    print(markdown(rows))
    why = notes(rows)
    if why:
        print()
        print(why)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) | {"met": r.met} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
