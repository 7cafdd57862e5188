"""The MCP server over a store: the tools of :class:`StoreTools`, registered with the ``mcp`` SDK.

Imported only by ``hbeval mcp`` and :func:`build_server`; the ``mcp`` package (extra ``[mcp]``)
is loaded here and nowhere else. No ``from __future__ import annotations`` here: the SDK reads
the tools' parameter annotations (types and descriptions) at registration.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from hbeval_core import __version__
from hbeval_core.vocab import PEI_V2

from ._tools import MAX_K, StoreTools, ToolInputError

__all__ = ["SERVER_NAME", "TOOL_NAMES", "build_server"]

SERVER_NAME = "hbeval"

TOOL_NAMES = (
    "list_runs",
    "run_metrics",
    "score_trace",
    "compare_runs",
    "recall_memory",
    "explain",
    "reliability_trend",
)
"""The tools every hbeval MCP server lists, in this order."""

_INSTRUCTIONS = (
    "Read-only access to an hbeval store: battery runs of tool-using agents under injected "
    "faults, their HB-Eval metrics (PEI, FRR, IRS, TI, CSI) with 95% intervals, and the "
    "evaluation-driven memory. A metric that could not be measured is null with its reason in "
    "'undefined'; never read it as zero. Start with list_runs."
)


def _missing_sdk() -> ImportError:
    return ImportError(
        "the MCP server needs the 'mcp' package: pip install -e '.[mcp]' from a clone "
        "(or pip install 'hbeval[mcp]' once published)"
    )


MAX_HTTP_SESSIONS = 64
"""Most streamable HTTP sessions open at once; a request that would open another gets 503."""
HTTP_SESSION_IDLE_SECONDS = 600.0
"""A streamable HTTP session with no request for this long is closed (its memory freed)."""


def _session_limits(fastmcp: Any, max_sessions: int, idle_seconds: float) -> dict[str, Any]:
    """The SDK's session cap and idle expiry, where this version of the SDK has them."""
    import inspect

    accepted = inspect.signature(fastmcp.__init__).parameters
    limits = {"max_sessions": max_sessions, "session_idle_timeout": idle_seconds}
    return {k: v for k, v in limits.items() if k in accepted}


def build_server(
    db: str | Path | None = None,
    *,
    port: int = 8000,
    max_sessions: int = MAX_HTTP_SESSIONS,
    session_idle_seconds: float = HTTP_SESSION_IDLE_SECONDS,
) -> Any:
    """A ``FastMCP`` server answering from the store ``db`` (which must exist).

    ``port`` is used only by the streamable HTTP transport, which binds 127.0.0.1, holds at
    most ``max_sessions`` sessions and closes one idle for ``session_idle_seconds``. Raises
    :class:`ToolInputError` (``--db``) for a missing store and ImportError without the SDK.
    """
    # Long because: each tool is declared here as a small function whose signature is the
    # tool's MCP schema (FastMCP reads it); the work is in ``StoreTools``.
    tools = StoreTools(db)
    try:
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError
        from mcp.types import ToolAnnotations
        from pydantic import Field
    except ImportError:
        raise _missing_sdk() from None

    server = FastMCP(
        SERVER_NAME,
        instructions=_INSTRUCTIONS,
        host="127.0.0.1",
        port=port,
        log_level="WARNING",
        **_session_limits(FastMCP, max_sessions, session_idle_seconds),
    )
    # Clients are told hbeval's version, not the SDK's (FastMCP has no argument for it; its
    # low-level server reads this attribute when the session starts).
    low_level = getattr(server, "_mcp_server", None)
    if low_level is not None and hasattr(low_level, "version"):
        low_level.version = __version__
    read_only = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)

    def answer(call: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return call(*args, **kwargs)
        except ToolInputError as exc:
            raise ToolError(str(exc)) from None

    RunId = Annotated[str, Field(description="A run id, as list_runs shows it.")]
    AgentId = Annotated[str, Field(description="The agent id the runs or episodes belong to.")]

    @server.tool(annotations=read_only)
    def list_runs(
        agent_id: Annotated[
            str | None, Field(description="Only this agent's runs (default: every agent).")
        ] = None,
    ) -> dict[str, Any]:
        """Runs recorded in the store, newest first: ids, agent, status, fingerprints, config."""
        return answer(tools.list_runs, agent_id)

    @server.tool(annotations=read_only)
    def run_metrics(run_id: RunId) -> dict[str, Any]:
        """One run's HB-Eval metrics with undefined reasons, 95% Wilson intervals and scores."""
        return answer(tools.run_metrics, run_id)

    @server.tool(annotations=read_only)
    def score_trace(
        events: Annotated[
            str, Field(description="An hb-events/1 trace: JSON lines, one event per line.")
        ],
        pei_version: Annotated[
            str, Field(description="PEI version: 1.0, 2.0 or 2.0-handled.")
        ] = PEI_V2,
        halt_policy: Annotated[
            str | None, Field(description="Safe Halt policy METRIC<BOUNDxSTEPS, e.g. frr<0.5x3.")
        ] = None,
        steps: Annotated[
            bool | None,
            Field(description="Per-step rows (default: only for traces of at most 100 steps)."),
        ] = None,
    ) -> dict[str, Any]:
        """Live metrics, breaches and halts of a recorded trace (as `hbeval score --json`)."""
        return answer(tools.score_trace, events, pei_version, halt_policy, steps)

    @server.tool(annotations=read_only)
    def compare_runs(
        run_a: Annotated[str, Field(description="The baseline run id.")],
        run_b: Annotated[str, Field(description="The run compared against it.")],
    ) -> dict[str, Any]:
        """Run B against run A, paired per task; refused across measurement fingerprints."""
        return answer(tools.compare_runs, run_a, run_b)

    @server.tool(annotations=read_only)
    def recall_memory(
        context: Annotated[str, Field(description="The task text to find precedents for.")],
        agent_id: AgentId = "default",
        k: Annotated[int, Field(description=f"How many precedents at most (1-{MAX_K}).")] = 3,
    ) -> dict[str, Any]:
        """The agent's qualified precedents (episodes EDM admitted) for a context, closest first."""
        return answer(tools.recall_memory, context, agent_id, k)

    @server.tool(annotations=read_only)
    def explain(
        text: Annotated[str, Field(description="The task context to explain.")],
        agent_id: AgentId = "default",
    ) -> dict[str, Any]:
        """Cite the closest qualified precedent verbatim, or defer to human review."""
        return answer(tools.explain, text, agent_id)

    @server.tool(annotations=read_only)
    def reliability_trend(agent_id: AgentId) -> dict[str, Any]:
        """An agent's runs over time, one series per measurement fingerprint, with CSI."""
        return answer(tools.reliability_trend, agent_id)

    return server
