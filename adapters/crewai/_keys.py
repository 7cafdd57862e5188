"""Attribute keys and labels this adapter writes into events' ``attrs``.

Spelled once here so no module writes them by hand. Keys every adapter writes come from ``hbeval_core.vocab``.
"""

from __future__ import annotations

from typing import Final

from hbeval_core.vocab import ATTR_AGENT as ATTR_AGENT
from hbeval_core.vocab import ATTR_BUDGET as ATTR_BUDGET
from hbeval_core.vocab import ATTR_LATENCY_MS as ATTR_LATENCY_MS
from hbeval_core.vocab import ATTR_MEMORIES as ATTR_MEMORIES
from hbeval_core.vocab import ATTR_STEP_INDEX as ATTR_STEP_INDEX
from hbeval_core.vocab import ATTR_SYNTHETIC as ATTR_SYNTHETIC
from hbeval_core.vocab import ATTR_TEXT_UNOBSERVED as ATTR_TEXT_UNOBSERVED
from hbeval_core.vocab import FRAMEWORK_CREWAI

FRAMEWORK: Final = FRAMEWORK_CREWAI
"""``RunStart.framework`` of runs this adapter records."""

ATTR_PATH: Final = "tool_path"
"""How the model asked for tools: ``react`` (text Action lines) or ``native`` (tool-call lists)."""
PATH_REACT: Final = "react"
PATH_NATIVE: Final = "native"
ATTR_SYNTHETIC_ID: Final = "synthetic_id"
"""True on a tool call whose id hbeval made up (ReAct text carries no call ids)."""
ATTR_LINKED: Final = "linked"
"""False on a tool call no model reply could be matched to."""
ATTR_BLOCKED_BY: Final = "blocked_by"
"""On a tool end: who blocked the real call (``user_hook`` when a hook other than ours did)."""
ATTR_ADMITTED: Final = "admitted"
"""Trial metadata: whether the memory admitted the trial's episode."""
ATTR_ISOLATED: Final = "isolated"
"""Trial metadata: whether the trial ran on a crew of its own (from a factory)."""

INPUT_KEY: Final = "question"
"""The ``kickoff(inputs=...)`` key a battery question is passed under (``{question}`` in a task)."""
