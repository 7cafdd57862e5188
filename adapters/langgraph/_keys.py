"""Attribute keys and labels this adapter writes into events' ``attrs``.

Spelled once here so no module writes them by hand. They are LangGraph-specific today; if another
adapter needs the same key it moves to ``hbeval_core.vocab``.
"""

from __future__ import annotations

from typing import Final

FRAMEWORK: Final = "langgraph"
"""``RunStart.framework`` of runs this adapter records."""

ATTR_FRAMEWORK_RUN_ID: Final = "framework_run_id"
"""The LangChain run id (full UUID) behind an event."""
ATTR_LANGGRAPH_NODE: Final = "langgraph_node"
"""Name of the graph node an event happened in."""
ATTR_LANGGRAPH_STEP: Final = "langgraph_step"
"""LangGraph super-step of a node span."""
ATTR_SYNTHETIC: Final = "synthetic"
"""True on tool events of a call whose real tool never ran (a fault answered instead)."""
ATTR_LATENCY_MS: Final = "latency_ms"
"""Span duration in milliseconds (span events have no latency field)."""
ATTR_STEP_INDEX: Final = "step_index"
"""Monitor step index behind a directive or a halt."""
ATTR_NODE_FAULT: Final = "node"
"""On a node-level fault: the node it hit."""
