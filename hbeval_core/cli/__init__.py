"""The ``hbeval`` command line: every typer/rich command, the demo included.

JSON goes to stdout with ``--json``; progress and logs go to stderr. Exit codes: 0 ok, 1 a check
failed, 2 bad usage or input, 3 insufficient data. Only ``gate`` and ``passport verify`` turn
verdicts into exit codes.

One module per command (``_score``, ``_report``, ``_battery``, ...); the root app in ``_app``
imports a command's module only when that command runs, so start-up stays at typer's own cost.
Helpers other packages reuse (``score_trace``, ``runs_document``, ...) load on first access.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._app import COMMANDS, DEBUG_ENV, app, describe_error, main
from ._common import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    EXIT_INSUFFICIENT,
    EXIT_OK,
    console,
    fmt_value,
)

# name -> module of this package that defines it; resolved on first attribute access.
_EXPORTS: dict[str, str] = {
    "parse_halt": "_score",
    "score_trace": "_score",
    "runs_document": "_runs",
    "load_reports": "_report",
    "finish_demo": "_demo",
    "open_memory": "_memory",
}

__all__ = [
    "COMMANDS",
    "DEBUG_ENV",
    "EXIT_BAD_INPUT",
    "EXIT_CHECK_FAILED",
    "EXIT_INSUFFICIENT",
    "EXIT_OK",
    "app",
    "console",
    "describe_error",
    "finish_demo",
    "fmt_value",
    "load_reports",
    "main",
    "open_memory",
    "parse_halt",
    "runs_document",
    "score_trace",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from ._demo import finish_demo
    from ._memory import open_memory
    from ._report import load_reports
    from ._runs import runs_document
    from ._score import parse_halt, score_trace
