"""What every command shares: exit codes, error lines, JSON output, the rich console.

Imports typer only; rich loads when a command first prints a table.
"""

from __future__ import annotations

import json
from typing import Any

import typer

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INSUFFICIENT = 3
EXIT_INTERRUPTED = 130

DB_HELP = "Store: a path or sqlite:///path (default ./.hbeval/hbeval.db)."
JSON_HELP = "Print JSON to stdout."
SOURCE_HELP = "A report file, FILE#LABEL for one report of a multi-report file, or a run id."
REDACT_HELP = (
    "Also redact this (repeat): a regex, or name:FIELD for a field whose value is secret. Known "
    "key shapes and fields like api_key, token, password are always redacted."
)


def console(*, stderr: bool = False) -> Any:
    """A rich console wide enough that "undefined (reason)" is never cut when piped."""
    from rich.console import Console

    c = Console(stderr=stderr)
    if not c.is_terminal:
        c = Console(stderr=stderr, width=160)
    return c


def err(message: str, prefix: str = "hbeval") -> None:
    """One line on stderr: ``<prefix>: message``."""
    typer.echo(f"{prefix}: {message}", err=True)


def fail(message: str, code: int = EXIT_BAD_INPUT, prefix: str = "hbeval") -> typer.Exit:
    """Print ``<prefix>: message`` on stderr; the caller raises the returned exit."""
    err(message, prefix)
    return typer.Exit(code)


def checked_redact(rules: list[str], prefix: str = "hbeval") -> list[str]:
    """``--redact`` rules, each checked: a bad one exits 2 naming the flag (``prefix`` as
    :func:`fail` takes it)."""
    from ..store import parse_redact_rules

    try:
        parse_redact_rules(rules)
    except ValueError as exc:
        raise fail(f"--redact: {exc}", prefix=prefix) from None
    return rules


def emit_json(data: Any, *, ensure_ascii: bool = False, default: Any = None) -> None:
    """Indented JSON on stdout; NaN is refused (an undefined figure is null, never NaN)."""
    typer.echo(
        json.dumps(data, indent=2, allow_nan=False, ensure_ascii=ensure_ascii, default=default)
    )


def fmt_value(value: float | None, reason: str | None, digits: int = 4) -> str:
    """A metric for people: the number, or ``undefined (reason)``; never a zero for a gap."""
    if value is None:
        return f"undefined ({reason or 'not_measured'})"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def plain_app(name: str, help: str, **options: Any) -> typer.Typer:
    """A sub-app with plain help (rich's help formatter costs more start-up than a command may)."""
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        **options,
    )
