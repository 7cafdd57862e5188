"""The adapter conformance suite on AutoGen with the real provider client: autogen-ext's
``OpenAIChatCompletionClient`` against ``ScriptedOpenAIServer``, for one ``AssistantAgent`` and
for a ``RoundRobinGroupChat`` of a clerk (the standard script) and a reviewer who approves."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.openai")

from autogen_agentchat.agents import AssistantAgent

from hbeval.testing import ScriptedOpenAIServer
from hbeval_core.events import ModelEnd, ToolStart
from tests.adapters.autogen import test_autogen_conformance as base
from tests.adapters.autogen.test_autogen_fixtures import hang_guard, two_tools
from tests.conformance.providers import (
    Endpoint,
    ProviderChecks,
    StandardResponder,
    autogen_client,
    no_tiktoken,
)

__all__ = ["hang_guard", "no_tiktoken"]


def openai_agent(server: Endpoint, name: str = "agent", **kwargs: Any) -> Any:
    log: list[str] = []
    agent = AssistantAgent(
        name,
        model_client=autogen_client(server),
        tools=two_tools(log),  # type: ignore[arg-type]
        max_tool_iterations=5,
        **kwargs,
    )
    agent.hbeval_calls = log  # type: ignore[attr-defined]
    return agent


def review_team(server: Endpoint) -> Any:
    """The clerk runs the standard script and says "done"; the reviewer says "APPROVE"."""
    from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    clerk = openai_agent(server, "clerk", system_message="You are the clerk.")
    reviewer = AssistantAgent(
        "reviewer",
        model_client=autogen_client(server),
        system_message="You are the reviewer: say APPROVE when the work is done.",
    )
    stop = TextMentionTermination("APPROVE") | MaxMessageTermination(6)
    team = RoundRobinGroupChat([clerk, reviewer], termination_condition=stop)
    team.hbeval_calls = clerk.hbeval_calls  # type: ignore[attr-defined]
    return team


class TestAutoGenOnOpenAIClient(ProviderChecks, base.TestAutoGenConformance):
    def make_target(self) -> Any:
        return openai_agent(self.server)

    def make_custom_target(self) -> Any:
        raise NotImplementedError  # the hand-written loop runs on the in-framework model

    def make_shape_targets(self) -> dict[str, tuple[Any, tuple[Any, ...]]]:
        return {"team": (review_team(self.server), ())}

    def test_a_parallel_tool_call_is_captured_and_linked(self) -> None:
        with ScriptedOpenAIServer(StandardResponder(parallel=True)) as server:
            result = self.run(target=openai_agent(server))
        assert result.status == "ok", result.error
        first = self.of(result.events, ModelEnd)[0]
        starts = self.of(result.events, ToolStart)
        assert sorted(s.tool for s in starts) == ["add", "lookup"]
        assert sorted(s.call_id for s in starts) == sorted(c.id for c in first.tool_calls)

    def test_the_team_answers_done_and_keeps_the_approval(self) -> None:
        from hbeval.scoring import score_trial
        from hbeval.testing.conformance import two_tool_task
        from hbeval_core.contract import Outcome, Task

        result = self.run(target=review_team(self.server))
        assert result.status == "ok", result.error
        seen: list[Outcome] = []

        def verify(outcome: Outcome, trace: Any) -> bool:
            seen.append(outcome)
            return outcome.final_text == "done"

        task = Task(id="two_tools", question=two_tool_task().question, verify=verify)
        assert score_trial(task, None, result).passed is True
        assert [m.name for m in seen[0].messages][-2:] == ["clerk", "reviewer"]
        # clerk: 3 calls, reviewer: 1
        assert len(self.of(result.events, ModelEnd)) == 4
