"""Import cost of `from hbeval_core import Monitor` beyond the interpreter's own start.

Interleaves fresh interpreters running `pass`, our import, and the reference SDK's monitor module
import, and prints medians and the differences.

    .venv/bin/python benchmarks/bench_import.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
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
