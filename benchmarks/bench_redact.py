"""Redaction time on adversarial text, 16 KB to 1 MB: every built-in shape grows linearly.

Each input is built to make a backtracking pattern work hardest where a key shape could start:
long runs of spaces after ``Authorization:``, a ``-----BEGIN PRIVATE KEY-----`` header repeated
with no end, key prefixes (``sk-``, ``ghp_``, ``AKIA``, ``eyJ``, ``xoxb-``) repeated back to
back, ``Bearer`` followed by spaces, quoted ``"api_key": "`` openings never closed. For each
input and size the median of ``--rounds`` runs of ``Redactor().redact_text`` is printed, with
the time per KB: a linear pattern keeps that figure flat as the size grows 64-fold (a
quadratic one multiplies it by 64). This is a benchmark, not a test: timings are not asserted.

    .venv/bin/python benchmarks/bench_redact.py [--rounds 5] [--max-kb 1024]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from hbeval.store import Redactor

ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "authorization + spaces": lambda n: "Authorization: " + " " * n + "x",
    "authorization quoted": lambda n: 'authorization="' + " " * n + "Bearer",
    "pem header, no end": lambda n: ("-----BEGIN RSA PRIVATE KEY-----\n" * (n // 32 + 1))[:n],
    "pem body, no end": lambda n: "-----BEGIN PRIVATE KEY-----\n" + "A" * n,
    "key prefixes": lambda n: ("sk-ghp_AKIAeyJxoxb-AIza" * (n // 23 + 1))[:n],
    "bearer + spaces": lambda n: "Bearer" + " " * n + "!",
    "unclosed json fields": lambda n: ('"api_key": "' * (n // 12 + 1))[:n],
    "assignments": lambda n: ("token=" * (n // 6 + 1))[:n],
}


def _median_seconds(redactor: Redactor, text: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        redactor.redact_text(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-kb", type=int, default=1024)
    args = parser.parse_args()
    redactor = Redactor()
    sizes = []
    kb = 16
    while kb <= args.max_kb:
        sizes.append(kb)
        kb *= 4
    print(
        f"{'input (ms; us per KB)':<24}"
        + "".join(f"{f'{s} KB':>20}" for s in sizes)
        + f"{'growth':>9}"
    )
    for name, build in ADVERSARIAL.items():
        cells, per_kb = [], []
        for size in sizes:
            seconds = _median_seconds(redactor, build(size * 1024), args.rounds)
            per_kb.append(seconds / size)
            cells.append(f"{seconds * 1e3:.2f} ({seconds / size * 1e6:.0f})")
        growth = per_kb[-1] / per_kb[0] if per_kb[0] > 0 else float("nan")
        print(f"{name:<24}" + "".join(f"{c:>20}" for c in cells) + f"{growth:>8.1f}x")
    print("growth: time per KB at the largest size over the smallest (1.0x is linear)")


if __name__ == "__main__":
    main()
