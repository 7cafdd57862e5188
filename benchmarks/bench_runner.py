"""The runner's own cost per trial, printed beside the trial's own cost, measured in one run.

Workload: a scripted plain agent making 10 tool calls per trial, each announced by a ``think``
turn (what a traced agent does: ~45 events per trial), on an hbeval battery of ``--scenarios``
scenarios (at most 60) x ``--trials`` trials (every fault type). Side by side, interleaved over
``--rounds`` rounds, in this process:

* **the agent alone** (the anchor) -- the same agent called bare in a loop (no trial scope:
  ``@tool`` is the plain function and ``think`` a no-op);
* **through the runner** -- ``run_battery`` with a ``InMemoryStore`` and with the SQLite store (a
  file in a temporary folder, every attempt, event batch, trial and metric set committed as the
  trial finishes), with the default per-attempt timeout (each attempt on a worker thread);
* **stages** -- each timed alone on the same trials (context): the plain adapter's capture
  (events, fault injection), the storability check (redaction, values the store cannot hold;
  it encodes the events once, and the store writes those rows), ``score_trial``, the SQLite
  trial bundle, and the report (``build_report(...).to_dict()``);
* **the runner's bookkeeping, measured inside the run** (the headline) -- a real
  ``run_battery`` into SQLite with wrappers around the functions it calls for each stage
  (``PlainAdapter.run_trial``: the agent and its capture; ``storable_events``; ``score_trial``
  and the verdict's ``as_dict``; the store's ``record_trial_bundle``; ``build_report``), each
  adding its process CPU time (``process_time_ns``) to its stage. Inside the clock: the whole
  ``run_battery`` call. Bookkeeping is what that same run spent outside the stages, on the same
  clock (less the wrappers' own cost, measured): plans, contexts, ids, the trial thread, trial
  dicts, the verdict's storability check, progress, the run's records, reading verdicts back.
  Its interval is a bootstrap over the runs. A known-zero control follows each run: the same
  wrappers and arithmetic on a plain loop calling five staged functions per trial, with no
  bookkeeping at all; what it reports (a few microseconds at most) is the method's own bias.

Runner overhead per trial = (runner total - agent alone) / trials. Medians over the rounds, in
CPU seconds of this process (``time.process_time``: what the runner costs, steady on a shared
machine; the wall figure is printed too). Then the same scenarios at twice the trials each, to
show the cost per trial stays flat (linear in trials). Goal: bookkeeping at most 0.3 ms per
trial; this prints, it asserts nothing.

    .venv/bin/python benchmarks/bench_runner.py [--rounds 3] [--scenarios 60] [--trials 5]
        [--calls 10]

``--calls 0`` runs the same battery on an agent with one model turn and no tool call: the
stages shrink to a fraction of the bookkeeping, so what remains after subtracting them depends
far less on how steady the machine is.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _table import Row, bootstrap

from hbeval.runner.run import VirtualClock, run_battery
from hbeval.scoring import build_report, score_trial
from hbeval.store import (
    AttemptRecord,
    InMemoryStore,
    Redactor,
    RunRecord,
    SQLiteStore,
    TrialRecord,
    storable_events,
)
from hbeval_core.contract import Task, TrialContext, TrialResult, trial_context
from hbeval_core.faults import Battery, FaultInjector, derive_trial_seed
from hbeval_plain import PlainAdapter, ToolCallError, think, tool

CALLS = 10
TARGET_MS = 0.3


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


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """CPU and wall seconds of one call."""
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


STAGES = ("capture", "storable", "scoring", "record_sqlite", "report")


def measure(scenarios: int, trials: int, rounds: int, tmp: Path) -> dict[str, tuple[float, float]]:
    """Median CPU and wall seconds of every case, interleaved over ``rounds``.

    Context only: the runner's bookkeeping is measured inside the runs (``direct``).
    """
    battery = Battery.hbeval(n_scenarios=scenarios, seed=42)
    n = scenarios * trials
    dbs = iter(range(1_000_000))
    redactor = Redactor()

    def bare() -> None:
        for _ in range(n):
            scripted_factory()("summarise the items")

    def through_runner(store_kind: str) -> dict[str, Any]:
        if store_kind == "memory":
            return run_battery(
                None, scripted_factory, [TASK], battery, trials=trials, store=InMemoryStore(),
                run_id="bench",
            )  # fmt: skip
        with SQLiteStore(str(tmp / f"run-{scenarios}x{trials}-{next(dbs)}.db")) as store:
            return run_battery(
                None, scripted_factory, [TASK], battery, trials=trials, store=store,
                run_id="bench",
            )  # fmt: skip

    adapter = PlainAdapter()
    jobs = [(s, k) for s in battery.scenarios for k in range(trials)]

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

    captured = capture()

    def storable() -> list[tuple[Any, Any]]:
        return [(s, storable_events(r.events, redactor=redactor)[0]) for s, r in captured]

    results = [(s, dataclasses.replace(r, events=e)) for (s, r), (_, e) in zip(captured, storable(), strict=True)]  # fmt: skip

    def scoring() -> list[dict[str, Any]]:
        return [score_trial(TASK, s, r).as_dict() for s, r in results]

    verdicts = scoring()

    def recording() -> None:
        store = SQLiteStore(str(tmp / f"rec-{scenarios}x{trials}-{next(dbs)}.db"))
        store.start_run(
            RunRecord(run_id="r", agent_id="a", battery="hbeval", measurement_fingerprint="f")
        )
        for i, ((s, r), v) in enumerate(zip(results, verdicts, strict=True)):
            key = f"k{i}"
            undefined = {
                m: why for m, why in v["metrics_undefined"].items() if v["metrics"].get(m) is None
            }
            store.record_trial_bundle(  # what the runner does: one transaction per trial
                TrialRecord(
                    run_id="r", trial_key=key, task_id="t", scenario_index=s.index,
                    trial_index=0, outcome="pass", verdict=v,
                ),
                [AttemptRecord(run_id="r", trial_key=key, attempt=0, outcome="pass")],
                {0: r.events},
                metrics=v["metrics"],
                undefined=undefined,
            )  # fmt: skip
        store.close()

    trial_dicts = through_runner("memory")["trials"]  # warm-up: imports, caches

    def reporting() -> dict[str, Any]:
        return build_report(run={"run_id": "r", "trials": trials}, trials=trial_dicts).to_dict()

    cases: dict[str, Callable[[], Any]] = {
        "bare": bare,
        "runner_memory": lambda: through_runner("memory"),
        "runner_sqlite": lambda: through_runner("sqlite"),
        "capture": capture,
        "storable": storable,
        "scoring": scoring,
        "record_sqlite": recording,
        "report": reporting,
    }
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            got[name].append(timed(fn))
    out = {
        name: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v))
        for name, v in got.items()
    }
    return out


class Stages:
    """Process CPU time spent inside each stage during a real ``run_battery``, by wrappers put
    around the functions the runner calls (outermost call only: a stage called inside another
    is that one's time).

    Stages: ``capture`` (the adapter's ``run_trial``: the agent and its capture), ``storable``
    (``storable_events``: the storability check and encoding of the events), ``scoring``
    (``score_trial`` and the verdict's ``as_dict``), ``record`` (the store's
    ``record_trial_bundle``: one transaction per trial) and ``report`` (``build_report``).
    What the run spends outside them, on the same clock in the same run, is the runner's
    bookkeeping: plans, contexts, the trial thread, the verdict's storability check, trial
    dicts, progress, the run's records, reading verdicts back, the manifest.
    """

    NAMES = ("capture", "storable", "scoring", "record", "report")
    # Parts of the bookkeeping itself, timed the same way (none of them holds a stage): where
    # the bookkeeping goes. What they do not cover is the loop, threads and small steps.
    PARTS = (
        "verdict storable", "trial dict", "attempt context", "attempt record", "trial bundle",
        "progress", "verdicts read back", "report stored", "run set-up",
    )  # fmt: skip

    def __init__(self) -> None:
        self.ns: dict[str, int] = dict.fromkeys((*self.NAMES, *self.PARTS), 0)
        self.calls = 0
        self._depth = {"stage": 0, "part": 0}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, attr: str, stage: str) -> None:
        original = getattr(owner, attr)
        clock = time.process_time_ns
        kind = "stage" if stage in self.NAMES else "part"
        depth = self._depth

        def timed_call(*args: Any, **kwargs: Any) -> Any:
            if depth[kind]:
                return original(*args, **kwargs)
            depth[kind] += 1
            t0 = clock()
            try:
                return original(*args, **kwargs)
            finally:
                self.ns[stage] += clock() - t0
                self.calls += 1
                depth[kind] -= 1

        setattr(owner, attr, timed_call)
        self._undo.append(lambda: setattr(owner, attr, original))

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()


def wrapper_cost_ns() -> float:
    """CPU ns one stage wrapper adds (two clock reads and the bookkeeping), measured here."""

    class Holder:
        @staticmethod
        def f() -> None:
            return None

    stages = Stages()
    stages.wrap(Holder, "f", "capture")
    n = 20_000
    t0 = time.process_time_ns()
    for _ in range(n):
        Holder.f()
    wrapped = time.process_time_ns() - t0
    stages.undo()
    t0 = time.process_time_ns()
    for _ in range(n):
        Holder.f()
    return max(0.0, (wrapped - (time.process_time_ns() - t0)) / n)


def direct_round(scenarios: int, trials: int, tmp: Path, index: int) -> dict[str, float]:
    """One ``run_battery`` into a fresh SQLite file, its stages timed inside it: CPU ms per trial
    of the whole run, of each stage, and of the bookkeeping (the run outside the stages)."""
    import hbeval.runner._attempts as attempts_mod
    import hbeval.runner._resume as resume_mod
    import hbeval.runner.run as run_mod

    battery = Battery.hbeval(n_scenarios=scenarios, seed=42)
    n = scenarios * trials
    stages = Stages()
    verdict_type = type(score_trial(TASK, battery.scenarios[0], _one_result(battery)))
    with SQLiteStore(str(tmp / f"direct-{scenarios}x{trials}-{index}.db")) as store:
        stages.wrap(PlainAdapter, "run_trial", "capture")
        stages.wrap(attempts_mod, "storable_events", "storable")
        stages.wrap(attempts_mod, "score_trial", "scoring")
        stages.wrap(verdict_type, "as_dict", "scoring")
        stages.wrap(store, "record_trial_bundle", "record")
        stages.wrap(run_mod, "build_report", "report")
        for owner, attr, part in (
            (attempts_mod, "_storable_verdict", "verdict storable"),
            (attempts_mod._Runner, "trial_dict", "trial dict"),
            (attempts_mod._Runner, "_context", "attempt context"),
            (attempts_mod._Runner, "attempt_record", "attempt record"),
            (resume_mod, "trial_bundle", "trial bundle"),
            (run_mod._Tally, "finished", "progress"),
            (run_mod, "_reload_trials", "verdicts read back"),
            (store, "finish_run", "report stored"),
            (run_mod, "run_manifest", "run set-up"),
            (run_mod, "_start_run", "run set-up"),
            (run_mod, "_jobs", "run set-up"),
        ):
            stages.wrap(owner, attr, part)
        try:
            gc.collect()
            t0 = time.process_time_ns()
            run_battery(
                None, scripted_factory, [TASK], battery, trials=trials, store=store,
                run_id="bench",
            )  # fmt: skip
            total = time.process_time_ns() - t0
        finally:
            stages.undo()
    inside = sum(stages.ns[name] for name in Stages.NAMES)
    out = {name: ns / n / 1e6 for name, ns in stages.ns.items()}
    out["total"] = total / n / 1e6
    out["wrappers"] = stages.calls * WRAPPER_NS / n / 1e6
    out["bookkeeping"] = (total - inside) / n / 1e6 - out["wrappers"]
    return out


WRAPPER_NS = 0.0


def _one_result(battery: Any) -> TrialResult:
    scenario = battery.scenarios[0]
    plan = scenario.plan(derive_trial_seed(42, scenario.index, 0))
    clock = VirtualClock()
    ctx = TrialContext(
        run_id="b", trial_run_id="b/0/0", trial_key="0-0",
        injector=FaultInjector(plan, clock=clock, enabled=True) if plan else None, clock=clock,
    )  # fmt: skip
    with trial_context(ctx):
        return PlainAdapter().run_trial(scripted_factory(), TASK, scenario, plan)


def control_round(n: int) -> float:
    """The method on a driver with no bookkeeping (the known-zero control): CPU ms per trial.

    A plain loop calls five staged functions per "trial" (each a fixed piece of Python work,
    about the size of a small stage), wrapped by ``Stages`` exactly as ``direct_round`` wraps
    the runner's; what the same arithmetic attributes to bookkeeping is then the loop itself
    (a few tens of ns) plus whatever bias the wrappers' accounting has.
    """

    class Driver:
        @staticmethod
        def work() -> int:
            return sum(range(1_500))

    names = Stages.NAMES
    for name in names:
        setattr(Driver, name, Driver.work)
    stages = Stages()
    for name in names:
        stages.wrap(Driver, name, name)
    calls = [getattr(Driver, name) for name in names]
    try:
        gc.collect()
        t0 = time.process_time_ns()
        for _ in range(n):
            for call in calls:
                call()
        total = time.process_time_ns() - t0
    finally:
        stages.undo()
    inside = sum(stages.ns[name] for name in names)
    return ((total - inside) / n - stages.calls * WRAPPER_NS / n) / 1e6


def direct(scenarios: int, trials: int, rounds: int, tmp: Path) -> dict[str, list[float]]:
    """``rounds`` instrumented runs (one warm-up first): per-round ms per trial of each part,
    and the known-zero control (``control_round``) after each run."""
    global WRAPPER_NS
    WRAPPER_NS = statistics.median(wrapper_cost_ns() for _ in range(5))
    direct_round(scenarios, trials, tmp, -1)
    got: dict[str, list[float]] = {}
    for i in range(rounds):
        for name, value in direct_round(scenarios, trials, tmp, i).items():
            got.setdefault(name, []).append(value)
        got.setdefault("control", []).append(control_round(scenarios * trials))
    return got


def headline(rounds: int, *, scenarios: int = 60, trials: int = 5, calls: int = 10) -> list[Row]:
    """The table's row: the runner's bookkeeping per trial, measured inside real runs."""
    global CALLS
    CALLS = calls
    tmp = Path(tempfile.mkdtemp(prefix="hbeval-bench-"))
    try:
        got = direct(scenarios, trials, rounds, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    point, lo, hi = bootstrap([got["bookkeeping"]], statistics.median)
    med = {name: statistics.median(v) for name, v in got.items()}
    listed = sum(med[p] for p in Stages.PARTS)
    parts = (
        "the stages: " + ", ".join(f"{name} {med[name]:.3f}" for name in Stages.NAMES)
        + f"; the run {med['total']:.3f} in all. Bookkeeping, its parts timed the same way: "
        + ", ".join(f"{p} {med[p]:.3f}" for p in sorted(Stages.PARTS, key=lambda p: -med[p]))
        + f"; the rest (the trial loop, the trial thread, small steps) "
        f"{med['bookkeeping'] - listed:.3f}"
    )  # fmt: skip
    c_point, c_lo, c_hi = bootstrap([got["control"]], statistics.median)
    return [
        Row("runner bookkeeping per trial", "(absolute)",
            f"run_battery of {scenarios * trials} trials ({calls} tool calls each) into SQLite, "
            "minus its own stages timed inside the same run; process CPU", point, lo, hi, "ms",
            TARGET_MS, why=f"CPU ms per trial, {parts}."),
        Row("runner bookkeeping, known-zero control", "(absolute)",
            f"the same wrappers and arithmetic on a plain loop of {scenarios * trials} "
            "five-stage trials with no bookkeeping; process CPU (the method's bias)",
            c_point, c_lo, c_hi, "ms", None),
    ]  # fmt: skip


def print_direct(got: dict[str, list[float]], n: int) -> None:
    print(f"  inside one run_battery of {n} trials (CPU ms per trial, median [95% interval]):")
    for name in (*Stages.NAMES, "wrappers", "bookkeeping", *Stages.PARTS, "total", "control"):
        point, lo, hi = bootstrap([got[name]], statistics.median)
        print(f"    {name:<14}{point:>9.3f}   [{lo:.3f}, {hi:.3f}]")


def report_size(size: dict[str, tuple[float, float]], n: int) -> None:
    """Print one size's table of the agent, the runner and its stages each alone."""

    def ms(seconds: float) -> float:
        return seconds / n * 1000.0

    cpu = {k: v[0] for k, v in size.items()}
    wall = {k: v[1] for k, v in size.items()}
    print(f"{'':46}{'CPU ms/trial':>13}{'wall ms/trial':>15}{'/ agent (CPU)':>15}")
    print(f"  {'the agent alone (anchor)':<44}{ms(cpu['bare']):>13.3f}{ms(wall['bare']):>15.3f}")
    for label, key in (
        ("runner overhead, memory store", "runner_memory"),
        ("runner overhead, SQLite store", "runner_sqlite"),
    ):
        c, w = ms(cpu[key] - cpu["bare"]), ms(wall[key] - wall["bare"])
        print(f"  {label:<44}{c:>13.3f}{w:>15.3f}{c / ms(cpu['bare']):>14.0f}x")
    labels = {  # STAGES, in order
        "capture": "plain adapter capture + faults",
        "storable": "storability check + encoding (redactor)",
        "scoring": "score_trial",
        "record_sqlite": "SQLite trial bundle (1 commit)",
        "report": "build_report + to_dict (per trial)",
    }
    print("  stages, each alone:")
    for key, label in labels.items():
        print(f"    {label:<42}{ms(cpu[key]):>13.3f}{ms(wall[key]):>15.3f}")


def main() -> None:
    global CALLS
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", type=int, default=60)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument(
        "--calls", type=int, default=CALLS,
        help="tool calls per trial; 0 leaves one model turn, so the stages are small and the "
        "bookkeeping is most of what the runner adds",
    )  # fmt: skip
    args = parser.parse_args()
    CALLS = args.calls
    tmp = Path(tempfile.mkdtemp(prefix="hbeval-bench-"))
    load = os.getloadavg()[0]
    rests = []
    # Linearity is shown by doubling the trials per scenario: a battery holds at most
    # MAX_SCENARIOS scenarios, so doubling the scenarios would be refused at the default.
    for trials in (args.trials, 2 * args.trials):
        n = args.scenarios * trials
        size = measure(args.scenarios, trials, args.rounds, tmp)
        print(
            f"{args.scenarios} scenarios x {trials} trials = {n} trials, {CALLS} scripted tool "
            f"calls each; medians of {args.rounds} interleaved rounds"
        )
        report_size(size, n)
        got = direct(args.scenarios, trials, args.rounds, tmp)
        print_direct(got, n)
        rests.append(statistics.median(got["bookkeeping"]))
    verdict = "met" if max(rests) <= TARGET_MS else "NOT met"
    print(
        f"bookkeeping per trial at {args.scenarios * args.trials} and "
        f"{2 * args.scenarios * args.trials} trials: {rests[0]:.3f} / {rests[1]:.3f} ms "
        f"(goal <= {TARGET_MS} ms, flat in trials): {verdict}"
    )
    print(f"load average (1 min) before / after: {load:.2f} / {os.getloadavg()[0]:.2f}")
    for path in tmp.glob("*"):
        path.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
