"""Scaling out: trials per second by executor, and trial-bundle writes to PostgreSQL vs SQLite.

Part 1 runs one battery (``--scenarios`` x ``--trials``) of a factory agent whose model call
sleeps ``$HBEVAL_BENCH_DELAY`` seconds (0.05) (I/O-bound, as a real model is), side by side in one process:

- serial: ``run_battery`` with ``concurrency=1``;
- threads: ``run_battery`` with ``concurrency=8``;
- async: ``await arun_battery(..., concurrency=8)``;
- ray: ``run_battery(executor="ray")`` on a two-node ``ray.cluster_utils.Cluster`` (one CPU
  each, a quarter CPU per trial: 8 trials at once), after a warm-up battery that starts the
  workers (worker start-up is a one-off cost of a cluster, not of a trial).

Every run must give the same figures (checked), and the table prints trials/s and the speed-up
over serial. Part 2 writes ``--bundles`` finished trials (one attempt, ``--events`` events, the
trial, its metrics) with ``record_trial_bundle`` into a SQLite file and into PostgreSQL (the
server at ``$HBEVAL_TEST_POSTGRES_URL``, else one started with ``scripts/postgres-server.sh``),
interleaved in rounds, and prints bundles/s of each and the ratio.

    HBEVAL_BENCH_DELAY=0.05 .venv/bin/python benchmarks/bench_scale_out.py [--scenarios 18]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

from hbeval.runner import arun_battery, load_object, run_battery  # noqa: E402
from hbeval.runner.manifest import RunManifest  # noqa: E402
from hbeval.store import (  # noqa: E402
    AttemptRecord,
    InMemoryStore,
    RunRecord,
    TrialRecord,
    make_trial_key,
    open_store,
)
from hbeval_core.events import ModelEnd, ToolCall, ToolEnd, ToolStart, Usage  # noqa: E402
from hbeval_core.faults import Battery  # noqa: E402
from hbeval_plain.examples import CarefulAgent, tasks  # noqa: E402

REF = f"{ROOT / 'benchmarks' / 'bench_scale_out.py'}:slow_agent"
DELAY = float(os.environ.get("HBEVAL_BENCH_DELAY", "0.05"))


class SlowAgent(CarefulAgent):
    """The packaged careful support agent; its model call waits ``DELAY`` seconds."""

    def __call__(self, question: str) -> dict[str, Any]:
        time.sleep(DELAY)
        return super().__call__(question)


def slow_agent() -> SlowAgent:
    """A factory: a fresh agent per trial."""
    return SlowAgent()


# ------------------------------------------------------------------------------ part 1
def figures(report: dict[str, Any]) -> Any:
    return report["metrics"], [(t["trial_key"], t["outcome"]) for t in report["trials"]]


def part1(args: argparse.Namespace) -> None:
    target = load_object(REF, base_dir=ROOT)  # the reference the Ray workers load

    def battery() -> Battery:
        return Battery.hbeval(n_scenarios=args.scenarios, seed=42)

    def timed(label: str, **kw: Any) -> tuple[str, float, Any]:
        t0 = time.perf_counter()
        report = run_battery(
            None,
            target,
            tasks,
            battery(),
            trials=args.trials,
            seed=42,
            store=kw.pop("store", None) or InMemoryStore(),
            manifest=RunManifest(target=REF),
            **kw,
        )
        return label, time.perf_counter() - t0, figures(report)

    async def run_async() -> tuple[str, float, Any]:
        t0 = time.perf_counter()
        report = await arun_battery(
            None,
            target,
            tasks,
            battery(),
            trials=args.trials,
            seed=42,
            store=InMemoryStore(),
            manifest=RunManifest(target=REF),
            concurrency=8,
        )
        return "async, limit 8", time.perf_counter() - t0, figures(report)

    rows = [timed("serial", concurrency=1), timed("threads, --concurrency 8", concurrency=8)]
    rows.append(asyncio.run(run_async()))
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        timed("warm-up", executor="ray")  # starts the worker processes on both nodes
        rows.append(timed("ray, 2 nodes x 1 CPU", executor="ray"))
    finally:
        ray.shutdown()
        cluster.shutdown()
    trials = args.scenarios * args.trials
    base = rows[0][1]
    print(f"\n{trials} trials, model call {DELAY * 1000:.0f} ms, load {os.getloadavg()[0]:.1f}")
    print(f"{'executor':28} {'seconds':>8} {'trials/s':>9} {'vs serial':>9}")
    for label, seconds, _ in rows:
        print(f"{label:28} {seconds:8.2f} {trials / seconds:9.1f} {base / seconds:8.1f}x")
    same = all(r[2] == rows[0][2] for r in rows)
    print(f"same figures and outcomes in every run: {same}")


# ------------------------------------------------------------------------------ part 2
def bundle(run_id: str, i: int, n_events: int) -> tuple[Any, ...]:
    key = make_trial_key(i, 0)
    events: list[Any] = []
    for j in range(n_events // 3):
        call = f"c{j}"
        events.append(
            ModelEnd(
                run_id=f"{run_id}/{key}",
                call_id=f"m{j}",
                text="checking",
                tool_calls=[ToolCall(id=call, name="search", args={"q": j})],
                usage=Usage(input_tokens=10, output_tokens=2),
            )
        )
        events.append(ToolStart(run_id=f"{run_id}/{key}", call_id=call, tool="search"))
        events.append(
            ToolEnd(run_id=f"{run_id}/{key}", call_id=call, tool="search", result={"hits": [j]})
        )
    trial = TrialRecord(
        run_id=run_id,
        trial_key=key,
        task_id="t",
        scenario_index=i,
        trial_index=0,
        outcome="pass",
        verdict={"passed": True},
        latency_ms=12.5,
    )
    attempt = AttemptRecord(run_id=run_id, trial_key=key, attempt=0, outcome="pass")
    return trial, [attempt], {0: events}


def write_rate(store: Any, n: int, n_events: int) -> float:
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    store.start_run(
        RunRecord(run_id=run_id, agent_id="a", battery="b", measurement_fingerprint="fp")
    )
    bundles = [bundle(run_id, i, n_events) for i in range(n)]
    t0 = time.perf_counter()
    for trial, attempts, events in bundles:
        store.record_trial_bundle(
            trial,
            attempts,
            events,
            metrics={"pei": 0.5, "frr": None},
            undefined={"frr": "no_fault_observed"},
        )
    return n / (time.perf_counter() - t0)


def part2(args: argparse.Namespace) -> None:
    url = os.environ.get("HBEVAL_TEST_POSTGRES_URL")
    folder = None
    if not url:
        folder = tempfile.mktemp(prefix="hbeval-bench-pg-")
        url = subprocess.run(
            ["bash", str(ROOT / "scripts" / "postgres-server.sh"), "start", folder],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite_store = open_store(Path(tmp) / "bench.db")
            pg_store = open_store(url)
            rates: dict[str, list[float]] = {"sqlite": [], "postgres": []}
            for _ in range(args.rounds):
                rates["sqlite"].append(write_rate(sqlite_store, args.bundles, args.events))
                rates["postgres"].append(write_rate(pg_store, args.bundles, args.events))
            sqlite_store.close()
            pg_store.close()
    finally:
        if folder is not None:
            subprocess.run(["bash", str(ROOT / "scripts" / "postgres-server.sh"), "stop", folder])
    sq, pg = statistics.median(rates["sqlite"]), statistics.median(rates["postgres"])
    print(
        f"\ntrial bundles ({args.events} events each), median of {args.rounds} interleaved rounds"
    )
    print(f"{'store':10} {'bundles/s':>10}")
    print(f"{'sqlite':10} {sq:10.0f}")
    print(f"{'postgres':10} {pg:10.0f}")
    print(f"postgres / sqlite: {pg / sq:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, default=18)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--bundles", type=int, default=200)
    parser.add_argument("--events", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-executors", action="store_true")
    args = parser.parse_args()
    if not args.skip_executors:
        part1(args)
    part2(args)


if __name__ == "__main__":
    main()
