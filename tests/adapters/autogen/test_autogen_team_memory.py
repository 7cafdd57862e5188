"""AutoGen teams as battery targets: a team's episode belongs to the team's agent id.

A ``RoundRobinGroupChat`` of two real ``AssistantAgent``s on scripted models: the battery's
memory reaches every member under the team's agent id, the trial's episode is admitted under
that id once, and a member configured with its own ``EDMMemory`` keeps its own id (and gets no
second memory).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.models import SystemMessage

from hbeval_autogen import AutoGenAdapter, EDMMemory
from hbeval_core.contract import Task, TrialContext, outcome_of, trial_context
from tests.adapters.autogen.test_autogen_fixtures import ListBacking, hang_guard, scripted_agent

__all__ = ["hang_guard"]

pytestmark = pytest.mark.usefixtures("hang_guard")

TEAM_LESSON = "Team lesson: check the replica when the primary order lookup fails."
OWN_LESSON = "Reviewer lesson: re-add the totals before approving an order."
TASK = Task(id="lookup", question="Look up order A1 and add the totals.")


def system_texts(agent: Any) -> list[str]:
    texts = []
    for call in agent._model_client.create_calls:
        texts += [m.content for m in call["messages"] if isinstance(m, SystemMessage)]
    return texts


def ctx(key: str) -> TrialContext:
    return TrialContext(
        run_id="run",
        trial_run_id=f"run/{key}",
        trial_key=key,
        agent_id="support-team",
        task_id="lookup",
    )


def test_a_teams_episode_and_recall_use_the_teams_agent_id() -> None:
    backing = ListBacking(bar=0.8)
    backing.admit(
        {"agent_id": "support-team", "context": "order A1", "lesson": TEAM_LESSON, "score": 0.9}
    )
    backing.admit(
        {"agent_id": "reviewer", "context": "order A1", "lesson": OWN_LESSON, "score": 0.9}
    )
    members: dict[str, Any] = {}

    def team() -> RoundRobinGroupChat:
        members["worker"] = scripted_agent(name="worker")
        members["reviewer"] = scripted_agent(
            name="reviewer", memory=[EDMMemory(backing, agent_id="reviewer")]
        )
        return RoundRobinGroupChat(
            [members["worker"], members["reviewer"]],
            termination_condition=MaxMessageTermination(4),
        )

    adapter = AutoGenAdapter()
    adapter.memory_hook(backing)
    try:
        with trial_context(ctx("s000-t0")):
            result = adapter.run_trial(team, TASK, None, None)
        assert result.status == "ok", result.error
        worker, reviewer = system_texts(members["worker"]), system_texts(members["reviewer"])
        # The member without a memory of its own recalls under the team's id only ...
        assert any(TEAM_LESSON in t for t in worker) and not any(OWN_LESSON in t for t in worker)
        # ... and the member configured with its own EDMMemory keeps its id, with no second one.
        assert any(OWN_LESSON in t for t in reviewer) and not any(
            TEAM_LESSON in t for t in reviewer
        )
        assert {agent_id for _, agent_id in backing.recalls} == {"support-team", "reviewer"}
        assert result.metadata["agent_id"] == "support-team"
        assert type(result.raw).__name__ == "TaskResult"
        names = {m.name for m in outcome_of(result).messages if m.role == "assistant"}
        assert names == {"worker", "reviewer"}
        before = len(backing.episodes)
        assert adapter.admit(result, score=0.95, passed=True) is True
        assert len(backing.episodes) == before + 1
        assert backing.episodes[-1]["agent_id"] == "support-team"
    finally:
        adapter.close()
