"""``battery run``'s fault families and process targets: ``--fault-family model``, and
``--command "CMD" --via-proxy openai --upstream URL [--via-proxy mcp=SERVER] [--question-as-arg]``.

A process target runs once per trial behind its own ``hbeval proxy openai`` and, with
``--via-proxy mcp=SERVER``, its own ``hbeval mcp-proxy`` in front of that MCP server
(``hbeval.proxy._command``); its tasks come from ``--tasks``. The upstream's key, when the
upstream needs one, comes from ``$HBEVAL_UPSTREAM_API_KEY`` and is never stored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

import typer

from hbeval_core.vocab import FAULT_FAMILIES

__all__ = [
    "CommandOption",
    "FaultFamilyOption",
    "ProxyFlags",
    "QuestionAsArgOption",
    "UpstreamOption",
    "ViaProxyOption",
    "adapter_for",
    "family_battery",
    "load_command_target",
    "proxy_flags",
    "proxy_note",
    "refuse_model_faults",
]

VIA_PROXIES = ("openai",)
UPSTREAM_KEY_ENV = "HBEVAL_UPSTREAM_API_KEY"

CommandOption = Annotated[
    str | None,
    typer.Option(
        "--command",
        metavar="CMD",
        help="Run this process per trial instead of TARGET (with --via-proxy): the question "
        "on stdin, the answer on stdout.",
    ),
]
ViaProxyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--via-proxy",
        help="openai: the process's model calls go through hbeval proxy openai "
        "(OPENAI_BASE_URL and a per-trial OPENAI_API_KEY), which plants the trial's faults. "
        "mcp=SERVER (repeatable with openai): the process starts its MCP server as "
        "$HBEVAL_MCP_COMMAND ($HBEVAL_MCP_ARGV as JSON), hbeval mcp-proxy in front of SERVER, "
        "which plants the tool faults.",
    ),
]
UpstreamOption = Annotated[
    str | None,
    typer.Option(
        "--upstream",
        metavar="URL",
        help=f"With --via-proxy: the model API the proxy forwards to (key: ${UPSTREAM_KEY_ENV}).",
    ),
]
QuestionAsArgOption = Annotated[
    bool,
    typer.Option(
        "--question-as-arg", help="With --command: pass the question as the last argument."
    ),
]
FaultFamilyOption = Annotated[
    str,
    typer.Option(
        "--fault-family", help="tool (the batteries above) or model (the model API fails)."
    ),
]


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


@dataclass(frozen=True)
class ProxyFlags:
    """A process target's flags, checked."""

    command: str
    via: str
    """``openai`` (the model calls are proxied, with or without an MCP server) or ``mcp``."""
    upstream: str | None
    question_as_arg: bool
    mcp_server: str | None = None


def _mcp_server(vias: list[str]) -> str | None:
    """The ``mcp=SERVER`` of ``--via-proxy`` (None without one); a bad one exits 2."""
    servers = [v.split("=", 1)[1] for v in vias if v.startswith("mcp=")]
    if len(servers) > 1:
        _fail("--via-proxy mcp=SERVER: give one MCP server")
    if servers and not servers[0].strip():
        _fail("--via-proxy mcp=SERVER: SERVER is empty; give the MCP server's command line")
    return servers[0] if servers else None


def proxy_flags(
    command: str | None,
    via: list[str] | None,
    upstream: str | None,
    question_as_arg: bool,
    target: str | None,
) -> ProxyFlags | None:
    """The process target's flags (None without ``--command``); a bad combination exits 2."""
    if command is None:
        for flag, value in (("--via-proxy", via), ("--upstream", upstream)):
            if value:
                _fail(f"{flag} needs --command (the process to run through the proxy)")
        if question_as_arg:
            _fail("--question-as-arg needs --command")
        return None
    if target is not None:
        _fail("give TARGET or --command, not both")
    if not command.strip():
        _fail("--command is empty: give the process to run, e.g. --command 'node agent.js'")
    vias = list(via or ())
    bad = [v for v in vias if v not in VIA_PROXIES and not v.startswith("mcp=")]
    if not vias or bad:
        got = repr(bad[0]) if bad else "none"
        _fail(f"--command needs --via-proxy openai and/or --via-proxy mcp=SERVER (got {got})")
    server = _mcp_server(vias)
    if "openai" not in vias:
        if upstream is not None:
            _fail("--upstream needs --via-proxy openai (the proxy that forwards to it)")
        return ProxyFlags(command, "mcp", None, question_as_arg, server)
    if upstream is None:
        _fail("--via-proxy openai needs --upstream URL: the model API the proxy forwards to")
    if not upstream.startswith(("http://", "https://")):
        _fail(
            f"--upstream must be an http(s) URL such as http://127.0.0.1:8000/v1 (got {upstream!r})"
        )
    return ProxyFlags(command, "openai", upstream, question_as_arg, server)


def load_command_target(f: Any, m: Any, pick: Any) -> tuple[str, Any, str, Any]:
    """``(target_ref, CommandTarget, tasks_ref, tasks)`` for ``--command`` (tasks: ``--tasks``)."""
    from ..proxy._command import CommandTarget
    from ..runner.loader import TaskFileError, load_tasks

    via: ProxyFlags = f.via
    tasks_ref = pick(f.tasks, "tasks", None)
    if tasks_ref is None:
        _fail("--command needs --tasks (a task file or module:attr): the process has no module")
    try:
        task_list = load_tasks(tasks_ref)
    except TaskFileError as exc:
        _fail(f"--tasks: {exc}")
    target = CommandTarget(
        via.command,
        via.upstream,
        question_as_arg=via.question_as_arg,
        upstream_key=os.environ.get(UPSTREAM_KEY_ENV) or None,
        mcp_server=via.mcp_server,
    )
    return f"command:{via.command}", target, str(tasks_ref), task_list


def proxy_note(via: ProxyFlags | None) -> None:
    """After the report: what a trace seen only through the proxy can and cannot support."""
    if via is None:
        return
    from ..proxy._command import EVIDENCE, MCP_EVIDENCE, MCP_ONLY_EVIDENCE

    ev = EVIDENCE
    if via.mcp_server is not None:
        ev = MCP_EVIDENCE if via.upstream is not None else MCP_ONLY_EVIDENCE
    typer.echo(
        f"evidence: {ev['note']} (it holds {', '.join(ev['seen'])}; it cannot "
        f"support: {', '.join(ev['cannot_support'])})",
        err=True,
    )


def adapter_for(target: Any) -> Any:
    """The adapter ``run_battery`` takes: ``CommandAdapter`` for a process, else detection."""
    from ..proxy._command import CommandAdapter, CommandTarget

    return CommandAdapter() if isinstance(target, CommandTarget) else None


def refuse_model_faults(battery: Any, via: ProxyFlags | None) -> None:
    """Model faults need the HTTP layer: only a process run through the proxy receives them."""
    from hbeval_core.faults.model import MODEL_FAULTS_NEED_PROXY, has_model_faults

    if (via is None or via.upstream is None) and has_model_faults(battery):
        _fail(
            f"--battery: {MODEL_FAULTS_NEED_PROXY}, or run a process with --command CMD "
            "--via-proxy openai --upstream URL"
        )


def family_battery(
    family: str,
    battery: str,
    seed: int,
    fault_types: list[str] | None,
    domains: list[str] | None,
    scenarios_given: bool,
) -> Any:
    """``--fault-family model``: the model fault family's own battery."""
    from hbeval_core.faults.userbattery import model_family_battery

    if family not in FAULT_FAMILIES:
        _fail(f"--fault-family must be one of {', '.join(FAULT_FAMILIES)} (got {family!r})")
    given = [
        flag
        for flag, value in (
            ("--battery", battery != "hbeval"),
            ("--fault-type", fault_types),
            ("--domain", domains),
            ("--scenarios", scenarios_given),
        )
        if value
    ]
    if given:
        _fail(f"{given[0]}: --fault-family {family} names its own scenarios; remove {given[0]}")
    return model_family_battery(seed)
