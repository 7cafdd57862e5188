"""Fault-injecting proxies: hbeval in front of an agent's MCP servers, without touching its code.

- ``parse_fault_spec`` / ``FaultSet``: the ``--fault MODE[:TOOL][@CALLS]`` language shared by the
  proxies (``rate_limit@0``, ``prompt_injection:lookup_order@0``).
- ``SessionRecord``: what a proxy saw, as hb-events with receipts, written to a store after the
  session (off the request path).
- ``McpProxy`` (``hbeval mcp-proxy``): an MCP server built on the ``mcp`` SDK that fronts a stdio
  MCP server, lists its tools unchanged and plants tool faults and tool-metadata attacks.
- ``OpenAIProxy`` (``hbeval proxy openai``): an OpenAI-compatible HTTP proxy on 127.0.0.1 that
  plants model faults at the HTTP layer and tool faults in the tool results it forwards.
- ``CommandTarget`` / ``CommandAdapter``: any process as a battery target, run per trial
  through its own ``OpenAIProxy`` (``battery run --command CMD --via-proxy openai``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "CommandAdapter": "._command",
    "CommandTarget": "._command",
    "FaultSet": "._spec",
    "FaultSpecError": "._spec",
    "McpProxy": "._mcp",
    "OpenAIProxy": "._openai",
    "SessionRecord": "._record",
    "parse_fault_spec": "._spec",
}
__all__ = [
    "CommandAdapter",
    "CommandTarget",
    "FaultSet",
    "FaultSpecError",
    "McpProxy",
    "OpenAIProxy",
    "SessionRecord",
    "parse_fault_spec",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

if TYPE_CHECKING:
    from ._command import CommandAdapter, CommandTarget
    from ._mcp import McpProxy
    from ._openai import OpenAIProxy
    from ._record import SessionRecord
    from ._spec import FaultSet, FaultSpecError, parse_fault_spec
