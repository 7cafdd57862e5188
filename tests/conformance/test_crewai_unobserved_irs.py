"""IRS where the reply text was never observed: CrewAI's native OpenAI provider keeps only the
tool calls of a reply, so what the model wrote beside them never reaches a hook.

The crew is real (``crewai.LLM`` on its OpenAI provider against ``ScriptedOpenAIServer``), and
so are the fault (a 503 on the first ``lookup``) and the scoring. A trial whose deliberateness
would rest on that unseen text is not judged for IRS (``reply_text_unobserved``); a trace that
contradicts deliberate handling whatever the text said is judged, and scores 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from crewai import Agent, Crew, Process, Task

from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.vocab import IRS, TEXT_UNOBSERVED
from tests.adapters.crewai.test_crewai_fixtures import QUESTION_TASK, AddTool, LookupTool
from tests.conformance.providers import crewai_llm, no_tiktoken

__all__ = ["no_tiktoken"]

OUTAGE = """\
format: hbeval-battery-file/1
name: outage
scenarios:
  - name: outage
    mode: error_5xx
    params: {http_status: 503}
    tools: [lookup]
    when: {attempts: [0]}
"""


class Retrier:
    """Looks order A1 up; after each failed lookup says why and calls it again, identically,
    ``retries`` times; then answers "done" (a final text that names no fault)."""

    def __init__(self, retries: int) -> None:
        self.retries = retries

    def __call__(self, messages: list[dict[str, Any]]) -> Reply:
        results = sum(1 for m in messages if m.get("role") == "tool")
        lookup = ToolCall("lookup", {"query": "order A1"})
        if results == 0:
            return Reply("I'll look up order A1 first.", [lookup])
        if results <= self.retries:
            return Reply(
                "The lookup returned HTTP 503, a transient error; retrying once.", [lookup]
            )
        return Reply("done")


def _crew(server: ScriptedOpenAIServer) -> Crew:
    lookup, add = LookupTool(), AddTool()
    lookup.ran = add.ran = []
    clerk = Agent(
        role="clerk",
        goal="answer the question with the tools",
        backstory="A careful clerk.",
        llm=crewai_llm(server),
        tools=[lookup, add],
        verbose=False,
        max_iter=8,
    )
    task = Task(description=QUESTION_TASK, expected_output="the answer", agent=clerk)
    return Crew(agents=[clerk], tasks=[task], process=Process.sequential, verbose=False)


def _report(tmp_path: Path, retries: int) -> Any:
    from hbeval import run_battery
    from hbeval.testing.conformance import two_tool_task

    battery = tmp_path / "outage.yaml"
    battery.write_text(OUTAGE, encoding="utf-8")
    with ScriptedOpenAIServer(Retrier(retries)) as server:
        return run_battery(
            lambda: _crew(server),
            tasks=[two_tool_task()],
            battery=str(battery),
            trials=1,
            db=tmp_path / "h.db",
        )


def test_a_retry_whose_reason_was_discarded_unseen_is_not_judged(
    tmp_path: Path, no_tiktoken: None
) -> None:
    report = _report(tmp_path, retries=1)
    (trial,) = report.to_dict()["trials"]
    verdict = trial["verdict"]
    # The fault reached the model, and the one retry of a 503 is deliberate only if the model
    # named the fault: it did, beside the call, where CrewAI's provider dropped the text.
    assert verdict["faulted"] is True and [f["receipt"] for f in verdict["faults"]] == [
        "payload_seen"
    ]
    assert verdict["links"]["unobserved"] == 2
    assert verdict["signals"]["text_unobserved"] is True
    assert verdict["judged"] is False and verdict["irs_score"] is None
    assert verdict["deliberate"] is None
    assert verdict["undefined"]["irs_score"] == TEXT_UNOBSERVED
    # Not IRS 0 (nothing shows the agent did not name the fault): undefined, counted apart.
    assert report.metrics.irs is None
    assert report.undefined[IRS] == TEXT_UNOBSERVED
    assert report.fault_delivery.not_judged == {TEXT_UNOBSERVED: 1}
    assert report.fault_delivery.judged_trials == 0


def test_a_trace_that_contradicts_deliberate_handling_is_judged_whatever_was_unseen(
    tmp_path: Path, no_tiktoken: None
) -> None:
    # Two identical retries exceed the one bounded retry: blind, whatever the model wrote.
    report = _report(tmp_path, retries=2)
    (trial,) = report.to_dict()["trials"]
    verdict = trial["verdict"]
    assert verdict["signals"]["blind_retry"] is True
    assert verdict["signals"]["text_unobserved"] is False
    assert verdict["judged"] is True and verdict["irs_score"] == 0.0
    assert report.metrics.irs == 0.0
    assert report.fault_delivery.not_judged == {}
