"""``hbeval mcp-proxy``: front an MCP server, plant faults in its calls, record the session."""

from __future__ import annotations

import signal
from typing import Annotated

import typer

from ._common import EXIT_BAD_INPUT
from ._proxy_options import BatteryOption, RecordOption, ScenarioOption

__all__ = ["mcp_proxy_cmd"]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _fail(message: str) -> typer.Exit:
    typer.echo(f"hbeval: {message}", err=True)
    return typer.Exit(EXIT_BAD_INPUT)


def mcp_proxy_cmd(
    command: Annotated[
        list[str],
        typer.Argument(
            metavar="-- SERVER CMD...",
            help="The upstream MCP server's command (stdio), after --.",
        ),
    ],
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            metavar="MODE[:TOOL][@CALLS]",
            help="A fault to plant (repeat): a tool fault mode, protocol_error, "
            "poisoned_description or definition_change; e.g. timeout:lookup_order@0.",
        ),
    ] = None,
    battery: BatteryOption = None,
    scenario: ScenarioOption = None,
    record: RecordOption = None,
    http: Annotated[
        int | None,
        typer.Option("--http", metavar="PORT", help="Serve streamable HTTP on 127.0.0.1:PORT/mcp."),
    ] = None,
    forbidden_tool: Annotated[
        str | None,
        typer.Option("--forbidden-tool", help="The tool planted instructions name."),
    ] = None,
) -> None:
    """Front an MCP server: list its tools, plant faults in its calls, record the session."""
    import anyio

    from ..proxy._mcp import McpProxy
    from ..proxy._spec import FaultSpecError, fault_set, plan_of_battery

    if http is not None and not 1 <= http <= 65535:
        raise _fail(f"--http must be a port from 1 to 65535, got {http}")
    if battery is not None and fault:
        raise _fail("give --fault or --battery, not both")
    try:
        faults = (
            plan_of_battery(battery, scenario) if battery is not None else fault_set(fault or ())
        )
    except FaultSpecError as exc:
        raise _fail(str(exc)) from None
    if faults.model is not None:
        raise _fail("model fault modes are planted on model calls: use `hbeval proxy openai`")
    proxy = McpProxy(command, faults, forbidden_tool=forbidden_tool)
    # A client that closed the session terminates a server slow to exit (the mcp SDK does
    # after 2 s): SIGTERM ends the proxy as Ctrl-C does, so the session is still recorded.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if http is None:
            anyio.run(proxy.serve_stdio)
        else:
            typer.echo(f"hbeval: MCP proxy at http://127.0.0.1:{http}/mcp", err=True)
            anyio.run(proxy.serve_http, http)
    except KeyboardInterrupt:
        pass
    finally:
        if record is not None:
            run_id = proxy.record.write(record, label=battery)
            typer.echo(
                f"hbeval: recorded {len(proxy.record.events)} events "
                f"({len(proxy.record.receipts)} receipts) as run {run_id} in {record}",
                err=True,
            )
