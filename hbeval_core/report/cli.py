"""The ``report``, ``compare``, ``gate`` and ``passport`` commands, and the demo's closing step.

The main ``hbeval`` app mounts these (hbeval_core/cli.py)::

    from .report.cli import compare_cmd, gate_cmd, passport_app, report_cmd
    app.command("report")(report_cmd)
    app.command("compare")(compare_cmd)
    app.command("gate")(gate_cmd)
    app.add_typer(passport_app, name="passport")

A report argument is a report file, ``FILE#LABEL`` for one report of a file that holds several
(the demo's ``{"careful": ..., "naive": ...}``), or a run id looked up in the store (``--db``,
default ``./.hbeval/hbeval.db``). JSON goes to stdout with ``--json``; messages go to stderr.
Exit codes: 0 ok, 1 a check failed, 2 bad usage or input, 3 insufficient data; only ``gate``
and ``passport verify`` turn verdicts into exit codes.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = [
    "compare_cmd",
    "finish_demo",
    "gate_cmd",
    "load_reports",
    "passport_app",
    "report_cmd",
]

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INSUFFICIENT = 3

passport_app = typer.Typer(
    help="Signed passports (hbeval-passport/1): keygen, sign, verify.",
    no_args_is_help=True,
    add_completion=False,
)

_DB_HELP = "Store: a path or sqlite:///path (default ./.hbeval/hbeval.db)."
_SOURCE_HELP = "A report file, FILE#LABEL for one report of a multi-report file, or a run id."


class _InputError(ValueError):
    """Bad input: the command exits 2 with this message."""


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    typer.echo(f"hbeval: {message}", err=True)
    return typer.Exit(code)


def _emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, allow_nan=False, ensure_ascii=False, default=str))


# --------------------------------------------------------------------------- loading
def _open_store(db: str | None, *, required: bool) -> Any:
    """The store at ``db`` (or the default), or None when it does not exist and is optional."""
    from ..store import open_store, resolve_path, store_exists

    if not store_exists(db):
        if required or db is not None:
            raise _InputError(
                f"no store at {resolve_path(db)}; pass --db with the store the run was saved in"
            )
        return None
    return open_store(db, read_only=True)


def _reports_in(data: Any, where: str) -> dict[str, dict[str, Any]]:
    from .model import ReportFormatError, validate_report

    def label_of(report: Mapping[str, Any]) -> str:
        run = report.get("run")
        agent = run.get("agent_id") if isinstance(run, Mapping) else None
        return str(agent or report.get("run_id") or "report")

    try:
        if isinstance(data, Mapping) and "format" in data:
            validate_report(data)
            return {label_of(data): dict(data)}
        if (
            isinstance(data, Mapping)
            and data
            and all(isinstance(v, Mapping) and "format" in v for v in data.values())
        ):
            for v in data.values():
                validate_report(v)
            return {str(k): dict(v) for k, v in data.items()}
    except ReportFormatError as exc:
        raise _InputError(f"{where}: {exc}") from None
    raise _InputError(
        f"{where} holds neither an hbeval-report/1 report nor a mapping of label -> report"
    )


def load_reports(
    source: str, db: str | None = None, *, want_store: bool = False
) -> tuple[dict[str, dict[str, Any]], Any]:
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


def _load_one(source: str, db: str | None) -> tuple[str, dict[str, Any]]:
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
    source: Annotated[str, typer.Argument(metavar="RUN_ID|REPORT.json", help=_SOURCE_HELP)],
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
    from .._outpaths import output_problem
    from .html import store_traces, write_html
    from .scores import report_scores
    from .terminal import print_summary

    for flag, target in (("--html", html), ("--out", out)):
        problem = output_problem(target, make_parents=True) if target is not None else None
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
            data: Any = next(iter(reports.values())) if len(reports) == 1 else reports
            out.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
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
                    label: {"scores": report_scores(r), "report": r} for label, r in reports.items()
                },
            }
        )
        return
    for report in reports.values():
        print_summary(report, _console())
        typer.echo(report_scores(report)["headline"])


def _console() -> Any:
    from rich.console import Console

    c = Console()
    return c if c.is_terminal else Console(width=160)


# --------------------------------------------------------------------------- compare
def compare_cmd(
    a: Annotated[str, typer.Argument(metavar="A", help=_SOURCE_HELP)],
    b: Annotated[str, typer.Argument(metavar="B", help=_SOURCE_HELP)],
    db: Annotated[str | None, typer.Option("--db", help=_DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Compare run B against run A (same measurement fingerprint), paired per task."""
    from .compare import CompareRefused, compare_reports

    try:
        label_a, report_a = _load_one(a, db)
        label_b, report_b = _load_one(b, db)
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

    from ..vocab import NOT_MEASURED

    def fmt(v: Any, reason: Any = None, spec: str = ".3f") -> str:
        return f"undefined ({reason or NOT_MEASURED})" if v is None else format(v, spec)

    def pts(v: Any, reason: Any = None) -> str:
        return fmt(v, reason) if v is None else f"{100 * v:+.1f} pts"

    console = _console()
    console.print(result["summary"], markup=False)
    for message in result.get("refused") or ():
        console.print(f"  refused: {message}", markup=False)
    a, b = result["a"]["label"], result["b"]["label"]
    table = Table(title=f"Pass rate by fault type: {b} − {a}", title_justify="left")
    for col in (
        "fault type",
        a,
        b,
        "change",
        "paired interval",
        "paired p",
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
            fmt(row["p"], und.get("p"), ".2g"),
            fmt(row["cohens_h"], und.get("cohens_h"), ".2f"),
        )
    console.print(table)
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
    console.print(metrics)


# --------------------------------------------------------------------------- gate
def gate_cmd(
    report: Annotated[str, typer.Argument(metavar="REPORT.json", help=_SOURCE_HELP)],
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
            "--lower-bound", help="Check proportion metrics on their lower 95% Wilson bound."
        ),
    ] = False,
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
    from .gate import GateRefused, parse_floors, run_gate

    try:
        floors = parse_floors(floor)
        _, data = _load_one(report, db)
        base = _load_one(baseline, db)[1] if baseline is not None else None
        result = run_gate(
            data,
            floors=floors,
            lower_bound=lower_bound,
            baseline=base,
            max_drop=max_drop,
            require_security=not skip_security,
        )
    except (GateRefused, ValueError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _emit_json(result.as_dict())
    else:
        typer.echo(f"gate: {result.verdict.upper()} (run {result.run_id})")
        for reason in result.reasons:
            typer.echo(f"  - {reason}")
        if result.unmeasured:
            typer.echo(f"  unmeasured: {', '.join(result.unmeasured)}")
    raise typer.Exit(result.exit_code)


# --------------------------------------------------------------------------- passport
@passport_app.command("keygen")
def passport_keygen(
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Private key file (default ./.hbeval/passport-key.pem)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing key.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Create an Ed25519 signing key (PEM, mode 0600) and its public key beside it (.pub)."""
    import base64

    from .passport import PassportError, key_id, public_key_raw, write_private_key

    try:
        path, key = write_private_key(out, force=force)
    except (PassportError, OSError) as exc:
        raise _fail(str(exc)) from None
    raw = public_key_raw(key)
    info = {
        "private_key": str(path),
        "public_key_file": f"{path}.pub",
        "public_key": base64.b64encode(raw).decode("ascii"),
        "key_id": key_id(raw),
    }
    if as_json:
        _emit_json(info)
        return
    typer.echo(f"signing key written to {path} (mode 0600; keep it secret)")
    typer.echo(f"public key {info['public_key']} (key_id {info['key_id']}) in {path}.pub")


@passport_app.command("sign")
def passport_sign(
    report: Annotated[str, typer.Argument(metavar="REPORT.json", help=_SOURCE_HELP)],
    key: Annotated[
        Path | None,
        typer.Option("--key", help="Signing key PEM (default: $HBEVAL_PASSPORT_KEY)."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write the passport.")] = Path(
        "hbeval-passport.json"
    ),
    days: Annotated[int, typer.Option("--days", help="Days until it expires (1-365).")] = 90,
    db: Annotated[str | None, typer.Option("--db", help=_DB_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Build a passport from a report and sign it with Ed25519."""
    from .passport import (
        PassportError,
        build_passport,
        load_private_key,
        render_passport,
        sign_passport,
    )

    try:
        _, data = _load_one(report, db)
        private = load_private_key(key)
        passport = sign_passport(build_passport(data, days=days), private)
        out.write_text(render_passport(passport), encoding="utf-8")
    except (PassportError, ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    if as_json:
        _emit_json({"passport": str(out), **passport})
        return
    typer.echo(
        f"passport for agent {passport['agent']['agent_id']} written to {out} (key_id "
        f"{passport['signer']['key_id']}, expires {passport['expires_at']})"
    )


@passport_app.command("verify")
def passport_verify(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A passport file.")],
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="Trusted public key: PEM file, base64 raw key, or a key id from the "
            "trusted-keys file (pins the signer).",
        ),
    ] = None,
    trusted_keys: Annotated[
        Path | None,
        typer.Option(
            "--trusted-keys",
            help="Trusted-keys file (default $HBEVAL_TRUSTED_KEYS or "
            "~/.config/hbeval/trusted_keys): lines '<base64 key> [label]'.",
        ),
    ] = None,
    no_key_check: Annotated[
        bool,
        typer.Option(
            "--no-key-check",
            help="Accept a passport whose signer was not checked (integrity only): exit 0, not 3.",
        ),
    ] = False,
    any_layout: Annotated[
        bool,
        typer.Option(
            "--any-layout", help="Accept a re-formatted file whose signed content is intact."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Verify a passport: integrity, content, expiry and who signed it.

    Exit 0 valid with the signer pinned, 1 not valid, 2 bad input, 3 valid but authenticity not
    checked (no --key and no trusted-keys file; anyone can re-sign a passport with their own key)
    unless --no-key-check.
    """
    from ._passport_schema import default_trusted_keys_path, is_key_id, parse_trusted_keys
    from .passport import PassportError, load_public_key, verify_passport

    keys_path = trusted_keys if trusted_keys is not None else default_trusted_keys_path()
    try:
        data = file.read_bytes()
        known = []
        if trusted_keys is not None or keys_path.is_file():
            known = parse_trusted_keys(keys_path.read_text(encoding="utf-8"), str(keys_path))
        trusted = None
        if key is not None:
            by_id = [k for k in known if k.key_id == key.strip()]
            if by_id:
                trusted = by_id[0].public_raw
            elif is_key_id(key.strip()) and not Path(key).exists():
                raise PassportError(
                    f"--key {key}: no key with that id in the trusted-keys file {keys_path}"
                )
            else:
                trusted = load_public_key(key)
    except (PassportError, OSError, ValueError) as exc:
        raise _fail(str(exc)) from None
    result = verify_passport(
        data, trusted_key=trusted, trusted_keys=known, strict_layout=not any_layout
    )
    unchecked = result.valid and result.authenticity == "not_checked"
    if as_json:
        _emit_json({"file": str(file), **result.as_dict()})
    elif result.valid:
        who = (
            "pinned to a trusted key"
            if result.authenticity == "pinned"
            else "NOT CHECKED (pass --key or a trusted-keys file)"
        )
        typer.echo(
            f"VALID passport for agent {result.agent_id} (verdict {result.verdict}), signed by "
            f"key {result.key_id}, expires {result.expires_at}; authenticity: {who}"
        )
        for note in result.notes:
            typer.echo(f"  note: {note}")
    else:
        typer.echo(f"INVALID passport {file}:", err=True)
        for problem in result.problems:
            typer.echo(f"  - {problem}", err=True)
    if not result.valid:
        raise typer.Exit(EXIT_CHECK_FAILED)
    raise typer.Exit(EXIT_INSUFFICIENT if unchecked and not no_key_check else EXIT_OK)


# --------------------------------------------------------------------------- demo
def finish_demo(
    reports: Mapping[str, Mapping[str, Any]],
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
    from ..store import open_store
    from .html import store_traces, write_html
    from .passport import (
        build_passport,
        load_private_key,
        public_key_pem,
        render_passport,
        sign_passport,
        write_private_key,
    )

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
            pub.write_bytes(public_key_pem(private))
    else:
        key_path, private = write_private_key(key_path)
    first = next(iter(reports.values()))
    passport = sign_passport(build_passport(first, now=now), private)
    passport_path = out_dir / "hbeval-passport.json"
    passport_path.write_text(render_passport(passport), encoding="utf-8")
    return {
        "html": html,
        "passport": passport_path,
        "key": key_path,
        "public_key": Path(f"{key_path}.pub"),
    }
