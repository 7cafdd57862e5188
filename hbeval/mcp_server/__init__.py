"""``hbeval mcp``: a read-only MCP server over an hbeval store.

Tools: ``list_runs``, ``run_metrics``, ``score_trace``, ``compare_runs``, ``recall_memory``,
``explain`` and ``reliability_trend``; each answers with the same figures as the command line's
``--json`` output. The ``mcp`` SDK (extra ``[mcp]``) is imported only when a server is built.
"""

from __future__ import annotations

from ._tools import StoreTools, ToolInputError

__all__ = ["StoreTools", "ToolInputError", "build_server"]


def build_server(db: str | None = None, *, port: int = 8000) -> object:
    """A FastMCP server over the store ``db``; see :func:`hbeval.mcp_server._server.build_server`."""
    from ._server import build_server as build

    return build(db, port=port)
