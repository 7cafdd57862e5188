"""What the run's shared rate limiter costs per model call, and how closely ``--rate-limit`` holds.

Part 1 times ``TrialContext.wait_for_model()`` (what every model call of a battery run does
first) side by side, interleaved in ``--rounds`` rounds of ``--calls`` calls each:

- none: a context with no limiter (what a model call cost before limits existed);
- local: the in-process ``RateLimiter`` (threads, async);
- ray: the ``RayLimiter`` proxy of the run's limiter actor on a two-node
  ``ray.cluster_utils.Cluster``, called from a Ray task on the other node (as a worker does).

It prints the median microseconds per call and each as a share of a 50 ms model call.

Part 2 runs a battery of a factory agent whose model call sleeps 50 ms with
``concurrency=8`` and ``rate_limit=--rpm``, and prints the model calls per minute it achieved
(from the stored ``model_start`` times) against the limit.

    .venv/bin/python benchmarks/bench_rate_limit.py [--rounds 5] [--calls 2000] [--rpm 600]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

from hbeval.runner import run_battery  # noqa: E402
from hbeval.runner.manifest import RunManifest  # noqa: E402
from hbeval.store import InMemoryStore  # noqa: E402
from hbeval_core.contract import RateLimiter, TrialContext  # noqa: E402
from hbeval_core.faults import Battery  # noqa: E402
from hbeval_core.vocab import MODEL_START  # noqa: E402

REF = f"{ROOT / 'benchmarks' / 'bench_scale_out.py'}:slow_agent"
MODEL_CALL_S = 0.05


def per_call_us(limiter: Any, calls: int) -> float:
    """Microseconds per ``wait_for_model`` + ``count_turn`` with ``limiter`` (None: no limiter)."""
    ctx = TrialContext(run_id="bench", trial_run_id="bench/t", trial_key="t", limiter=limiter)
    t0 = time.perf_counter()
    for _ in range(calls):
        ctx.count_turn()
    return (time.perf_counter() - t0) / calls * 1e6


def part1(args: argparse.Namespace) -> None:
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from hbeval.runner._ray_control import RayLimiter, start_limiter

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    other = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        actor = start_limiter(ray, "bench-limits", None, 120.0)  # kept: its handle keeps it alive
        remote_timer = ray.remote(num_cpus=0.25)(per_call_us).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(other.node_id, soft=False)
        )
        ray.get(remote_timer.remote(RayLimiter("bench-limits"), 10))  # worker start-up
        figures: dict[str, list[float]] = {"none": [], "local": [], "ray": []}
        for _ in range(args.rounds):
            figures["none"].append(per_call_us(None, args.calls))
            figures["local"].append(per_call_us(RateLimiter(), args.calls))
            calls = max(50, args.calls // 10)  # an RPC each: fewer calls, same median
            figures["ray"].append(ray.get(remote_timer.remote(RayLimiter("bench-limits"), calls)))
        ray.kill(actor)
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(f"load average {os.getloadavg()[0]:.2f}  rounds {args.rounds}")
    print(f"{'limiter':<8} {'us/call (median)':>17} {'of a 50 ms call':>16} {'vs none':>9}")
    base = statistics.median(figures["none"])
    for name, values in figures.items():
        med = statistics.median(values)
        print(
            f"{name:<8} {med:>17.1f} {med / (MODEL_CALL_S * 1e6):>15.3%} "
            f"{med / base if base else float('nan'):>8.1f}x"
        )


def part2(args: argparse.Namespace) -> None:
    from hbeval.runner.loader import load_object

    store = InMemoryStore()
    t0 = time.perf_counter()
    report = run_battery(
        None,
        load_object(REF),
        load_object(f"{ROOT / 'benchmarks' / 'bench_scale_out.py'}:tasks"),
        Battery.hbeval(n_scenarios=6, seed=42),
        trials=2,
        seed=42,
        store=store,
        concurrency=8,
        rate_limit=args.rpm,
        manifest=RunManifest(target=REF),
    )
    wall = time.perf_counter() - t0
    run_id = report["run"]["run_id"]
    starts = sorted(
        e.ts
        for t in store.list_trials(run_id)
        for e in store.iter_events(run_id, t.trial_key)
        if e.kind == MODEL_START
    )
    span = starts[-1] - starts[0]
    achieved = (len(starts) - 1) / span * 60.0 if span > 0 else float("nan")
    print(
        f"--rate-limit {args.rpm:g}: {len(starts)} model calls over {span:.2f} s "
        f"= {achieved:.0f} a minute ({achieved / args.rpm:.3f} of the limit); run {wall:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rpm", type=float, default=600.0)
    args = parser.parse_args()
    part1(args)
    part2(args)


if __name__ == "__main__":
    main()
