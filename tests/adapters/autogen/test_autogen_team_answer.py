"""The answer a verifier reads from an AutoGen team is the team's answer, not the reviewer's
"APPROVE": a travel agent and a reviewer in a ``RoundRobinGroupChat`` on the real
``OpenAIChatCompletionClient`` against ``ScriptedOpenAIServer``; and ``EDM.admit_run`` on the
events of such a run captured outside a battery admits it with that answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.openai")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.tools import FunctionTool

from hbeval.memory import EDM
from hbeval.runner.loader import TaskFileError, tasks_from_data
from hbeval.scoring import score_trial
from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.contract import Outcome, Task
from tests.conformance.providers import autogen_client, last_tool_result, no_tiktoken, system_text

__all__ = ["no_tiktoken"]

ANSWER = "Itinerary: flight LH123 to Lisbon on 3 May, 240 EUR."
QUESTION = "Plan my trip to Lisbon on 3 May."


def responder(reviewer_says: str | list[str]) -> Callable[[list[dict[str, Any]]], Any]:
    """The travel agent looks a flight up then answers; the reviewer answers from a list."""
    said = [reviewer_says] if isinstance(reviewer_says, str) else list(reviewer_says)
    turns = {"n": 0}

    def reply(messages: list[dict[str, Any]]) -> Any:
        if "reviewer" in system_text(messages):
            text = said[min(turns["n"], len(said) - 1)]
            turns["n"] += 1
            return text
        if last_tool_result(messages) is not None:
            return ANSWER
        return Reply(
            "Looking for flights.", tool_calls=[ToolCall("find_flight", {"city": "Lisbon"})]
        )

    return reply


def find_flight(city: str) -> str:
    """Find a flight to a city."""
    return f"LH123 to {city}, 240 EUR"


def team(server: ScriptedOpenAIServer, termination: Any) -> RoundRobinGroupChat:
    travel = AssistantAgent(
        "travel_agent",
        model_client=autogen_client(server),
        tools=[FunctionTool(find_flight, description="Find a flight.")],
        system_message="You are a travel agent.",
        reflect_on_tool_use=True,
    )
    reviewer = AssistantAgent(
        "reviewer",
        model_client=autogen_client(server),
        system_message="You are a reviewer. Say APPROVE when the plan is complete.",
    )
    return RoundRobinGroupChat([travel, reviewer], termination_condition=termination)


def run_team(
    reviewer_says: str | list[str], termination: Any, task: Task | None = None
) -> tuple[Outcome, Any]:
    from hbeval_autogen import AutoGenAdapter

    seen: list[Outcome] = []

    def verify(outcome: Outcome, trace: Any) -> bool:
        seen.append(outcome)
        return "LH123" in outcome.final_text and "APPROVE" not in outcome.final_text

    task = task or Task(id="trip", question=QUESTION, verify=verify)
    if task.verify is None or task.answer_from is not None:
        task = Task(id=task.id, question=QUESTION, verify=verify, answer_from=task.answer_from)
    with ScriptedOpenAIServer(responder(reviewer_says)) as server:
        result = AutoGenAdapter().run_trial(lambda: team(server, termination), task, None, None)
    assert result.status == "ok", result.error
    verdict = score_trial(task, None, result)
    return seen[0], verdict


def test_a_reviewer_approval_is_not_the_answer(no_tiktoken: None) -> None:
    outcome, verdict = run_team("APPROVE", TextMentionTermination("APPROVE"))
    assert outcome.final_text == ANSWER
    assert verdict.passed is True
    # The conversation is kept whole, the approval included.
    assert [m.name for m in outcome.messages] == ["user", "travel_agent", "reviewer"]
    assert outcome.messages[-1].content == "APPROVE"


def test_an_approval_with_a_comment_is_not_the_answer_either(no_tiktoken: None) -> None:
    outcome, verdict = run_team(
        "Looks complete, with the price. APPROVE", TextMentionTermination("APPROVE")
    )
    assert outcome.final_text == ANSWER and verdict.passed is True


def test_max_message_termination_answers_with_the_last_agent_message(no_tiktoken: None) -> None:
    # user, travel_agent, reviewer: the count stops the run on the reviewer's request.
    outcome, verdict = run_team(["Please add a hotel."], MaxMessageTermination(3))
    assert outcome.final_text == "Please add a hotel."
    assert verdict.passed is False


def test_answer_from_names_the_answering_agent(no_tiktoken: None) -> None:
    task = Task(id="trip", question=QUESTION, answer_from="reviewer")
    outcome, _ = run_team("Approved plan: LH123. APPROVE", TextMentionTermination("APPROVE"), task)
    assert outcome.final_text == "Approved plan: LH123."


def test_a_single_agent_answer_carrying_terminate_is_stripped(no_tiktoken: None) -> None:
    from hbeval_autogen import AutoGenAdapter

    script = [
        Reply(tool_calls=[ToolCall("find_flight", {"city": "Lisbon"})]),
        f"{ANSWER} TERMINATE",
    ]
    task = Task(id="trip", question=QUESTION)
    with ScriptedOpenAIServer(script) as server:
        agent = AssistantAgent(
            "travel_agent",
            model_client=autogen_client(server),
            tools=[FunctionTool(find_flight, description="Find a flight.")],
            reflect_on_tool_use=True,
        )
        result = AutoGenAdapter().run_trial(agent, task, None, None)
    assert result.response_text == ANSWER


def test_answer_from_in_a_task_file() -> None:
    (task,) = tasks_from_data([{"id": "t", "question": "q", "answer_from": "travel_agent"}])
    assert task.answer_from == "travel_agent"
    with pytest.raises(TaskFileError, match="answer_from"):
        tasks_from_data([{"id": "t", "question": "q", "answer_from": 3}])
    with pytest.raises(ValueError, match="answer_from"):
        Task(id="t", question="q", answer_from=" ")


def test_admit_run_on_captured_events_admits_the_team_answer(no_tiktoken: None) -> None:
    from hbeval_autogen import capture

    async def native(server: ScriptedOpenAIServer) -> Any:
        return await team(server, TextMentionTermination("APPROVE")).run(task=QUESTION)

    with ScriptedOpenAIServer(responder("APPROVE")) as server:
        with capture("captured-trip") as rec:
            asyncio.run(native(server))
    events = list(rec.events)
    seen: list[Outcome] = []

    def verify(outcome: Outcome, trace: Any) -> bool:
        seen.append(outcome)
        return "LH123" in outcome.final_text

    task = Task(id="trip", question=QUESTION, verify=verify)
    decision = EDM().admit_run(events, task, run_id="captured-trip")
    assert not decision.quarantined, decision.reasons
    (outcome,) = seen
    assert outcome.final_text == ANSWER
    assert [m.name for m in outcome.messages] == ["user", "travel_agent", "reviewer"]
    assert outcome.messages[-1].content == "APPROVE"
