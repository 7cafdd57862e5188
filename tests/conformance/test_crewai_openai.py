"""The adapter conformance suite on CrewAI with the real provider client: ``crewai.LLM`` on its
native OpenAI provider (``model="openai/..."``, ``base_url`` set) against ``ScriptedOpenAIServer``,
with ``BaseTool`` tools, for one clerk and for a crew of a clerk and a reviewer on two
sequential tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.crewai import test_crewai_conformance as base
from tests.adapters.crewai.test_crewai_fixtures import (
    QUESTION_TASK,
    AddTool,
    LookupTool,
    ran_tools,
)

pytest.importorskip("openai")

from crewai import Agent, Crew, Process, Task

from hbeval.testing import ScriptedOpenAIServer
from hbeval_core.events import ModelEnd, ToolStart
from hbeval_core.vocab import ATTR_TEXT_UNOBSERVED, TEXT_UNOBSERVED
from tests.conformance.providers import (
    Endpoint,
    ProviderChecks,
    StandardResponder,
    crewai_llm,
    no_tiktoken,
)

__all__ = ["no_tiktoken"]


def _clerk(server: Endpoint) -> Agent:
    ran: list[str] = []
    lookup, add = LookupTool(), AddTool()
    lookup.ran = add.ran = ran  # after construction: pydantic would copy a given list
    return Agent(
        role="clerk",
        goal="answer the question with the tools",
        backstory="A careful clerk.",
        llm=crewai_llm(server),
        tools=[lookup, add],
        verbose=False,
        max_iter=8,
    )


def openai_crew(server: Endpoint) -> Crew:
    """The standard script's one-agent crew, its model reached over HTTP by ``crewai.LLM``."""
    clerk = _clerk(server)
    task = Task(description=QUESTION_TASK, expected_output="the answer", agent=clerk)
    return Crew(agents=[clerk], tasks=[task], process=Process.sequential, verbose=False)


def review_crew(server: Endpoint) -> Crew:
    """Two agents, two sequential tasks: the clerk runs the standard script, then a reviewer
    (no tools) reads the clerk's answer and approves it."""
    clerk = _clerk(server)
    reviewer = Agent(
        role="reviewer",
        goal="check the clerk's answer",
        backstory="You approve finished work.",
        llm=crewai_llm(server),
        verbose=False,
        max_iter=2,
    )
    answer = Task(description=QUESTION_TASK, expected_output="the answer", agent=clerk)
    review = Task(
        description="Review the clerk's answer.", expected_output="APPROVE", agent=reviewer
    )
    return Crew(
        agents=[clerk, reviewer],
        tasks=[answer, review],
        process=Process.sequential,
        verbose=False,
    )


class TestCrewAIOnOpenAIProvider(ProviderChecks, base._CrewAIConformance):
    NATIVE = True

    def make_target(self) -> Any:
        return openai_crew(self.server)

    def make_custom_target(self) -> Any:
        raise NotImplementedError  # the @tool-decorated crew runs on the in-framework model

    def make_shape_targets(self) -> dict[str, tuple[Any, tuple[Any, ...]]]:
        return {"two agents, two tasks": (review_crew(self.server), ())}

    def real_tool_calls(self, target: Any) -> list[str]:
        return ran_tools(target)

    def test_the_provider_is_crewai_own_openai_client(self) -> None:
        from crewai.llms.providers.openai.completion import OpenAICompletion

        crew = self.make_target()
        assert isinstance(crew.agents[0].llm, OpenAICompletion)
        result = self.run(target=crew)
        assert result.status == "ok", result.error
        assert len(self.server.requests) == 3
        # Native tool calling: the tools went to the server as OpenAI function schemas.
        sent = self.server.requests[0].body.get("tools") or []
        assert sorted(t["function"]["name"] for t in sent) == ["add", "lookup"]

    def test_tool_calls_link_to_the_model_reply_that_issued_them(self) -> None:
        result = self.run()
        assert result.status == "ok", result.error
        ends = self.of(result.events, ModelEnd)
        issued = [c.id for e in ends for c in e.tool_calls]
        # The model's own ids, as the server wrote them, tie each call to its reply.
        assert [s.call_id for s in self.of(result.events, ToolStart)] == issued
        assert [s.tool for s in self.of(result.events, ToolStart)] == list(self.TOOLS)
        # The server sent text beside each tool call; CrewAI's OpenAI provider returns the tool
        # calls alone, so that text never reaches a hook: recorded as unobserved, not as none.
        for e in ends[:2]:
            assert e.text is None and e.attrs.get(ATTR_TEXT_UNOBSERVED) is True
        assert ends[2].text == "done" and ATTR_TEXT_UNOBSERVED not in ends[2].attrs

    def test_every_call_is_explained_and_linked_by_id(self) -> None:
        from hbeval.scoring import score_trial
        from hbeval.testing.conformance import two_tool_task

        verdict = score_trial(two_tool_task(), None, self.run()).as_dict()
        links = verdict["links"]
        assert links == {
            "calls": 2,
            "id": 2,
            "match": 0,
            "none": 0,
            "explained": 0,
            "unobserved": 2,
        }

    def test_the_report_says_the_explained_share_is_unobserved(self, tmp_path: Path) -> None:
        from hbeval import run_battery
        from hbeval.testing.conformance import two_tool_task

        battery = tmp_path / "nominal.yaml"
        battery.write_text(
            "format: hbeval-battery-file/1\nname: nominal\n"
            "scenarios:\n  - name: baseline\n    mode: none\n",
            encoding="utf-8",
        )
        report = run_battery(
            lambda: openai_crew(self.server),
            tasks=[two_tool_task()],
            battery=str(battery),
            trials=1,
        )
        trace = report.traceability
        assert trace is not None and (trace.calls, trace.explained) == (2, 0)
        # Not a share of 0: nothing says the model gave no reason, only that none was seen.
        assert trace.explained_share is None
        assert trace.undefined == {"explained_share": TEXT_UNOBSERVED}
        assert trace.note is not None and "2 of 2 tool calls came from a reply" in trace.note

    def test_a_parallel_tool_call_is_captured_and_linked(self) -> None:
        with ScriptedOpenAIServer(StandardResponder(parallel=True)) as server:
            result = self.run(target=openai_crew(server))
        assert result.status == "ok", result.error
        first = self.of(result.events, ModelEnd)[0]
        starts = self.of(result.events, ToolStart)
        assert sorted(s.tool for s in starts) == ["add", "lookup"]
        assert sorted(s.call_id for s in starts) == sorted(c.id for c in first.tool_calls)

    def test_two_agents_on_two_tasks_are_one_run(self) -> None:
        crew = review_crew(self.server)
        result = self.run(target=crew)
        assert result.status == "ok", result.error
        assert ran_tools(crew) == ["lookup", "add"]
        # clerk: 3 model calls, reviewer: 1; every request went over HTTP.
        assert len(self.of(result.events, ModelEnd)) == len(self.server.requests) == 4
        assert len({e.run_id for e in result.events}) == 1
