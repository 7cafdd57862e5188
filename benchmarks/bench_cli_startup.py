"""Start-up of the ``hbeval`` command beside a bare interpreter, measured side by side.

Each round starts one fresh process per case, in a rotating order so drift and load hit every
case alike: bare ``python -c pass`` (the anchor), ``import typer`` (the floor any typer command
pays), then ``hbeval --version``, ``--help`` and several subcommands' ``--help``, and three
commands that print a document (``schema events``, ``schema report``, ``battery spec --json``).
Printed per case: the median wall time with its interquartile range, the median of the
per-round differences to the bare interpreter, and whether that difference is within the goal
(150 ms).

    .venv/bin/python benchmarks/bench_cli_startup.py [--rounds 21]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_MS = 150.0


def hbeval_command() -> list[str]:
    """The installed console script beside this interpreter, else the same entry point."""
    script = Path(sys.executable).with_name("hbeval")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from hbeval.cli import main; main()"]


def cases() -> dict[str, list[str]]:
    hb = hbeval_command()
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import typer'": [sys.executable, "-c", "import typer"],
        "hbeval --version": [*hb, "--version"],
        "hbeval --help": [*hb, "--help"],
        "hbeval score --help": [*hb, "score", "--help"],
        "hbeval report --help": [*hb, "report", "--help"],
        "hbeval battery run --help": [*hb, "battery", "run", "--help"],
        "hbeval memory list --help": [*hb, "memory", "list", "--help"],
        "hbeval passport verify --help": [*hb, "passport", "verify", "--help"],
        "hbeval schema events": [*hb, "schema", "events"],
        "hbeval schema report": [*hb, "schema", "report"],
        "hbeval battery spec --json": [*hb, "battery", "spec", "--json"],
    }


def once(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-400:]!r}")
    return elapsed


def quartiles(xs: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args()
    env = {
        **os.environ,
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
    }
    table = cases()
    names = list(table)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for name in names:  # warm the file cache once, untimed
        once(table[name], env)
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            samples[name].append(once(table[name], env))
    bare = samples["python -c pass"]
    print(f"{args.rounds} interleaved rounds; anchor: python -c pass; goal: <= +{GOAL_MS:.0f} ms")
    print(
        f"{'case':34s} {'median ms':>10s} {'IQR ms':>15s} {'over bare ms':>13s} {'ratio':>6s}  goal"
    )
    for name in names:
        xs = samples[name]
        med = statistics.median(xs)
        lo, hi = quartiles(xs)
        diff = statistics.median(x - b for x, b in zip(xs, bare, strict=True)) * 1000
        ratio = med / statistics.median(bare)
        verdict = "" if name.startswith("python") else ("ok" if diff <= GOAL_MS else "MISSED")
        print(
            f"{name:34s} {med * 1000:10.1f} {f'{lo * 1000:.0f}-{hi * 1000:.0f}':>15s} "
            f"{diff:+13.1f} {ratio:6.2f}  {verdict}"
        )


if __name__ == "__main__":
    main()
