"""The runner's own cost per trial, printed beside the trial's own cost, measured in one run.

Workload: a scripted plain agent making 10 tool calls per trial, each announced by a ``think``
turn (what a traced agent does: ~45 events per trial), on a 60-scenario x 5-trial hbeval battery
(300 trials, every fault type). Side by side, in this process:

* **trial's own cost** -- the same agent called bare in a loop (no trial scope: ``@tool`` is the
  plain function and ``think`` a no-op);
* **through the runner** -- ``run_battery`` with a ``MemoryStore`` and with the SQLite store (a
  file in a temporary folder, every attempt, event batch, trial and metric set committed as the
  trial finishes);
* **breakdown** -- each stage timed alone on the same trials: the plain adapter's capture
  (events, fault injection), ``score_trial``, the store writes of one trial, ``build_report``;
  "runner bookkeeping" is what remains of the total (scheduling, contexts, ids, trial dicts).

Runner overhead per trial = (runner total - bare loop) / trials. Times are the best of
``--repeat`` runs, in CPU seconds (``time.process_time``: stable on a shared machine) and wall
seconds. The target is <= 0.5 ms per trial; this prints, it asserts nothing.

    .venv/bin/python benchmarks/bench_runner.py [--repeat 5] [--scenarios 60] [--trials 5]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hbeval_core.faults import Battery, FaultInjector, derive_trial_seed
from hbeval_core.runner.context import TrialContext, trial_context
from hbeval_core.runner.plain import PlainAdapter, ToolCallError, think, tool
from hbeval_core.runner.protocol import TrialResult
from hbeval_core.runner.run import VirtualClock, run_battery
from hbeval_core.runner.task import Task
from hbeval_core.scoring import build_report, score_trial
from hbeval_core.store import AttemptRecord, MemoryStore, RunRecord, SQLiteStore, TrialRecord

CALLS = 10
TARGET_MS = 0.5


@tool
def fetch(item: int) -> dict[str, Any]:
    """A scripted tool: returns a small record."""
    return {"item": item, "status": "ok", "value": item * 2}


def scripted_factory() -> Callable[[str], str]:
    """A fresh scripted agent: 10 announced tool calls; a failed call is noted and skipped."""

    def agent(question: str) -> str:
        got = 0
        for i in range(CALLS):
            think(f"fetching item {i} for the summary", tool_calls=[("fetch", {"item": i})])
            try:
                fetch(item=i)
                got += 1
            except ToolCallError:
                continue
        think(f"done: {got} of {CALLS} items")
        return f"summary ok {got}"

    return agent


TASK = Task(id="scripted", question="summarise the items", required=("summary",))


def best(repeat: int, fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Best CPU and wall seconds of ``repeat`` calls, and the last result."""
    cpu: list[float] = []
    wall: list[float] = []
    result: Any = None
    for _ in range(repeat):
        gc.collect()
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall), result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scenarios", type=int, default=60)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    battery = Battery.hbeval(n_scenarios=args.scenarios, seed=42)
    n: int = args.scenarios * args.trials
    tmp = Path(tempfile.mkdtemp(prefix="hbeval-bench-"))
    dbs = iter(range(1_000_000))

    def bare() -> None:
        for _ in range(n):
            scripted_factory()("summarise the items")

    def through_runner(store_kind: str) -> dict[str, Any]:
        if store_kind == "memory":
            return run_battery(
                None,
                scripted_factory,
                [TASK],
                battery,
                trials=args.trials,
                store=MemoryStore(),
                run_id="bench",
            )
        with SQLiteStore(str(tmp / f"run-{next(dbs)}.db")) as store:
            return run_battery(
                None,
                scripted_factory,
                [TASK],
                battery,
                trials=args.trials,
                store=store,
                run_id="bench",
            )

    # The stages alone, on the same 300 trials.
    adapter = PlainAdapter()
    jobs = [(s, k) for s in battery.scenarios for k in range(args.trials)]

    def capture() -> list[tuple[Any, TrialResult]]:
        out = []
        for s, k in jobs:
            plan = s.plan(derive_trial_seed(42, s.index, k))
            clock = VirtualClock()
            injector = FaultInjector(plan, clock=clock, enabled=True) if plan else None
            ctx = TrialContext(
                run_id="b",
                trial_run_id=f"b/{s.index}/{k}",
                trial_key=f"{s.index}-{k}",
                injector=injector,
                clock=clock,
            )
            with trial_context(ctx):
                out.append((s, adapter.run_trial(scripted_factory(), TASK, s, plan)))
        return out

    results = capture()

    def scoring() -> list[dict[str, Any]]:
        return [score_trial(TASK, s, r).as_dict() for s, r in results]

    verdicts = scoring()

    def recording(store_kind: str) -> None:
        store: Any = (
            MemoryStore()
            if store_kind == "memory"
            else SQLiteStore(str(tmp / f"rec-{next(dbs)}.db"))
        )
        store.start_run(
            RunRecord(run_id="r", agent_id="a", battery="hbeval", measurement_fingerprint="f")
        )
        for i, ((s, r), v) in enumerate(zip(results, verdicts, strict=True)):
            key = f"k{i}"
            undefined = {
                m: why for m, why in v["metrics_undefined"].items() if v["metrics"].get(m) is None
            }
            # What the runner does: one transaction per trial.
            store.record_trial_bundle(
                TrialRecord(
                    run_id="r",
                    trial_key=key,
                    task_id="t",
                    scenario_index=s.index,
                    trial_index=0,
                    outcome="pass",
                    verdict=v,
                ),
                [AttemptRecord(run_id="r", trial_key=key, attempt=0, outcome="pass")],
                {0: r.events},
                metrics=v["metrics"],
                undefined=undefined,
            )
        store.close()

    report = through_runner("memory")  # warm-up: imports, caches
    trial_dicts = report["trials"]

    def reporting() -> dict[str, Any]:
        return build_report(run={"run_id": "r", "trials": args.trials}, trials=trial_dicts)

    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}
    for name, fn in (
        ("bare", bare),
        ("runner_memory", lambda: through_runner("memory")),
        ("runner_sqlite", lambda: through_runner("sqlite")),
        ("capture", capture),
        ("scoring", scoring),
        ("record_memory", lambda: recording("memory")),
        ("record_sqlite", lambda: recording("sqlite")),
        ("report", reporting),
    ):
        cpu[name], wall[name], _ = best(args.repeat, fn)

    def ms(seconds: float) -> float:
        return seconds / n * 1000.0

    events = sum(len(r.events) for _, r in results) / n
    print(
        f"workload: {args.scenarios} scenarios x {args.trials} trials = {n} trials, "
        f"{CALLS} scripted tool calls each, {events:.0f} events per trial; "
        f"best of {args.repeat}"
    )
    print(f"{'':44}{'CPU ms/trial':>14}{'wall ms/trial':>15}")
    rows = [
        ("trial's own cost (bare agent loop)", "bare"),
        ("runner overhead, memory store", "runner_memory"),
        ("runner overhead, SQLite store", "runner_sqlite"),
    ]
    for label, key in rows:
        c = ms(cpu[key] - (cpu["bare"] if key != "bare" else 0.0))
        w = ms(wall[key] - (wall["bare"] if key != "bare" else 0.0))
        print(f"  {label:<42}{c:>14.3f}{w:>15.3f}")
    print("  breakdown (each stage alone):")
    runner_cpu = ms(cpu["runner_sqlite"] - cpu["bare"])
    stages = ("capture", "scoring", "record_sqlite", "report")
    labels = {
        "capture": "plain adapter capture + faults",
        "scoring": "score_trial",
        "record_memory": "store writes, memory",
        "record_sqlite": "store writes, SQLite (1 commit)",
        "report": "build_report (per trial)",
    }
    for key in ("capture", "scoring", "record_memory", "record_sqlite", "report"):
        print(f"    {labels[key]:<40}{ms(cpu[key]):>14.3f}{ms(wall[key]):>15.3f}")
    rest = runner_cpu - sum(ms(cpu[k]) for k in stages) + ms(cpu["bare"])
    print(f"    {'runner bookkeeping (the rest)':<40}{rest:>14.3f}")
    print(
        f"  battery wall time: {wall['runner_memory']:.2f} s with the memory store, "
        f"{wall['runner_sqlite']:.2f} s with SQLite (bare loop {wall['bare']:.3f} s)"
    )
    verdict = "met" if runner_cpu <= TARGET_MS else "NOT met"
    print(f"  target <= {TARGET_MS} ms/trial runner overhead (SQLite, CPU): {verdict}")


if __name__ == "__main__":
    main()
