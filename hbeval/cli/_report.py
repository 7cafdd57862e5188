"""The ``report``, ``compare`` and ``gate`` commands.

A report argument is a report file, ``FILE#LABEL`` for one report of a file that holds several
(the demo's ``{"careful": ..., "naive": ...}``), or a run id looked up in the store (``--db``,
default ``./.hbeval/hbeval.db``). JSON goes to stdout with ``--json``; messages go to stderr.
Exit codes: 0 ok, 1 a check failed, 2 bad usage or input, 3 insufficient data; only ``gate``
and ``passport verify`` turn verdicts into exit codes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import DB_HELP as _DB_HELP
from ._common import EXIT_INSUFFICIENT, SOURCE_HELP, console, emit_json
from ._common import fail as _fail

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["SOURCE_HELP", "compare_cmd", "gate_cmd", "load_one", "load_reports", "report_cmd"]


class _InputError(ValueError):
    """Bad input: the command exits 2 with this message."""


def _emit_json(data: Any) -> None:
    emit_json(data, default=str)


# --------------------------------------------------------------------------- loading
def _open_store(db: str | None, *, required: bool) -> Any:
    """The store at ``db`` (or the default), or None when it does not exist and is optional."""
    from ..store import NoStoreError, open_store, resolve_path, store_exists
    from ..store.postgres import is_postgres_url, public_url

    where = public_url(db) if db is not None and is_postgres_url(db) else resolve_path(db)
    missing = _InputError(f"no store at {where}; pass --db with the store the run was saved in")
    if not store_exists(db):
        if required or db is not None:
            raise missing
        return None
    try:
        return open_store(db, read_only=True)
    except NoStoreError:  # a PostgreSQL database without hbeval's tables: as a missing file
        raise missing from None


def _checked(data: Report | Mapping[str, Any], where: str) -> Report:
    """``data`` as a ``Report``, refused when its figures do not follow from its own trials."""
    from ..scoring._recheck import describe, report_discrepancies
    from ..scoring._report_model import Report, validate_report

    report = data if isinstance(data, Report) else validate_report(data)
    found = report_discrepancies(report)  # rebuilds the report from its trials: once
    if found is None:
        derive = report.versions.derive
        typer.echo(
            f"hbeval: note: {where} is taken as it states its figures, not checked against its "
            f"trials (it was built under other rules, {derive or 'unknown versions'}, or lacks "
            "them)",
            err=True,
        )
    elif found:
        raise _InputError(
            f"{where}: the report's figures do not follow from its own trials ({describe(found)}); "
            "it was changed after hbeval built it. Use the report as hbeval wrote it "
            "(`hbeval report RUN_ID --json` reads it from the store)"
        )
    return report


def _reports_in(data: Any, where: str) -> dict[str, Report]:
    from ..scoring._report_model import Report, ReportFormatError

    def label_of(report: Report) -> str:
        return str(report.run.agent_id or report.run_id or "report")

    try:
        if isinstance(data, Report) or (isinstance(data, Mapping) and "format" in data):
            report = _checked(data, where)
            return {label_of(report): report}
        if (
            isinstance(data, Mapping)
            and data
            and all(isinstance(v, Mapping) and "format" in v for v in data.values())
        ):
            return {str(k): _checked(v, f"{where}#{k}") for k, v in data.items()}
    except ReportFormatError as exc:
        raise _InputError(f"{where}: {exc}") from None
    raise _InputError(
        f"{where} holds neither an hbeval-report/1 report nor a mapping of label -> report"
    )


def load_reports(
    source: str, db: str | None = None, *, want_store: bool = False
) -> tuple[dict[str, Report], Any]:
    """Reports named by ``source`` (file, FILE#LABEL or run id), and their store if wanted.

    Returns ``({label: report}, store or None)``; raises ValueError with a message for people.
    With ``want_store`` the store is the one given, else the default one when it exists (never
    created here); the caller closes it.
    """
    path, label = Path(source), None
    if not path.is_file() and "#" in source:
        head, _, label = source.rpartition("#")
        path = Path(head)
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _InputError(f"cannot read {path}: {exc}") from None
        except RecursionError:
            raise _InputError(
                f"cannot read {path}: JSON nested too deeply (more levels than the reader allows)"
            ) from None
        reports = _reports_in(data, str(path))
        if label is not None:
            if label not in reports:
                raise _InputError(
                    f"{path} has no report labelled {label!r}; it has {', '.join(reports)}"
                )
            reports = {label: reports[label]}
        return reports, _open_store(db, required=False) if want_store else None
    if label is not None or source.endswith(".json"):
        raise _InputError(f"{path}: no such file")
    store = _open_store(db, required=True)
    try:
        report = store.get_report(source)
        if report is None:
            raise _InputError(
                f"no report for run {source!r} in {store.path}; `hbeval runs list` shows the runs"
            )
        reports = _reports_in(report, f"run {source}")
    except BaseException:
        store.close()
        raise
    if not want_store:
        store.close()
        store = None
    return reports, store


def load_one(source: str, db: str | None) -> tuple[str, Report]:
    reports, _ = load_reports(source, db)
    if len(reports) != 1:
        raise _InputError(
            f"{source} holds {len(reports)} reports ({', '.join(reports)}); pick one with "
            f"{source}#LABEL, e.g. {source}#{next(iter(reports))}"
        )
    label, report = next(iter(reports.items()))
    return label, report


# --------------------------------------------------------------------------- report
def report_cmd(
    source: Annotated[str, typer.Argument(metavar="RUN_ID|REPORT.json", help=SOURCE_HELP)],
    html: Annotated[
        Path | None, typer.Option("--html", help="Write the self-contained HTML page here.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the report JSON (as stored) here.")
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help=_DB_HELP)] = None,
    timelines: Annotated[
        int, typer.Option(help="Trials per report that get a live-metric timeline.", min=0)
    ] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Show a report: summary table, scores, and optionally a self-contained HTML page."""
    from hbeval.cli._outpaths import output_problem, write_output

    from ..report.html import store_traces, write_html
    from ..report.scores import report_scores
    from ..report.terminal import print_summary

    source_file = (
        source.rpartition("#")[0] if "#" in source and not Path(source).is_file() else source
    )
    read = [source_file] if Path(source_file).is_file() else []
    for flag, target, other in (("--html", html, out), ("--out", out, None)):
        problem = (
            output_problem(target, make_parents=True, store=db, inputs=[*read, other])
            if target is not None
            else None
        )
        if problem is not None:
            raise _fail(f"{flag}: {problem}")
    try:
        reports, store = load_reports(source, db, want_store=html is not None)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    try:
        written: Path | None = None
        if html is not None:
            traces = store_traces(store) if store is not None else None
            written = write_html(html, reports, traces=traces, timelines=timelines)
            typer.echo(f"HTML report written to {written}", err=True)
        if out is not None:
            data: Any = (
                next(iter(reports.values())).to_dict()
                if len(reports) == 1
                else {label: r.to_dict() for label, r in reports.items()}
            )
            write_output(out, json.dumps(data, indent=2, allow_nan=False) + "\n")
            typer.echo(f"report JSON written to {out}", err=True)
    except OSError as exc:
        raise _fail(f"cannot write {exc.filename or html or out}: {exc.strerror or exc}") from None
    finally:
        if store is not None:
            store.close()
    if as_json:
        _emit_json(
            {
                "html": None if written is None else str(written),
                "reports": {
                    label: {"scores": report_scores(r), "report": r.to_dict()}
                    for label, r in reports.items()
                },
            }
        )
        return
    for report in reports.values():
        print_summary(report, console())
        typer.echo(report_scores(report)["headline"])


# --------------------------------------------------------------------------- compare
def compare_cmd(
    a: Annotated[str, typer.Argument(metavar="A", help=SOURCE_HELP)],
    b: Annotated[str, typer.Argument(metavar="B", help=SOURCE_HELP)],
    db: Annotated[str | None, typer.Option("--db", help=_DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Compare run B against run A (same measurement fingerprint), paired per task."""
    from ..report.compare import CompareRefused, compare_reports

    try:
        label_a, report_a = load_one(a, db)
        label_b, report_b = load_one(b, db)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if label_a == label_b:
        label_a, label_b = "A", "B"
    try:
        result = compare_reports(report_a, report_b, labels=(label_a, label_b))
    except CompareRefused as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _emit_json(result)
    else:
        _print_compare(result)
    if result["overall"]["change"] is None:
        raise typer.Exit(EXIT_INSUFFICIENT)


def _print_compare(result: Mapping[str, Any]) -> None:
    from rich.table import Table

    from hbeval_core.vocab import NOT_MEASURED

    def fmt(v: Any, reason: Any = None, spec: str = ".3f") -> str:
        return f"undefined ({reason or NOT_MEASURED})" if v is None else format(v, spec)

    def pts(v: Any, reason: Any = None) -> str:
        return fmt(v, reason) if v is None else f"{100 * v:+.1f} pts"

    out = console()
    out.print(result["summary"], markup=False)
    if result.get("pairing") == "task_fault_type":
        out.print(
            "  pairing: by (task, fault type); the runs' measurements differ only in the seed",
            markup=False,
        )
    else:
        out.print("  pairing: by task (same measurement fingerprint)", markup=False)
    for message in result.get("refused") or ():
        out.print(f"  refused: {message}", markup=False)
    a, b = result["a"]["label"], result["b"]["label"]
    table = Table(title=f"Pass rate by fault type: {b} − {a}", title_justify="left")
    for col in (
        "fault type",
        a,
        b,
        "change",
        "paired interval",
        "paired p",
        "BH p",
        "conclusion",
        "pooled p",
        "Cohen's h",
    ):
        table.add_column(col, justify="left" if col == "fault type" else "right")
    for name, row in result["fault_types"].items():
        und = row["undefined"]
        ci = row["interval"]
        table.add_row(
            name,
            fmt(row["rate_a"], und.get("rate_a")),
            fmt(row["rate_b"], und.get("rate_b")),
            pts(row["change"], und.get("rate_a")),
            f"[{max(-100.0, 100 * ci[0]):+.0f}, {min(100.0, 100 * ci[1]):+.0f}]"
            if ci
            else fmt(None, und.get("interval")),
            fmt(row.get("p_paired"), und.get("p_paired"), ".2g"),
            fmt(row.get("p_adjusted"), und.get("p_adjusted"), ".2g"),
            " ".join(x for x in (row.get("conclusion"), row.get("effect")) if x) or "undefined",
            fmt(row["p"], und.get("p"), ".2g"),
            fmt(row["cohens_h"], und.get("cohens_h"), ".2f"),
        )
    out.print(table)
    metrics = Table(title="HB-Eval metrics", title_justify="left")
    for col in ("metric", a, b, "change"):
        metrics.add_column(col, justify="left" if col == "metric" else "right")
    for name, row in result["metrics"].items():
        und = row["undefined"]
        metrics.add_row(
            name.upper(),
            fmt(row["a"], und.get("a")),
            fmt(row["b"], und.get("b")),
            fmt(row["change"], und.get("change"), "+.3f"),
        )
    out.print(metrics)


# --------------------------------------------------------------------------- gate
def gate_cmd(
    report: Annotated[str, typer.Argument(metavar="REPORT.json", help=SOURCE_HELP)],
    floor: Annotated[
        list[str] | None,
        typer.Option(
            "--floor",
            help="METRIC=VALUE (repeat; 'off' removes one). Defaults pei=0.70 frr=0.65 "
            "irs=0.60 ti=3.00; csi and pass_rate may be added.",
        ),
    ] = None,
    lower_bound: Annotated[
        bool,
        typer.Option(
            "--lower-bound",
            help="Check proportion metrics on the lower bound of their 95% interval clustered "
            "by scenario.",
        ),
    ] = False,
    ceiling: Annotated[
        list[str] | None,
        typer.Option(
            "--max",
            help="NAME=COUNT ceiling (repeat; 'off' removes one). Default "
            "duplicate_side_effects=0.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="An earlier report of the same measurement fingerprint."),
    ] = None,
    max_drop: Annotated[
        float, typer.Option("--max-drop", help="Largest allowed drop from the baseline (0-1).")
    ] = 0.05,
    skip_security: Annotated[
        bool,
        typer.Option("--skip-security", help="Do not require the security gate to be measured."),
    ] = False,
    db: Annotated[str | None, typer.Option("--db", help=_DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Gate a report: floors, baseline regression, security. Exit 0 pass, 1 fail, 3 insufficient data."""
    from ..report.gate import GateRefused, parse_ceilings, parse_floors, run_gate

    try:
        floors = parse_floors(floor)
        ceilings = parse_ceilings(ceiling)
        _, data = load_one(report, db)
        base = load_one(baseline, db)[1] if baseline is not None else None
        result = run_gate(
            data,
            floors=floors,
            lower_bound=lower_bound,
            baseline=base,
            max_drop=max_drop,
            require_security=not skip_security,
            ceilings=ceilings,
        )
    except (GateRefused, ValueError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _emit_json(result.as_dict())
    else:
        typer.echo(f"gate: {result.verdict.upper()} (run {result.run_id})")
        for warning in result.warnings:
            typer.echo(f"  warning: {warning}")
        for reason in result.reasons:
            typer.echo(f"  - {reason}")
        if result.unmeasured:
            typer.echo(f"  unmeasured: {', '.join(result.unmeasured)}")
    raise typer.Exit(result.exit_code)
