"""``hbeval demo``: the main job on the embedded default store.

It scores the bundled 10-step reference trace (the live metrics table of spec §2.1), then runs
the fault battery on the bundled careful and naive agents and prints their reports side by side.
Everything it needs ships inside the package, so it works from any folder.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hbeval_core.vocab import LIVE_METRICS


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write a demo file whole or not at all."""
    from ..store._atomic import write_atomic as write

    return write(path, data)


if TYPE_CHECKING:
    from ..scoring import Report

__all__ = [
    "DEMO_TRACE",
    "demo",
    "demo_trace_path",
    "finish_demo",
    "print_side_by_side",
    "run",
    "score_demo_trace",
    "side_by_side_rows",
]

DEMO_TRACE = "demo_trace.jsonl"


def demo_trace_path() -> Path:
    """Path of the bundled 10-step reference trace."""
    return Path(str(resources.files("hbeval.demo").joinpath(DEMO_TRACE)))


def score_demo_trace() -> dict[str, Any]:
    """Live metrics of the bundled trace with the reference's halt policy ``frr < 0.5 for 3``."""
    from hbeval_core.events import read_events
    from hbeval_core.live.monitor import Monitor

    plain, halting = Monitor(), Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 3})
    rows = []
    for ev in read_events(demo_trace_path()):
        step = plain.observe(ev)
        halting.observe(ev)
        if step is not None:
            rows.append({"step": step.index + 1, **plain.metrics, "undefined": plain.undefined})
    return {"rows": rows, "summary": plain.summary(), "halt": halting.halt_record}


def demo(
    db: Annotated[str | None, typer.Option(help="Store (default ./.hbeval/hbeval.db).")] = None,
    out_dir: Annotated[Path, typer.Option("--out-dir", help="Where the report files go.")] = Path(
        "."
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """The main job on the embedded default: run the demo agents and report side by side."""
    raise typer.Exit(run(db=db, out_dir=out_dir, as_json=as_json))


def _fmt(v: Any, reason: str | None = None) -> str:
    if v is None:
        return f"undefined ({reason})" if reason else "undefined"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def run(*, db: str | None, out_dir: Path, as_json: bool) -> int:
    """Run the demo; returns the exit code (0 once the reports are written)."""
    from rich.table import Table

    from ._common import console as make_console

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
        from ..demo import run_demo as demo_runner
    except ImportError:
        demo_runner = None  # type: ignore[assignment]
    run_demo = demo_runner
    if run_demo is not None:
        from ._progress import demo_progress

        out_dir.mkdir(parents=True, exist_ok=True)
        progress = demo_progress()
        try:
            reports = run_demo(out_dir, db, progress=progress)
        finally:
            close = getattr(progress, "close", None)
            if close is not None:
                close()
        result["reports"] = {name: r.to_dict() for name, r in reports.items()}
        print_side_by_side(console, reports)
        out = out_dir / "hbeval-report.json"
        write_atomic(
            out,
            json.dumps(
                {name: r.to_dict() for name, r in reports.items()},
                indent=2,
                allow_nan=False,
                default=str,
            ),
        )
        paths = finish_demo(reports, out_dir, out_dir / ".hbeval", db=db)
        result["files"] = {k: str(v) for k, v in paths.items()}
        console.print(f"reports (JSON):   {out}")
        console.print(f"HTML report:      {paths['html']}")
        console.print(
            f"signed passport:  {paths['passport']}  (verify: hbeval passport verify "
            f"{paths['passport']} --key {paths['public_key']})"
        )
        console.print(f"signing key:      {paths['key']} (public {paths['public_key']})")
    if as_json:
        print(json.dumps(result, indent=2, allow_nan=False, default=str))
    return 0


def _interval(ci: Any) -> str:
    if not ci or ci[0] is None:
        return ""
    return f" [{ci[0]:.2f}, {ci[1]:.2f}]"


def _cell(value: Any, reason: str | None, ci: Any = None, digits: int = 3) -> str:
    if value is None:
        return f"undefined ({reason or 'not_measured'})"
    if isinstance(value, float):
        return f"{value:.{digits}f}{_interval(ci)}"
    return f"{value}{_interval(ci)}"


def _explained(r: Report) -> str:
    """Share of tool calls whose issuing reply stated a reason, with the counts behind it."""
    t = r.traceability
    if t is None:
        return "undefined (not_measured)"
    cell = _cell(t.explained_share, t.undefined.get("explained_share"))
    return f"{cell} ({t.explained}/{t.calls} calls)" if t.calls else cell


def _passk(hat: bool) -> Callable[[Report], str]:
    """The cell of the pass^k (``hat``) or pass@k list: each k with its value."""

    def render(r: Report) -> str:
        parts = []
        for item in r.pass_hat_k if hat else r.pass_at_k:
            v = item.value
            parts.append(f"k={item.k}: " + ("undefined" if v is None else f"{v:.3f}"))
        return ", ".join(parts) or "undefined"

    return render


def _attack(r: Report) -> str:
    """The targeted attack success rate with its 95% interval clustered by scenario and n."""
    from ..scoring._uncertainty import rate_interval

    a = r.agentdojo
    n = a.injection_n
    v = a.targeted_attack_success_rate
    shown = rate_interval(r, "attack_success") if v is not None and n else None
    ci = None if shown is None else shown.interval
    return _cell(v, a.undefined.get("targeted_attack_success_rate"), ci) + f" (n={n})"


def side_by_side_rows(reports: Mapping[str, Report]) -> list[tuple[str, list[str]]]:
    """The demo's comparison, one row per figure, one cell per agent (95% intervals clustered
    by scenario)."""
    from ..report.scores import report_scores
    from ..scoring import decide_verdict
    from ..scoring._uncertainty import rate_interval

    names = list(reports)
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, fn: Callable[[Report], str]) -> None:
        rows.append((label, [fn(reports[n]) for n in names]))

    add("verdict", lambda r: decide_verdict(r).verdict)
    add("headline", lambda r: str(report_scores(r)["headline"]))
    for m in LIVE_METRICS:

        def metric(r: Report, m: str = m) -> str:
            value = getattr(r.metrics, m)
            shown = rate_interval(r, m) if value is not None else None
            ci = None if shown is None else shown.interval
            return _cell(getattr(r.metrics, m), r.undefined.get(m), ci)

        add(m.upper() + (" (0-5)" if m == "ti" else ""), metric)
        if m == "ti":
            add("explained share", _explained)
    add(
        "pass rate",
        lambda r: _cell(r.pass_rate.rate, r.pass_rate.undefined.get("rate"), r.pass_rate.interval),
    )

    add("pass^k (all k trials pass)", _passk(hat=True))
    add("pass@k (any of k passes)", _passk(hat=False))
    for key, label in (
        ("c_nom", "C_nom (no faults)"),
        ("r_op", "R_op (under faults)"),
        ("gap", "reliability gap"),
    ):

        def gap_cell(r: Report, key: str = key) -> str:
            g = r.reliability_gap
            ci = g.interval if key == "gap" else getattr(g, f"{key}_interval")
            return _cell(getattr(g, key), g.undefined.get(key), ci)

        add(label, gap_cell)

    add("attack success rate", _attack)
    add(
        "faults delivered",
        lambda r: (
            f"{r.fault_delivery.delivered}/{r.fault_delivery.injected} "
            f"({r.fault_delivery.faulted_trials} faulted trials)"
        ),
    )
    add("evidence", lambda r: f"{r.evidence.level}")
    return rows


def print_side_by_side(console: Any, reports: Mapping[str, Report]) -> None:
    """Print the demo's two reports in one table."""
    from rich.table import Table

    names = list(reports)
    from ..demo import demo_agents

    framework = demo_agents()[-1]
    table = Table(title=f"2. Fault battery on the {framework} support agent: " + " vs ".join(names))
    table.add_column("figure")
    for n in names:
        table.add_column(n, justify="right")
    for label, cells in side_by_side_rows(reports):
        table.add_row(label, *cells)
    console.print(table)


def finish_demo(
    reports: Mapping[str, Report],
    out_dir: Path,
    key_dir: Path,
    *,
    db: str | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Path]:
    """Write the demo's ``hbeval-report.html`` and a signed ``hbeval-passport.json`` in ``out_dir``.

    The HTML shows every report side by side (timelines and traces from the store ``db``, else
    ``<out_dir>/.hbeval/hbeval.db`` when it exists). The passport is for the first report (the
    careful agent in the demo), signed with ``<key_dir>/passport-key.pem``, created on first
    use. Returns the paths: ``html``, ``passport``, ``key``, ``public_key``.
    """
    from ..report.html import store_traces, write_html
    from ..report.passport import (
        build_passport,
        load_private_key,
        public_key_pem,
        render_passport,
        sign_passport,
        write_private_key,
    )
    from ..store import open_store

    if not reports:
        raise ValueError("finish_demo needs at least one report")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    store_path = db if db is not None else out_dir / ".hbeval" / "hbeval.db"
    store = (
        open_store(store_path) if db is not None or Path(os.fspath(store_path)).exists() else None
    )
    try:
        html = write_html(
            out_dir / "hbeval-report.html",
            reports,
            traces=store_traces(store) if store is not None else None,
        )
    finally:
        if store is not None:
            store.close()
    key_path = Path(key_dir) / "passport-key.pem"
    if key_path.exists():
        private = load_private_key(key_path)
        pub = Path(f"{key_path}.pub")
        if not pub.exists():
            write_atomic(pub, public_key_pem(private))
    else:
        key_path, private = write_private_key(key_path)
    first = next(iter(reports.values()))
    passport = sign_passport(build_passport(first, now=now), private)
    passport_path = out_dir / "hbeval-passport.json"
    write_atomic(passport_path, render_passport(passport))
    return {
        "html": html,
        "passport": passport_path,
        "key": key_path,
        "public_key": Path(f"{key_path}.pub"),
    }
