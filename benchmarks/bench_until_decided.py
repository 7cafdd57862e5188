"""``battery run --until-decided`` against the fixed run: trials and model calls saved, per agent.

For each agent the hbeval battery (18 scenarios, seed 42) runs twice with ``--trials`` (default
6): once fixed (every trial), once in waves that stop when the verdict is decided at the
confidence (default 0.95; ``run_battery(until_decided=)``). The agents are the demo's careful
and naive agents on the framework the demo picks (LangGraph when installed) and as plain Python,
and every member of the reference panel (``hbeval.testing.panel``). Every model is scripted, so
the runs are offline and deterministic apart from the panel's stochastic member, whose draws are
seeded.

Prints one row per agent: both verdicts and whether they are equal, the trials of each run, the
waves the sequential run stopped after and why, the checks that failed at the confidence (none
for a SAFE verdict, where every check passed), and the share of trials and of model calls
(counted from each trial's recorded events) the sequential run saved. Nothing is asserted.

    .venv/bin/python benchmarks/bench_until_decided.py [--trials 6] [--confidence 0.95]
        [--no-panel] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")


def _calls(report: Any) -> int:
    return sum(int((t.usage or {}).get("model_calls") or 0) for t in report.trials)


def _row(name: str, run: Callable[..., Any], trials: int, confidence: float) -> dict[str, Any]:
    from hbeval.scoring import decide_verdict

    t0 = time.perf_counter()
    fixed = run(trials=trials)
    t1 = time.perf_counter()
    waves = run(trials=trials, until_decided=confidence)
    t2 = time.perf_counter()
    info = waves.run.until_decided
    f_calls, w_calls = _calls(fixed), _calls(waves)
    return {
        "agent": name,
        "fixed_verdict": decide_verdict(fixed).verdict,
        "waves_verdict": decide_verdict(waves).verdict,
        "fixed_trials": len(fixed.trials),
        "waves_trials": len(waves.trials),
        "waves_run": info.waves_run,
        "stopped": info.stopped,
        "failed_checks": [c.metric for c in info.checks if c.state == "failed"],
        "trials_saved": 1 - len(waves.trials) / len(fixed.trials),
        "fixed_model_calls": f_calls,
        "waves_model_calls": w_calls,
        "calls_saved": None if not f_calls else 1 - w_calls / f_calls,
        "seconds": [round(t1 - t0, 2), round(t2 - t1, 2)],
    }


def _agents(panel: bool) -> list[tuple[str, Callable[..., Any]]]:
    from hbeval.demo import demo_agents
    from hbeval.runner.run import run_battery
    from hbeval_core.faults import Battery

    out: list[tuple[str, Callable[..., Any]]] = []

    def runner(adapter: Any, factory: Any, tasks: Any, agent_id: str) -> Callable[..., Any]:
        def run(**kw: Any) -> Any:
            battery = Battery.hbeval(seed=42)
            return run_battery(adapter, factory, tasks, battery, seed=42, agent_id=agent_id, **kw)

        return run

    kinds = ["auto", "plain"]
    seen: set[str] = set()
    for kind in kinds:
        adapter, careful, naive, tasks, framework = demo_agents(kind)
        if framework in seen:
            continue
        seen.add(framework)
        for label, factory in (("careful", careful), ("naive", naive)):
            out.append((f"demo {label} ({framework})", runner(adapter, factory, tasks, label)))
    if panel:
        from hbeval.testing.helpdesk import tasks as desk_tasks
        from hbeval.testing.panel import MEMBERS, panel_factories

        factories = panel_factories(MEMBERS, seed=42)
        for m in MEMBERS:
            out.append((f"panel {m.name}", runner(None, factories[m.name], desk_tasks, m.name)))
    return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--no-panel", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = [_row(n, r, args.trials, args.confidence) for n, r in _agents(not args.no_panel)]
    print(
        f"--until-decided at {args.confidence:g} against the fixed run, --trials {args.trials} "
        "(hbeval battery, 18 scenarios, seed 42)"
    )
    print(
        "| agent | fixed verdict | waves verdict | same | trials fixed → waves | waves (stop) "
        "| failed at the confidence | trials saved | model calls fixed → waves | calls saved |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        same = "yes" if r["fixed_verdict"] == r["waves_verdict"] else "NO"
        print(
            f"| {r['agent']} | {r['fixed_verdict']} | {r['waves_verdict']} | {same} "
            f"| {r['fixed_trials']} → {r['waves_trials']} | {r['waves_run']} ({r['stopped']}) "
            f"| {', '.join(r['failed_checks']) or '—'} | {_pct(r['trials_saved'])} | {r['fixed_model_calls']} → "
            f"{r['waves_model_calls']} | {_pct(r['calls_saved'])} |"
        )
    total_f = sum(r["fixed_trials"] for r in rows)
    total_w = sum(r["waves_trials"] for r in rows)
    agree = sum(r["fixed_verdict"] == r["waves_verdict"] for r in rows)
    print(
        f"\nverdicts equal on {agree} of {len(rows)} agents; trials {total_f} → {total_w} "
        f"({_pct(1 - total_w / total_f)} saved)"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
