"""``battery run``'s fault families and process targets: ``--fault-family model``, and
``--command "CMD" --via-proxy openai --upstream URL [--question-as-arg]``.

A process target runs once per trial behind its own ``hbeval proxy openai``
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
    str | None,
    typer.Option(
        "--via-proxy",
        help="openai: the process's model calls go through hbeval proxy openai "
        "(OPENAI_BASE_URL and a per-trial OPENAI_API_KEY), which plants the trial's faults.",
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
    upstream: str
    question_as_arg: bool


def proxy_flags(
    command: str | None,
    via: str | None,
    upstream: str | None,
    question_as_arg: bool,
    target: str | None,
) -> ProxyFlags | None:
    """The process target's flags (None without ``--command``); a bad combination exits 2."""
    if command is None:
        for flag, value in (("--via-proxy", via), ("--upstream", upstream)):
            if value is not None:
                _fail(f"{flag} needs --command (the process to run through the proxy)")
        if question_as_arg:
            _fail("--question-as-arg needs --command")
        return None
    if target is not None:
        _fail("give TARGET or --command, not both")
    if not command.strip():
        _fail("--command is empty: give the process to run, e.g. --command 'node agent.js'")
    if via not in VIA_PROXIES:
        _fail(f"--command needs --via-proxy {' or '.join(VIA_PROXIES)} (got {via!r})")
    if upstream is None:
        _fail("--via-proxy openai needs --upstream URL: the model API the proxy forwards to")
    if not upstream.startswith(("http://", "https://")):
        _fail(
            f"--upstream must be an http(s) URL such as http://127.0.0.1:8000/v1 (got {upstream!r})"
        )
    return ProxyFlags(command, via, upstream, question_as_arg)


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
    )
    return f"command:{via.command}", target, str(tasks_ref), task_list


def proxy_note(via: ProxyFlags | None) -> None:
    """After the report: what a trace seen only through the proxy can and cannot support."""
    if via is None:
        return
    from ..proxy._command import EVIDENCE

    typer.echo(
        f"evidence: {EVIDENCE['note']} (it holds {', '.join(EVIDENCE['seen'])}; it cannot "
        f"support: {', '.join(EVIDENCE['cannot_support'])})",
        err=True,
    )


def adapter_for(target: Any) -> Any:
    """The adapter ``run_battery`` takes: ``CommandAdapter`` for a process, else detection."""
    from ..proxy._command import CommandAdapter, CommandTarget

    return CommandAdapter() if isinstance(target, CommandTarget) else None


def refuse_model_faults(battery: Any, via: ProxyFlags | None) -> None:
    """Model faults need the HTTP layer: only a process run through the proxy receives them."""
    from hbeval_core.faults.model import MODEL_FAULTS_NEED_PROXY, has_model_faults

    if via is None and has_model_faults(battery):
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
