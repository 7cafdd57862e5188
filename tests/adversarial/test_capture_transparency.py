"""Finding 7: capture never changes what the agent receives.

On main, inside a trial, a tool result whose ``__repr__`` raises reached the agent as a
``RuntimeError`` and a 5,000-deep list as a ``RecursionError``; outside a trial the same values
came back unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from hbeval_core.contract import TrialContext, trial_context
from hbeval_plain import PlainAdapter, think, tool

from ._agents import TASK, hostile_values

_HOSTILE = hostile_values()


@tool
def give(name: str) -> Any:
    return _HOSTILE[name]


@tool
def take(value: Any) -> str:
    return "taken"


@pytest.mark.parametrize("name", sorted(_HOSTILE))
def test_a_hostile_result_reaches_the_agent_unchanged_inside_a_trial(name: str) -> None:
    assert give(name) is _HOSTILE[name]  # outside a trial: the plain function
    received: dict[str, Any] = {}

    def agent(question: str) -> str:
        think("fetch it", tool_calls=[("give", {"name": name})])
        received["value"] = give(name)
        received["taken"] = take(_HOSTILE[name])
        think("done")
        return "ok"

    ctx = TrialContext(run_id="r", trial_run_id="r/s000-t0", trial_key="s000-t0")
    with trial_context(ctx):
        result = PlainAdapter().run_trial(agent, TASK, None, None)
    assert result.status == "ok", result.error
    assert received["value"] is _HOSTILE[name]
    assert received["taken"] == "taken"
    kinds = [e.kind for e in result.events]
    assert kinds.count("tool_end") == 2  # both calls are still in the trace


def test_outside_a_battery_capture_is_just_as_transparent() -> None:
    def agent(question: str) -> Any:
        return [give(n) for n in sorted(_HOSTILE)]

    result = PlainAdapter().run_trial(agent, TASK, None, None)
    assert result.status == "ok", result.error
    assert all(a is _HOSTILE[n] for a, n in zip(result.final_state, sorted(_HOSTILE), strict=True))
