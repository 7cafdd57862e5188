"""The ``hbeval`` command line: every typer/rich command, the demo included.

JSON goes to stdout with ``--json``; progress and logs go to stderr. Exit codes: 0 ok, 1 a check
failed, 2 bad usage or input, 3 insufficient data. Only ``gate`` and ``passport verify`` turn
verdicts into exit codes.

One module per command (``_score``, ``_report``, ``_battery``, ...); the root app in ``_app``
imports a command's module only when that command runs, so start-up stays at typer's own cost.
Nothing below the command line imports it: what a command and another surface share (the MCP
server's tools, say) lives in the package that owns it, and the command only presents it.
"""

from __future__ import annotations

from ._app import COMMANDS, DEBUG_ENV, app, describe_error, main
from ._common import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    EXIT_INSUFFICIENT,
    EXIT_OK,
    console,
    fmt_value,
)

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
    "fmt_value",
    "main",
]
