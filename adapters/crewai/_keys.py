"""Attribute keys and labels this adapter writes into events' ``attrs``.

Spelled once here so no module writes them by hand. They are CrewAI-specific today; if another
adapter needs the same key it moves to ``hbeval_core.vocab``.
"""

from __future__ import annotations

from typing import Final

FRAMEWORK: Final = "crewai"
"""``RunStart.framework`` of runs this adapter records."""

ATTR_AGENT: Final = "agent"
"""Role of the CrewAI agent an event happened in."""
ATTR_PATH: Final = "tool_path"
"""How the model asked for tools: ``react`` (text Action lines) or ``native`` (tool-call lists)."""
PATH_REACT: Final = "react"
PATH_NATIVE: Final = "native"
ATTR_SYNTHETIC: Final = "synthetic"
"""True on tool events of a call whose real tool never ran (a fault or a halt answered instead)."""
ATTR_SYNTHETIC_ID: Final = "synthetic_id"
"""True on a tool call whose id hbeval made up (ReAct text carries no call ids)."""
ATTR_LINKED: Final = "linked"
"""False on a tool call no model reply could be matched to."""
ATTR_BLOCKED_BY: Final = "blocked_by"
"""On a tool end: who blocked the real call (``user_hook`` when a hook other than ours did)."""
ATTR_MEMORIES: Final = "memories"
"""How many recalled precedents were put in front of the model before its first call."""
ATTR_ADMITTED: Final = "admitted"
"""Trial metadata: whether the memory admitted the trial's episode."""
ATTR_ISOLATED: Final = "isolated"
"""Trial metadata: whether the trial ran on a crew of its own (from a factory)."""
ATTR_STEP_INDEX: Final = "step_index"
"""Monitor step index behind a directive or a halt."""
ATTR_BUDGET: Final = "budget"
"""On a budget ``halt``: which budget ran out."""
ATTR_LATENCY_MS: Final = "latency_ms"
"""Span duration in milliseconds (span events have no latency field)."""

INPUT_KEY: Final = "question"
"""The ``kickoff(inputs=...)`` key a battery question is passed under (``{question}`` in a task)."""
