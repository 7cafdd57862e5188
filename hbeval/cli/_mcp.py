"""The ``hbeval mcp`` command: serve a store to MCP clients over stdio or streamable HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["mcp_cmd"]


def mcp_cmd(
    db: Annotated[
        str | None,
        typer.Option("--db", help="Store: a path or sqlite:///path (default ./.hbeval/hbeval.db)."),
    ] = None,
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            metavar="PORT",
            help="Serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio.",
        ),
    ] = None,
) -> None:
    """Serve the store read-only to MCP clients (stdio by default)."""
    from ..mcp_server._tools import ToolInputError

    if http is not None and not 1 <= http <= 65535:
        typer.echo(f"hbeval: --http must be a port from 1 to 65535, got {http}", err=True)
        raise typer.Exit(2)
    try:
        from ..mcp_server._server import build_server

        server = build_server(db, port=http or 8000)
    except (ToolInputError, ImportError) as exc:
        typer.echo(f"hbeval: {exc}", err=True)
        raise typer.Exit(2) from None
    if http is None:
        server.run("stdio")
    else:
        typer.echo(f"hbeval: MCP over streamable HTTP at http://127.0.0.1:{http}/mcp", err=True)
        server.run("streamable-http")
