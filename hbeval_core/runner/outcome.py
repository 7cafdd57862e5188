"""Moved to ``hbeval_core.contract``; this name stays so existing imports keep working."""

from __future__ import annotations

from ..contract._outcome import (
    Message,
    Outcome,
    ToolCall,
    outcome_of,
    tool_calls_of,
    verifier_input,
    wants_outcome,
)

__all__ = [
    "Message",
    "Outcome",
    "ToolCall",
    "outcome_of",
    "tool_calls_of",
    "verifier_input",
    "wants_outcome",
]
