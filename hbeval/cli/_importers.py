"""The ``import`` command: recordings from elsewhere become one hbeval run in the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import REDACT_HELP, checked_redact

__all__ = ["import_cmd"]

EXIT_BAD_INPUT = 2


def import_cmd(
    fmt: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT",
            help="tau-bench, tau2, pi, openclaw, dsh, hermes, otlp-json, or auto (detect from "
            "the files).",
        ),
    ],
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATH...", help="Recording files, or folders holding them."),
    ],
    db: Annotated[
        str | None,
        typer.Option(help="Store: a path or sqlite:///path (default ./.hbeval/hbeval.db)."),
    ] = None,
    agent_id: Annotated[
        str | None,
        typer.Option("--agent-id", help="Agent id of the run (default import-FORMAT)."),
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option("--run-id", help="Run id (default import-FORMAT-<fingerprint>)."),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="JSON object mapping run source ids (or task ids) to outcomes "
            "(true/false, 1/0 or pass/fail), for formats that record no success.",
        ),
    ] = None,
    group_by: Annotated[
        str,
        typer.Option(
            "--group-by",
            help="otlp-json: one trial per trace (default), or per session (session.id / "
            "gen_ai.conversation.id).",
        ),
    ] = "trace",
    redact: Annotated[
        list[str] | None,
        typer.Option(
            "--redact",
            help=REDACT_HELP,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON to stdout.")] = False,
) -> None:
    """Import recorded agent runs (tau-bench, tau2, Pi, OpenClaw, DSH, Hermes, OTLP/JSON) as one
    scored hbeval run."""
    result = _import(fmt, paths, db, agent_id, run_id, labels, group_by, redact or [])
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
        return
    _print_summary(result)


def _import(
    fmt: str,
    paths: list[Path],
    db: str | None,
    agent_id: str | None,
    run_id: str | None,
    labels: Path | None,
    group_by: str,
    redact: list[str],
) -> Any:
    """Import into the store; a refused import exits 2 with nothing stored."""
    from ..importers import ImportRefused, import_recordings
    from ..store import open_store

    checked_redact(redact)  # before the store is opened (or created)
    try:
        store = open_store(db)
    except ValueError as exc:
        typer.echo(f"hbeval: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    try:
        return import_recordings(
            fmt,
            paths,
            store=store,
            run_id=run_id,
            agent_id=agent_id,
            labels=labels,
            group_by=group_by,
            redact=redact,
        )
    except ImportRefused as exc:
        typer.echo(f"hbeval: import refused, nothing stored: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except ValueError as exc:  # the store refused a record
        typer.echo(f"hbeval: import refused, nothing stored: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        store.close()


def _print_summary(result: Any) -> None:
    """What was imported, what was skipped, and what to run next."""
    verb = "already imported as" if result.already_imported else "imported as"
    typer.echo(
        f"{result.format}: {len(result.files)} file(s) {verb} run {result.run_id} "
        f"(agent {result.agent_id})"
    )
    typer.echo(
        f"  {result.tasks} tasks, {result.trials} trials, {result.tool_calls} tool calls "
        f"({result.tool_errors} errors), {result.model_calls} model calls"
    )
    if not result.labelled:
        typer.echo(
            "  no success label in the recording: pass figures are undefined (no_success_label);"
            " --labels FILE maps run ids to outcomes"
        )
    changed = {k: n for k, n in result.stored_changes.items() if n}
    if changed:
        typer.echo(
            "  stored with changes (each changed event lists them in attrs.sanitised): "
            + ", ".join(f"{n} {k}" for k, n in changed.items())
        )
    for s in result.skipped[:5]:
        typer.echo(f"  skipped {s['count']} x {s['what']}: {s['reason']}")
    if len(result.skipped) > 5:
        typer.echo(f"  ... {len(result.skipped) - 5} more kinds skipped (--json lists them)")
    typer.echo(
        f"next: hbeval report {result.run_id} --html report.html; "
        f"hbeval gate {result.run_id} --skip-security (no attack was planted in a recording, "
        "so security is not measured)"
    )
