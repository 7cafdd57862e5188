"""The ``hbeval`` command line.

JSON goes to stdout with ``--json``; progress and logs go to stderr. Exit codes: 0 ok, 1 a check
failed, 2 bad usage or input, 3 insufficient data. Only ``gate`` and ``passport verify`` turn
verdicts into exit codes.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer
from typer.core import TyperGroup

from . import __version__
from .vocab import LIVE_METRICS, PEI_V2, PEI_VERSIONS

if TYPE_CHECKING:
    from .live.derive import StepRecord

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INSUFFICIENT = 3

DEBUG_ENV = "HBEVAL_DEBUG"
"""Set to 1 to see the traceback of an unexpected error instead of its one-line message."""


def describe_error(exc: BaseException) -> str:
    """One line for people about an error no command handled itself (exit 2, no traceback)."""
    import sqlite3

    if isinstance(exc, RecursionError):
        text = "the input is nested too deeply to read (more levels than the JSON reader allows)"
    elif isinstance(exc, UnicodeDecodeError):
        text = f"the input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    elif isinstance(exc, sqlite3.DatabaseError):
        text = f"the store cannot be read ({exc}); it is damaged or not an hbeval store"
    elif isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.filename}: {exc.strerror or exc}"
    elif isinstance(exc, MemoryError):
        text = "out of memory while reading the input"
    else:
        text = (
            f"unexpected error {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 to see the traceback)"
        )
    line = " ".join(text.split())
    return line if len(line) <= 600 else line[:597] + "..."


def _click_flow() -> tuple[type[BaseException], ...]:
    """Exceptions click uses for control flow (exit codes, usage errors, aborts): the click
    package's and, for typer releases that carry their own copy of click, typer's."""
    kinds: list[type[BaseException]] = [
        click.exceptions.Exit,
        click.ClickException,
        click.exceptions.Abort,
        typer.Exit,
        typer.Abort,
    ]
    try:
        from typer._click import exceptions as vendored  # typer >= 0.29 carries its own click
    except ImportError:
        pass
    else:
        kinds += [
            k
            for k in (getattr(vendored, n, None) for n in ("ClickException", "Exit", "Abort"))
            if isinstance(k, type) and issubclass(k, BaseException)
        ]
    return tuple(dict.fromkeys(kinds))


_CLICK_FLOW = _click_flow()


class _GuardedGroup(TyperGroup):
    """The root command: an exception no command handled becomes one line and exit 2.

    Exits, usage errors and interrupts pass through as click handles them; ``HBEVAL_DEBUG=1``
    lets the original exception (and its traceback) through.
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _CLICK_FLOW:
            raise
        except Exception as exc:
            if os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes"):
                raise
            typer.echo(f"hbeval: {describe_error(exc)}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None


app = typer.Typer(
    name="hbeval",
    help="Measure how tool-using agents behave when things break.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_GuardedGroup,
)
schema_app = typer.Typer(help="Print JSON Schemas of hbeval's formats.", no_args_is_help=True)
runs_app = typer.Typer(help="Runs recorded in the store.", no_args_is_help=True)
store_app = typer.Typer(help="Stores themselves: copy runs between them.", no_args_is_help=True)
app.add_typer(schema_app, name="schema")
app.add_typer(runs_app, name="runs")
app.add_typer(store_app, name="store")


def _mount_optional(module: str, attr: str, name: str) -> None:
    """Mount a sub-app that lives beside its feature; a missing feature leaves the command out."""
    try:
        sub = getattr(__import__(module, fromlist=[attr]), attr)
    except (ImportError, AttributeError):
        return
    app.add_typer(sub, name=name)


def console(*, stderr: bool = False) -> Any:
    """A rich console wide enough that "undefined (reason)" is never cut when piped."""
    from rich.console import Console

    c = Console(stderr=stderr)
    if not c.is_terminal:
        c = Console(stderr=stderr, width=160)
    return c


def _err(message: str) -> None:
    typer.echo(f"hbeval: {message}", err=True)


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    _err(message)
    return typer.Exit(code)


def fmt_value(value: float | None, reason: str | None, digits: int = 4) -> str:
    """A metric for people: the number, or ``undefined (reason)``; never a zero for a gap."""
    if value is None:
        return f"undefined ({reason or 'not_measured'})"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"hbeval {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """hbeval: reliability as a vector with honest uncertainty."""


# --------------------------------------------------------------------------- score
_HALT_RE = re.compile(r"^\s*(pei|frr|irs|ti|csi)\s*<\s*([0-9.]+)\s*(?:(?:x|for)\s*(\d+))?\s*$")


def parse_halt(text: str) -> dict[str, Any]:
    """Parse ``frr<0.5x3`` (metric, bound, consecutive steps) into a halt policy."""
    m = _HALT_RE.match(text)
    if m is None:
        raise ValueError(f"--halt-policy {text!r} is not METRIC<BOUNDxSTEPS, e.g. 'frr<0.5x3'")
    return {"metric": m.group(1), "below": float(m.group(2)), "for_steps": int(m.group(3) or 3)}


_TABLE_LIMIT = 100


@app.command()
def score(
    events: Annotated[Path, typer.Argument(help="An hb-events/1 JSONL file ('-' reads stdin).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
    pei_version: Annotated[
        str, typer.Option(help=f"PEI version: {', '.join(PEI_VERSIONS)}.")
    ] = PEI_V2,
    halt_policy: Annotated[
        str | None, typer.Option(help="Safe Halt policy METRIC<BOUNDxSTEPS, e.g. 'frr<0.5x3'.")
    ] = None,
    steps: Annotated[
        bool | None,
        typer.Option(
            "--steps/--no-steps",
            help=f"Per-step table (default: when at most {_TABLE_LIMIT} steps).",
        ),
    ] = None,
) -> None:
    """Live metrics, breaches and halts of a recorded trace."""
    from .events import EventFormatError

    if str(events) != "-" and not events.is_file():
        raise _fail(
            f"EVENTS {str(events)!r}: no such file; pass a JSONL file of hb-events/1 events"
        )
    try:
        source = sys.stdin if str(events) == "-" else events
        doc = score_trace(
            source, label=str(events), pei_version=pei_version, halt_policy=halt_policy, steps=steps
        )
    except UnicodeDecodeError as exc:
        raise _fail(f"{events}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        message = str(exc) if not isinstance(exc, EventFormatError) else f"{events}: {exc}"
        raise _fail(message) from None
    except OSError as exc:
        raise _fail(f"{events}: {exc}") from None

    if as_json:
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
    else:
        summary = {k: v for k, v in doc.items() if k not in ("source", "steps")}
        _print_score(summary, doc.get("steps"))
    if doc["step_count"] == 0:
        _err("no steps in the trace: every metric is undefined (no_steps)")
        raise typer.Exit(EXIT_INSUFFICIENT)


def score_trace(
    source: Any,
    *,
    label: str,
    pei_version: str = PEI_V2,
    halt_policy: str | None = None,
    steps: bool | None = None,
) -> dict[str, Any]:
    """The ``hbeval score --json`` document of an hb-events/1 stream (path or open text file).

    ``label`` is shown as ``source``; ``steps`` None keeps the per-step rows only for traces of
    at most 100 steps. Raises ValueError naming the option (``--halt-policy``, PEI version) or,
    as ``EventFormatError``, the event line at fault.
    """
    from .live._trace import fold_trace
    from .monitor import Monitor

    policy = parse_halt(halt_policy) if halt_policy else None
    monitor = Monitor(pei_version=pei_version, halt_policy=policy)
    rows: list[dict[str, Any]] = []
    keep_rows = steps is not False

    def row(step: StepRecord) -> bool:
        nonlocal keep_rows, rows
        rows.append(
            {
                "step": step.index + 1,
                "action": step.action,
                "metrics": monitor.metrics,
                "undefined": monitor.undefined,
            }
        )
        if steps is None and len(rows) > _TABLE_LIMIT:
            keep_rows = False
            rows = []
        return keep_rows

    # Per-step rows need the metrics after each step; without them steps are folded in batches.
    fold_trace(source, monitor, row if keep_rows else None)
    doc: dict[str, Any] = {"source": label, **monitor.summary()}
    if keep_rows:
        doc["steps"] = rows
    return doc


def _print_score(summary: dict[str, Any], rows: list[dict[str, Any]] | None) -> None:
    from rich.table import Table

    out = console()
    undefined: dict[str, str] = summary["undefined"]
    if rows:
        table = Table(title="Live metrics after each step", show_lines=False)
        table.add_column("step", justify="right")
        table.add_column("action")
        for name in ("pei", "frr", "irs", "ti"):
            table.add_column(name.upper(), justify="right")
        for row in rows:
            cells = []
            for name in ("pei", "frr", "irs", "ti"):
                cells.append(fmt_value(row["metrics"][name], row["undefined"].get(name)))
            table.add_row(str(row["step"]), row["action"][:40], *cells)
        out.print(table)
    final = Table(
        title=f"Final ({summary['step_count']} steps, metric versions {summary['metric_versions']['pei']} PEI)"
    )
    final.add_column("metric")
    final.add_column("value", justify="right")
    for name in LIVE_METRICS:
        final.add_row(name.upper(), fmt_value(summary["metrics"][name], undefined.get(name)))
    out.print(final)
    out.print(f"breaches: {summary['breach_count']} (as {len(summary['breaches'])} intervals)")
    for b in summary["breaches"]:
        out.print(
            f"  {b['metric'].upper()} < {b['threshold']}: steps {b['first_step'] + 1}-{b['last_step'] + 1}"
            f" (min {b['min_value']:.4g})"
        )
    if summary["halted"]:
        rec = summary["halt_record"]
        out.print(f"[bold red]Safe Halt[/] at step {rec['step_index'] + 1}: {rec['reason']}")
    for d in summary["directives"]:
        out.print(f"directive at step {d['step_index'] + 1}: {d['action']} ({d['reason']})")


# --------------------------------------------------------------------------- schema
@schema_app.command("events")
def schema_events() -> None:
    """JSON Schema of one hb-events/1 event."""
    from .events import events_json_schema

    typer.echo(json.dumps(events_json_schema(), indent=2))


@schema_app.command("report")
def schema_report() -> None:
    """JSON Schema of an hbeval-report/1 battery report."""
    try:
        from .report.model import report_json_schema
    except ImportError:
        raise _fail("the report schema is not available in this build", EXIT_INSUFFICIENT) from None
    typer.echo(json.dumps(report_json_schema(), indent=2))


# --------------------------------------------------------------------------- runs
@runs_app.command("list")
def runs_list(
    db: Annotated[
        str | None,
        typer.Option(
            help="Store: a path, sqlite:///path or postgresql://... (default ./.hbeval/hbeval.db)."
        ),
    ] = None,
    agent_id: Annotated[
        str | None, typer.Option("--agent-id", help="Only runs of this agent.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """List recorded runs, newest first."""
    from .store import open_store, store_exists

    try:
        if not store_exists(db):
            runs: list[dict[str, Any]] = []
        else:
            store = open_store(db, read_only=True)
            try:
                runs = runs_document(store, agent_id)["runs"]
            finally:
                store.close()
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps({"runs": runs}, indent=2, default=str))
        return
    if not runs:
        typer.echo("no runs recorded")
        return
    from rich.table import Table

    table = Table(title="Runs")
    columns = ("run_id", "agent_id", "status", "battery", "measurement_fingerprint", "created_at")
    for col in columns:
        table.add_column(col)
    for r in runs:
        table.add_row(*(_cell(c, r.get(c)) for c in columns))
    console().print(table)


@store_app.command("copy")
def store_copy(
    src: Annotated[
        str, typer.Argument(help="Source store: a path, sqlite:///path or postgresql://...")
    ],
    dst: Annotated[str, typer.Argument(help="Destination store (created when missing).")],
    run_ids: Annotated[
        list[str] | None, typer.Option("--run", help="Copy only this run (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Copy runs between stores (SQLite <-> PostgreSQL) without loss; copying again is safe."""
    from .store import copy_between

    try:
        summary = copy_between(src, dst, run_ids or None)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(summary.as_dict()))
        return
    typer.echo(
        f"copied {summary.runs} run(s): {summary.trials_copied} trial(s) and "
        f"{summary.events_copied} event(s) written, {summary.trials_present} trial(s) already "
        f"there, {summary.reports_copied} report(s)"
    )


def runs_document(store: Any, agent_id: str | None = None) -> dict[str, Any]:
    """``hbeval runs list --json``'s document: ``{"runs": [run record, ...]}``, newest first."""
    return {"runs": [_as_plain(r) for r in store.list_runs(agent_id=agent_id)]}


def _cell(column: str, value: Any) -> str:
    """A run-table cell; Unix timestamps shown as UTC ISO times."""
    if value is None:
        return ""
    if column.endswith("_at") and isinstance(value, (int, float)):
        import datetime as dt

        return dt.datetime.fromtimestamp(value, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return str(value)


def _as_plain(record: Any) -> dict[str, Any]:
    import dataclasses

    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    if isinstance(record, dict):
        return record
    return dict(vars(record))


# --------------------------------------------------------------------------- demo
@app.command()
def demo(
    db: Annotated[str | None, typer.Option(help="Store (default ./.hbeval/hbeval.db).")] = None,
    out_dir: Annotated[Path, typer.Option("--out-dir", help="Where the report files go.")] = Path(
        "."
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """The main job on the embedded default: run the demo agents and report side by side."""
    from .demo import run

    raise typer.Exit(run(db=db, out_dir=out_dir, as_json=as_json))


# --------------------------------------------------------------------------- init
@app.command()
def init(
    target: Annotated[str, typer.Argument(help="Your agent's file: agent.py or agent.py:attr.")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite tasks.yaml and verifiers.py if present.")
    ] = False,
) -> None:
    """Write a starter tasks.yaml and verifiers.py beside an agent file."""
    from .runner.starter import StarterExistsError, write_starter

    try:
        files = write_starter(target, force=force)
    except StarterExistsError as exc:
        raise _fail(f"{exc.path} exists; nothing was written (use --force to overwrite)") from None
    except (ValueError, FileNotFoundError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"wrote {files.tasks}")
    typer.echo(f"wrote {files.verifiers}")
    typer.echo(f"next: {files.command}")


_mount_optional("hbeval_core.runner.cli_battery", "battery_app", "battery")
_mount_optional("hbeval_core.memory.cli", "memory_app", "memory")
_mount_optional("hbeval_core.report.cli", "passport_app", "passport")
_mount_optional("hbeval_core.export.cli", "export_app", "export")


def _mount_report_commands() -> None:
    """``report``, ``compare`` and ``gate`` live beside the report model they read."""
    from .report.cli import compare_cmd, gate_cmd, report_cmd

    app.command("report")(report_cmd)
    app.command("compare")(compare_cmd)
    app.command("gate")(gate_cmd)


_mount_report_commands()


def _mount_import_command() -> None:
    """``import`` lives beside the importers it runs."""
    from .importers.cli import import_cmd

    app.command("import")(import_cmd)


_mount_import_command()


def _mount_replay_command() -> None:
    """``replay`` lives beside the replay it runs."""
    from .replay.cli import replay_cmd

    app.command("replay")(replay_cmd)


_mount_replay_command()


def _mount_mcp_command() -> None:
    """``hbeval mcp``; the MCP SDK itself is imported only when the command runs."""
    from .mcp_server.cli import mcp_cmd

    app.command("mcp")(mcp_cmd)


_mount_mcp_command()


def main() -> None:
    """Console entry point: no traceback reaches the user unless HBEVAL_DEBUG=1 asks for it."""
    try:
        app()
    except Exception as exc:  # raised outside a command (the guard covers commands)
        if os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes"):
            raise
        typer.echo(f"hbeval: {describe_error(exc)}", err=True)
        sys.exit(EXIT_BAD_INPUT)


if __name__ == "__main__":  # pragma: no cover
    main()
