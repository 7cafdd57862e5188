"""``hbeval replay RUN_ID --target NEW_AGENT``: a candidate agent on a recorded run's cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["replay_cmd"]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2


def replay_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The recorded run to replay.")],
    target: Annotated[
        str,
        typer.Option(
            "--target",
            help="The candidate agent: path.py:attr or module:attr (a factory or agent).",
        ),
    ],
    tasks: Annotated[
        str | None,
        typer.Option(
            help="Tasks (verifiers, forbidden tools) by id: path.py:attr, module:attr or a task "
            "file (default: TARGET's module's 'tasks' when it has one)."
        ),
    ] = None,
    invariants: Annotated[
        Path | None,
        typer.Option(
            help="JSON object: forbidden_tools, required_tools, order [[a, b]], call_budget, "
            "arg_schemas {tool: {arg: type}}, infer_arg_schemas, violation_budget."
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget", min=0, help="Invariant violations allowed over all cases (default 0)."
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(help="Store: a path or sqlite:///path (default ./.hbeval/hbeval.db)."),
    ] = None,
    target_kind: Annotated[
        str | None, typer.Option("--target-kind", help="factory, agent or an adapter kind.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Replay a recorded run on a new agent version; exit 1 when the invariant violations exceed
    the budget."""
    report = _replay(run_id, target, tasks, invariants, budget, db, target_kind)
    s = report["summary"]
    if as_json:
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        _print_report(run_id, report)
    if not s["within_budget"]:
        if not as_json:
            typer.echo(
                f"FAIL: {s['violations']} invariant violations exceed the budget of "
                f"{s['violation_budget']}"
            )
        raise typer.Exit(EXIT_VIOLATIONS)


def _replay(
    run_id: str,
    target: str,
    tasks: str | None,
    invariants: Path | None,
    budget: int | None,
    db: str | None,
    target_kind: str | None,
) -> dict[str, Any]:
    """Load the candidate, its tasks and the invariants, and replay; bad input exits 2."""
    from ..replay import Invariants, ReplayError, replay_run
    from ..runner.loader import TargetError, TaskFileError, load_object, load_tasks, split_reference
    from ..store import open_store

    try:
        module_part, _ = split_reference(target)
        candidate = load_object(target)
    except TargetError as exc:
        typer.echo(f"hbeval: --target: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    task_list: list[object] = []
    try:
        task_list = list(load_tasks(tasks or f"{module_part}:tasks"))
    except TaskFileError as exc:
        if tasks is not None:
            typer.echo(f"hbeval: --tasks: {exc}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        inv = Invariants.from_file(invariants) if invariants is not None else Invariants()
        if budget is not None:
            inv.budget = budget
        store = open_store(db, read_only=True)
    except (ReplayError, ValueError) as exc:
        typer.echo(f"hbeval: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        return replay_run(
            store, run_id, candidate, tasks=task_list, invariants=inv, target_kind=target_kind
        )
    except (ReplayError, ValueError) as exc:
        typer.echo(f"hbeval: replay refused: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        store.close()


def _print_report(run_id: str, report: dict[str, Any]) -> None:
    """The replay's summary, each case that changed, and the paired changes."""
    s = report["summary"]
    typer.echo(
        f"replay of {run_id}: {s['cases']} cases, {s['diverged']} diverged "
        f"({s['unexpected_calls']} unexpected calls), {s['argument_differences']} calls with "
        f"argument differences, {s['violations']} invariant violations "
        f"(budget {s['violation_budget']})"
    )
    unmatched = s.get("tasks_unmatched") or []
    if unmatched:
        shown = ", ".join(repr(t) for t in unmatched[:5]) + (" ..." if len(unmatched) > 5 else "")
        typer.echo(
            f"  warning: {len(unmatched)} recorded task id(s) are not in the tasks given "
            f"({shown}): their forbidden tools and verifiers could not be applied, so the "
            "violations above do not cover them; pass --tasks with those ids"
        )
    for case in report["cases"]:
        sel, vio = case["selection"], case["violations"]
        if not (sel["diverged"] or sel["argument_differences"] or vio["total"]):
            continue
        parts = []
        if sel["extra"]:
            parts.append("added " + ", ".join(x["tool"] for x in sel["extra"]))
        if sel["missing"]:
            parts.append("left out " + ", ".join(x["tool"] for x in sel["missing"]))
        for d in sel["argument_differences"]:
            fields = ", ".join(f"{f['field']} {f['change']}" for f in d["fields"])
            parts.append(f"{d['tool']} args: {fields}")
        for v in vio["details"]:
            parts.append(f"violation {v['rule']}: {v['detail']}")
        typer.echo(f"  {case['trial_key']} ({case['task_id']}): " + "; ".join(parts))
    c = report["compare"]
    p = c["pass"]
    if p["mean_change"] is not None:
        typer.echo(f"  pass rate change (paired per task): {p['mean_change']:+.3f}")
    for k in ("tokens", "tool_calls", "latency_ms"):
        m = c[k]
        if m["mean_change"] is not None:
            typer.echo(f"  {k} mean change per case: {m['mean_change']:+.1f} (n={m['n']})")
