"""``hbeval demo``: the main job on the embedded default store.

It scores the bundled 10-step reference trace (the live metrics table of spec §2.1), then runs
the fault battery on the bundled careful and naive agents and prints their reports side by side.
Everything it needs ships inside the package, so it works from any folder.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from .vocab import LIVE_METRICS

DEMO_TRACE = "demo_trace.jsonl"


def demo_trace_path() -> Path:
    """Path of the bundled 10-step reference trace."""
    return Path(str(resources.files("hbeval_core.examples").joinpath(DEMO_TRACE)))


def score_demo_trace() -> dict[str, Any]:
    """Live metrics of the bundled trace with the reference's halt policy ``frr < 0.5 for 3``."""
    from .events import read_events
    from .monitor import Monitor

    plain, halting = Monitor(), Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 3})
    rows = []
    for ev in read_events(demo_trace_path()):
        step = plain.observe(ev)
        halting.observe(ev)
        if step is not None:
            rows.append({"step": step.index + 1, **plain.metrics, "undefined": plain.undefined})
    return {"rows": rows, "summary": plain.summary(), "halt": halting.halt_record}


def _fmt(v: Any, reason: str | None = None) -> str:
    if v is None:
        return f"undefined ({reason})" if reason else "undefined"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def run(*, db: str | None, out_dir: Path, as_json: bool) -> int:
    """Run the demo; returns the exit code (0 once the reports are written)."""
    from rich.table import Table

    from .cli import console as make_console

    console = make_console(stderr=as_json)
    trace = score_demo_trace()
    table = Table(title="1. Live metrics of the reference's 10-step demo session (spec §2.1)")
    table.add_column("step", justify="right")
    for name in ("pei", "frr", "irs", "ti"):
        table.add_column(name.upper(), justify="right")
    for row in trace["rows"]:
        table.add_row(
            str(row["step"]),
            *(_fmt(row[m], row["undefined"].get(m)) for m in ("pei", "frr", "irs", "ti")),
        )
    console.print(table)
    halt = trace["halt"]
    console.print(
        f"breaches: {trace['summary']['breach_count']}; with halt policy frr<0.5x3 the run halts at step "
        f"{halt['step_index'] + 1}: {halt['reason']}"
    )

    result: dict[str, Any] = {"trace": trace}
    try:
        from .runner.demo import run_demo
    except ImportError:
        run_demo = None
    if run_demo is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        reports = run_demo(out_dir, db)
        result["reports"] = reports
        _print_side_by_side(console, reports)
        out = out_dir / "hbeval-report.json"
        out.write_text(
            json.dumps(reports, indent=2, allow_nan=False, default=str), encoding="utf-8"
        )
        console.print(f"reports written to {out}")
    if as_json:
        print(json.dumps(result, indent=2, allow_nan=False, default=str))
    return 0


def _metric(report: dict[str, Any], name: str) -> str:
    value = (report.get("metrics") or {}).get(name)
    reason = (report.get("undefined") or {}).get(name)
    return _fmt(value, reason)


def _print_side_by_side(console: Any, reports: dict[str, Any]) -> None:
    from rich.table import Table

    names = list(reports)
    table = Table(title="2. Fault battery: " + " vs ".join(names))
    table.add_column("figure")
    for n in names:
        table.add_column(n, justify="right")
    for m in LIVE_METRICS:
        table.add_row(m.upper(), *(_metric(reports[n], m) for n in names))
    for key, label in (("pass_hat_k", "pass^k"), ("pass_at_k", "pass@k")):
        row = []
        for n in names:
            val = reports[n].get(key)
            row.append(json.dumps(val, default=str) if val is not None else "undefined")
        table.add_row(label, *row)
    for key in ("reliability_gap", "agentdojo", "verdict"):
        table.add_row(key, *(json.dumps(reports[n].get(key), default=str)[:60] for n in names))
    console.print(table)
