"""Small helpers for writing task verifiers over a trial's trace and final state.

A verifier is ``verify(final_state, trace) -> bool``; the trace decides what the agent did, not the
agent's own account. These helpers accept events as hbeval event models or as plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hbeval_core.vocab import TOOL_END, TOOL_START

__all__ = ["completed_calls", "response_text", "tool_started"]


def _get(event: Any, name: str) -> Any:
    return event.get(name) if isinstance(event, Mapping) else getattr(event, name, None)


def completed_calls(trace: Sequence[Any], tool_name: str) -> list[dict[str, Any]]:
    """Arguments of every ``tool_name`` call that returned without error, in call order."""
    returned = {
        _get(e, "call_id")
        for e in trace
        if _get(e, "kind") == TOOL_END
        and _get(e, "tool") == tool_name
        and _get(e, "status") != "error"
    }
    return [
        dict(_get(e, "args") or {})
        for e in trace
        if _get(e, "kind") == TOOL_START and _get(e, "call_id") in returned
    ]


def tool_started(trace: Sequence[Any], tool_name: str) -> bool:
    """Whether the agent attempted ``tool_name`` at all (even if a fault answered instead)."""
    return any(_get(e, "kind") == TOOL_START and _get(e, "tool") == tool_name for e in trace)


def response_text(final_state: Any) -> str:
    """The agent's final answer as text: ``final_state["response"]`` or the state itself."""
    if isinstance(final_state, Mapping):
        return str(final_state.get("response") or "")
    return str(final_state or "")
