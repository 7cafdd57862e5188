"""Attribute keys and labels this adapter writes into events' ``attrs``.

Spelled once here so no module writes them by hand. Keys every adapter writes come from ``hbeval_core.vocab``.
"""

from __future__ import annotations

from typing import Final

from hbeval_core.vocab import ATTR_FRAMEWORK_RUN_ID as ATTR_FRAMEWORK_RUN_ID
from hbeval_core.vocab import ATTR_LATENCY_MS as ATTR_LATENCY_MS
from hbeval_core.vocab import ATTR_STEP_INDEX as ATTR_STEP_INDEX
from hbeval_core.vocab import ATTR_SYNTHETIC as ATTR_SYNTHETIC
from hbeval_core.vocab import FRAMEWORK_LANGGRAPH

FRAMEWORK: Final = FRAMEWORK_LANGGRAPH
"""``RunStart.framework`` of runs this adapter records."""

ATTR_LANGGRAPH_NODE: Final = "langgraph_node"
"""Name of the graph node an event happened in."""
ATTR_LANGGRAPH_STEP: Final = "langgraph_step"
"""LangGraph super-step of a node span."""
ATTR_NODE_FAULT: Final = "node"
"""On a node-level fault: the node it hit."""
