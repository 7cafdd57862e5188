"""``hbeval proxy openai``: an OpenAI-compatible proxy that plants faults and records the calls."""

from __future__ import annotations

import os
import signal
from typing import Annotated

import typer

from ._common import EXIT_BAD_INPUT, plain_app
from ._proxy_options import BatteryOption, RecordOption, ScenarioOption

__all__ = ["UPSTREAM_KEY_ENV", "proxy_app"]

UPSTREAM_KEY_ENV = "HBEVAL_UPSTREAM_API_KEY"
"""Where the upstream's key may come from instead of ``--upstream-key`` (never stored)."""

proxy_app = plain_app(
    "proxy",
    "Front a model API (OpenAI-compatible): plant model and tool faults, record the calls.",
)


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends the proxy as Ctrl-C does: the sessions are still recorded."""
    raise KeyboardInterrupt


def _fail(message: str) -> typer.Exit:
    typer.echo(f"hbeval: {message}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


@proxy_app.command("openai")
def openai_cmd(
    upstream: Annotated[
        str,
        typer.Option(
            "--upstream",
            metavar="URL",
            help="The model API to forward to, e.g. http://127.0.0.1:8000/v1.",
        ),
    ],
    port: Annotated[
        int, typer.Option("--port", metavar="P", help="Port on 127.0.0.1 (0: any free port).")
    ] = 0,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            metavar="MODE[:TOOL][@CALLS]",
            help="A fault to plant (repeat): a model mode (rate_limit@0, model_error, "
            "stream_cut...; TOOL is then the model) or a tool mode planted in the tool's "
            "result as the model sees it (prompt_injection:lookup_order@0).",
        ),
    ] = None,
    battery: BatteryOption = None,
    scenario: ScenarioOption = None,
    record: RecordOption = None,
    session_idle: Annotated[
        float | None,
        typer.Option(
            "--session-idle",
            metavar="S",
            help="A call after S seconds without one starts a new session (a new client key "
            "always does).",
        ),
    ] = None,
    upstream_key: Annotated[
        str | None,
        typer.Option(
            "--upstream-key",
            help=f"The upstream's API key (or ${UPSTREAM_KEY_ENV}); never stored. Without it "
            "the client's own Authorization is forwarded.",
        ),
    ] = None,
    forbidden_tool: Annotated[
        str | None,
        typer.Option("--forbidden-tool", help="The tool planted instructions name."),
    ] = None,
) -> None:
    """An OpenAI-compatible proxy on 127.0.0.1: plant faults, record every model and tool call."""
    # Long because: typer reads the options from this signature (most of its lines); the body
    # checks them, serves until interrupted, then writes the record.
    from ..proxy._openai import OpenAIProxy
    from ..proxy._spec import FaultSpecError, fault_set, plan_of_battery

    if not 0 <= port <= 65535:
        raise _fail(f"--port must be a port from 0 to 65535, got {port}")
    if session_idle is not None and not session_idle > 0:
        raise _fail(f"--session-idle must be seconds > 0, got {session_idle}")
    if battery is not None and fault:
        raise _fail("give --fault or --battery, not both")
    try:
        faults = (
            plan_of_battery(battery, scenario) if battery is not None else fault_set(fault or ())
        )
    except FaultSpecError as exc:
        raise _fail(str(exc)) from None
    if faults.proxy:
        modes = ", ".join(sorted({f.mode for f in faults.proxy}))
        raise _fail(f"--fault: {modes} is planted by `hbeval mcp-proxy`, not on model calls")
    key = upstream_key or os.environ.get(UPSTREAM_KEY_ENV) or None
    try:
        proxy = OpenAIProxy(
            upstream,
            faults,
            port=port,
            upstream_key=key,
            session_idle=session_idle,
            forbidden_tool=forbidden_tool,
        )
        proxy.start()
    except ValueError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})") from None
    typer.echo(f"hbeval: OpenAI proxy at {proxy.base_url} -> {proxy.upstream}", err=True)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        proxy.close()
    if record is not None:
        run_id = proxy.write(record, label=battery)
        events = sum(len(r.events) for r in proxy.records)
        receipts = sum(len(r.receipts) for r in proxy.records)
        typer.echo(
            f"hbeval: recorded {len(proxy.records)} sessions, {events} events ({receipts} "
            f"receipts) as run {run_id} in {record}",
            err=True,
        )
