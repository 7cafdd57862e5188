"""Attribute keys and labels this adapter writes into events' ``attrs``.

Spelled once here so no module writes them by hand. Keys every adapter writes come from ``hbeval_core.vocab``.
"""

from __future__ import annotations

from typing import Final

from hbeval_core.capture import META_CAPTURE_ERRORS as META_CAPTURE_ERRORS
from hbeval_core.vocab import ATTR_AGENT as ATTR_AGENT
from hbeval_core.vocab import ATTR_BUDGET as ATTR_BUDGET
from hbeval_core.vocab import ATTR_MEMORIES as ATTR_MEMORIES
from hbeval_core.vocab import ATTR_STEP_INDEX as ATTR_STEP_INDEX
from hbeval_core.vocab import ATTR_SYNTHETIC as ATTR_SYNTHETIC
from hbeval_core.vocab import FRAMEWORK_AUTOGEN

FRAMEWORK: Final = FRAMEWORK_AUTOGEN
"""``RunStart.framework`` of runs this adapter records."""

ATTR_SOURCE: Final = "source"
"""Where a tool event came from when the workbench wrapper did not see the call."""
SOURCE_STREAM: Final = "run_stream"
"""Value of ``ATTR_SOURCE``: rebuilt from ``ToolCallRequestEvent`` / ``ToolCallExecutionEvent``."""
ATTR_FINISH_REASON: Final = "finish_reason"
"""``CreateResult.finish_reason`` of a model call."""
ATTR_ABORT: Final = "abort"
"""On ``run_end``: why hbeval aborted the run (crash, halt, budget, timeout)."""
ATTR_STOP_REASON: Final = "stop_reason"
"""On ``run_end``: AutoGen's ``TaskResult.stop_reason``."""
META_EVENT_LOOP: Final = "event_loop"
"""Trial metadata: ``"fresh"`` (an agent the adapter built, on a new loop) or ``"home"`` (an
agent object handed in, on its home loop; see ``_loops``)."""

# TrialResult.metadata keys
META_USAGE: Final = "usage"
"""Trial metadata: summed token usage ``{"input_tokens", "output_tokens"}``."""
META_AGENT_ID: Final = "agent_id"
"""Trial metadata: the agent id the trial ran under (scopes memory)."""
META_EPISODE: Final = "episode"
"""Trial metadata: the episode draft ``AutoGenAdapter.admit`` offers to memory once scored."""
