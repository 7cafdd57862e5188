"""The root ``hbeval`` command: version, the error guard, and lazily loaded subcommands.

Each subcommand lives in its own module and is imported only when it is run (or its own help
is asked for), so ``hbeval --version`` and ``hbeval --help`` load typer and this module and
nothing else. The root help lists the commands from ``COMMANDS`` without importing them; a
test keeps those one-line helps equal to the commands' own.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Annotated, Any, NamedTuple

import typer
from typer.core import TyperGroup

from hbeval_core import __version__

from ._common import EXIT_BAD_INPUT, EXIT_OK

DEBUG_ENV = "HBEVAL_DEBUG"
"""Set to 1 to see the traceback of an unexpected error instead of its one-line message."""


class LazyCommand(NamedTuple):
    """Where a subcommand lives: ``module`` (in this package) and ``attr`` (a typer app or a
    command function); ``help`` is its one-line help for the root listing."""

    module: str
    attr: str
    help: str


COMMANDS: dict[str, LazyCommand] = {
    "score": LazyCommand(
        "_score", "score", "Live metrics, breaches and halts of a recorded trace."
    ),
    "demo": LazyCommand(
        "_demo",
        "demo",
        "The main job on the embedded default: run the demo agents and report side by side.",
    ),
    "panel": LazyCommand(
        "_panel",
        "panel",
        "Run the reference panel (agents of known behaviour) and show what the figures separate.",
    ),
    "init": LazyCommand(
        "_init", "init", "Write a starter tasks.yaml and verifiers.py beside an agent file."
    ),
    "report": LazyCommand(
        "_report",
        "report_cmd",
        "Show a report: summary table, scores, and optionally a self-contained HTML page.",
    ),
    "compare": LazyCommand(
        "_report",
        "compare_cmd",
        "Compare run B against run A (same measurement fingerprint), paired per task.",
    ),
    "rescore": LazyCommand(
        "_rescore",
        "rescore_cmd",
        "Score a stored run again under the current scoring version, as a new report beside "
        "the old.",
    ),
    "gate": LazyCommand(
        "_report",
        "gate_cmd",
        "Gate a report: floors, baseline regression, security. Exit 0 pass, 1 fail, 3 "
        "insufficient data.",
    ),
    "plan": LazyCommand(
        "_plan",
        "plan_cmd",
        "Scenarios x trials needed to detect a drop in FRR or the pass rate (power analysis).",
    ),
    "import": LazyCommand(
        "_importers",
        "import_cmd",
        "Import recorded agent runs (tau-bench, tau2, Pi, OpenClaw, DSH, Hermes, OTLP/JSON) as "
        "one scored hbeval run.",
    ),
    "replay": LazyCommand(
        "_replay",
        "replay_cmd",
        "Replay a recorded run on a new agent version; exit 1 when the invariant violations "
        "exceed the budget.",
    ),
    "mcp": LazyCommand(
        "_mcp", "mcp_cmd", "Serve the store read-only to MCP clients (stdio by default)."
    ),
    "mcp-proxy": LazyCommand(
        "_proxy",
        "mcp_proxy_cmd",
        "Front an MCP server: list its tools, plant faults in its calls, record the session.",
    ),
    "proxy": LazyCommand(
        "_proxy_openai",
        "proxy_app",
        "Front a model API (OpenAI-compatible): plant model and tool faults, record the calls.",
    ),
    "schema": LazyCommand("_schema", "schema_app", "Print JSON Schemas of hbeval's formats."),
    "runs": LazyCommand("_runs", "runs_app", "Runs recorded in the store."),
    "store": LazyCommand("_store", "store_app", "Stores themselves: copy runs between them."),
    "battery": LazyCommand(
        "_battery", "battery_app", "Build, inspect and run fingerprinted fault batteries."
    ),
    "memory": LazyCommand(
        "_memory",
        "memory_app",
        "Evaluation-driven memory: list, show, delete and explain stored episodes.",
    ),
    "passport": LazyCommand(
        "_passport", "passport_app", "Signed passports (hbeval-passport/1): keygen, sign, verify."
    ),
    "export": LazyCommand(
        "_export",
        "export_app",
        "Send a run to other tools (OTLP/HTTP: Phoenix, Langfuse, any collector).",
    ),
}
"""Every subcommand, in the order the root help lists them."""


def describe_error(exc: BaseException) -> str:
    """One line for people about an error no command handled itself (exit 2, no traceback)."""
    import sqlite3

    from ..store.sqlite import write_failure

    if isinstance(exc, RecursionError):
        text = "the input is nested too deeply to read (more levels than the JSON reader allows)"
    elif isinstance(exc, UnicodeDecodeError):
        text = f"the input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    elif isinstance(exc, sqlite3.Error) and write_failure("the store", exc) is not None:
        text = str(write_failure("the store", exc))
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


def _stdout_gone() -> bool:
    """True when stdout is a pipe whose reader has gone (``hbeval runs list | head -1``).

    A ``BrokenPipeError`` can also come from a store's connection; only one on stdout is the
    reader leaving, and that is no error of hbeval's: click ends such a command quietly (exit 1,
    nothing more written), as it does for ``hbeval --help | head -1``.
    """
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except Exception:  # no poll (Windows), stdout replaced or closed: not known to be gone
        return False


def _click_flow() -> tuple[type[BaseException], ...]:
    """Exceptions click uses for control flow (exit codes, usage errors, aborts): typer's own,
    those of the click it runs on (typer >= 0.29 carries its own copy), and the click package's
    when something loaded it (it is not imported for this)."""
    kinds: list[type[BaseException]] = [typer.Exit, typer.Abort]
    carriers = ["typer._click.exceptions", "click.exceptions"]
    for name in carriers:
        if name.startswith("click.") and "click" not in sys.modules:
            continue
        try:
            module = import_module(name)
        except ImportError:
            continue
        kinds += [
            k
            for k in (getattr(module, n, None) for n in ("ClickException", "Exit", "Abort"))
            if isinstance(k, type) and issubclass(k, BaseException)
        ]
    return tuple(dict.fromkeys(kinds))


def _debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes")


def _load(name: str) -> Any:
    """The click command of subcommand ``name``, built from its module on first use."""
    entry = COMMANDS[name]
    target = getattr(import_module(f"{__package__}.{entry.module}"), entry.attr)
    command: Any
    if isinstance(target, typer.Typer):  # a group, even of one command (``runs list``)
        command = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(name)(target)
        command = typer.main.get_command(single)
    _settle_help_options(command)
    return command


def _settled(option: Any) -> Any:
    """``--help`` that defaults to False rather than None.

    typer (0.29) runs every option value that is not already a bool through pydantic, and its
    ``--help`` flag has no default, so each level of ``hbeval battery run`` imported pydantic
    (about 70 ms) just to read "not given". A False default skips that; the flag is unchanged.
    """
    if option is not None and getattr(option, "default", False) is None:
        option.default = False
    return option


def _settle_help_options(command: Any) -> None:
    """Give ``command`` and every command under it a ``--help`` that defaults to False."""
    original = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        return _settled(original(ctx))

    command.get_help_option = get_help_option
    for sub in (getattr(command, "commands", None) or {}).values():
        _settle_help_options(sub)


class _RootGroup(TyperGroup):
    """The root command: subcommands load on first use, and an exception no command handled
    becomes one line and exit 2.

    Exits, usage errors and interrupts pass through as click handles them; ``HBEVAL_DEBUG=1``
    lets the original exception (and its traceback) through.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: dict[str, Any] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return list(dict.fromkeys([*super().list_commands(ctx), *COMMANDS]))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        known = super().get_command(ctx, cmd_name)
        if known is not None or cmd_name not in COMMANDS:
            return known
        if cmd_name not in self._loaded:
            self._loaded[cmd_name] = _load(cmd_name)
        return self._loaded[cmd_name]

    def get_help_option(self, ctx: Any) -> Any:
        return _settled(super().get_help_option(ctx))

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command list from ``COMMANDS``, shortened as click shortens a command's help."""
        rows = [
            (name, _Listing(name=name, help=COMMANDS[name].help))
            for name in self.list_commands(ctx)
            if name in COMMANDS
        ]
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if isinstance(exc, _click_flow()) or _debugging():
                raise
            if isinstance(exc, BrokenPipeError) and _stdout_gone():
                raise  # the reader of stdout left: click stops quietly
            typer.echo(f"hbeval: {describe_error(exc)}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None


_Listing = typer.core.TyperCommand
"""A command that only carries a help text: click's own shortening of it for the listing."""

app = typer.Typer(
    name="hbeval",
    help="Measure how tool-using agents behave when things break.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=_RootGroup,
)


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


def main() -> None:
    """Console entry point: no traceback reaches the user unless HBEVAL_DEBUG=1 asks for it."""
    try:
        app()
    except Exception as exc:  # raised outside a command (the guard covers commands)
        if _debugging():
            raise
        typer.echo(f"hbeval: {describe_error(exc)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
