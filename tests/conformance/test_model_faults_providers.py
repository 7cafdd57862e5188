"""Every model fault mode delivered through each adapter's real provider client.

LangGraph on ``ChatOpenAI``, AutoGen on ``OpenAIChatCompletionClient`` and CrewAI on
``crewai.LLM`` (its native OpenAI provider, the ``openai`` SDK underneath) are pointed at
``hbeval proxy openai`` (``OpenAIProxy``), itself in front of ``ScriptedOpenAIServer`` running
the standard script. The agents are the provider conformance suite's own builders. The proxy
plants the fault on the first model call at the HTTP layer; the client's own retry logic meets
it. Each test checks the receipt (the client received it) and what followed, and what the
adapter's own trace says about the same run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

pytest.importorskip("openai")

from hbeval.proxy._openai import OpenAIProxy
from hbeval.proxy._spec import FaultSet
from hbeval.testing import ScriptedOpenAIServer
from hbeval.testing.conformance import two_tool_task
from hbeval_core.events import ModelEnd, ToolStart
from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec
from hbeval_core.vocab import ATTR_TEXT_UNOBSERVED
from tests.conformance.providers import Endpoint, StandardResponder, no_tiktoken, system_text

__all__ = ["no_tiktoken"]

RETRIED = ("rate_limit", "model_error", "model_timeout", "stream_cut")
"""Modes the provider clients retry: the run then goes on as if nothing happened."""
PARAMS: dict[str, dict[str, Any]] = {
    "rate_limit": {"retry_after_ms": 60},
    "model_timeout": {"after_ms": 50},
}
FIRST_WORDS = "I'll look up order A1 first."
"""The text the standard script sends beside its first tool call."""
TEXT_UNOBSERVED = {"crewai"}
"""Frameworks whose provider path hands hooks the tool calls without the text beside them."""


def langgraph(endpoint: Endpoint) -> tuple[Any, Any]:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_openai")
    from hbeval_langgraph import LangGraphAdapter
    from tests.conformance import test_langgraph_openai

    return LangGraphAdapter(), test_langgraph_openai.openai_agent(endpoint, max_retries=2)


def autogen(endpoint: Endpoint) -> tuple[Any, Any]:
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.openai")
    from hbeval_autogen import AutoGenAdapter
    from tests.conformance import test_autogen_openai

    return AutoGenAdapter(cancel_grace=2.0), test_autogen_openai.openai_agent(endpoint)


def crewai(endpoint: Endpoint) -> tuple[Any, Any]:
    pytest.importorskip("crewai")
    from hbeval_crewai import CrewAIAdapter
    from tests.conformance import test_crewai_openai

    return CrewAIAdapter(), test_crewai_openai.openai_crew(endpoint)


FRAMEWORKS: dict[str, Callable[[Endpoint], tuple[Any, Any]]] = {
    "langgraph": langgraph,
    "autogen": autogen,
    "crewai": crewai,
}


def tools_ran(target: Any) -> list[str]:
    """The tools whose real body ran, in order (each builder keeps its own log)."""
    calls = getattr(target, "hbeval_calls", None)
    if calls is not None:
        return list(calls)
    from tests.adapters.crewai.test_crewai_fixtures import ran_tools

    return ran_tools(target)


class Faulted(NamedTuple):
    result: Any
    proxy: OpenAIProxy
    server: ScriptedOpenAIServer
    target: Any

    def ends(self) -> list[ModelEnd]:
        return [e for e in self.result.events if isinstance(e, ModelEnd)]


def run_with_fault(framework: str, mode: str) -> Faulted:
    spec = ModelFaultSpec("f0", mode, "*", (0,), 1.0, PARAMS.get(mode, {}))
    faults = FaultSet(model=ModelFaultPlan("conformance/model", 0, (spec,)), source=[mode])
    with ScriptedOpenAIServer(StandardResponder()) as server:
        with OpenAIProxy(server.base_url, faults) as proxy:
            adapter, target = FRAMEWORKS[framework](proxy)
            result = adapter.run_trial(target, two_tool_task(), None, None)
        return Faulted(result, proxy, server, target)


def assert_words_beside_the_call(framework: str, end: ModelEnd) -> None:
    """The text beside a tool call: as sent, or undefined with its reason where the adapter
    cannot see it (never an empty string standing in for it)."""
    if framework in TEXT_UNOBSERVED:
        assert end.text is None and end.attrs.get(ATTR_TEXT_UNOBSERVED) is True
    else:
        assert end.text == FIRST_WORDS and ATTR_TEXT_UNOBSERVED not in end.attrs


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@pytest.mark.parametrize("mode", RETRIED)
def test_a_retried_model_fault_is_received_and_retried(framework: str, mode: str) -> None:
    run = run_with_fault(framework, mode)
    (record,) = run.proxy.records
    (receipt,) = record.receipts
    assert receipt.mode == mode and receipt.call_id == "model#0"
    assert receipt.attrs["received"] is True and receipt.attrs["delivered_by"] == "http"
    followed = receipt.attrs["followed_by"]
    assert followed["action"] == "retry", followed
    if mode == "rate_limit":
        assert followed["honoured_retry_after"] is True and followed["after_ms"] >= 57
    # The client retried inside one model call: the agent's trace has the standard 3 calls,
    # the proxy saw 4 and the upstream 3 (the faulted call was answered by the proxy, except a
    # cut, whose first answer the upstream gave).
    assert run.result.status == "ok", run.result.error
    ends = run.ends()
    assert len(ends) == 3 and ends[-1].text == "done"
    assert_words_beside_the_call(framework, ends[0])
    assert tools_ran(run.target) == ["lookup", "add"]
    assert record.events[-1].kind == "run_end"
    assert len([e for e in record.events if isinstance(e, ModelEnd)]) == 4
    assert len(run.server.requests) == (4 if mode == "stream_cut" else 3)


@pytest.mark.parametrize("framework", ["autogen", "langgraph"])
def test_context_overflow_reaches_the_agent_as_the_clients_error(framework: str) -> None:
    run = run_with_fault(framework, "context_overflow")
    (receipt,) = run.proxy.records[0].receipts
    assert receipt.attrs["status"] == 400
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}
    error = run.result.error or ""
    assert run.result.status == "error"
    assert "context_length_exceeded" in error or "maximum context length" in error
    assert run.server.requests == []


def test_crewai_summarises_its_messages_after_a_context_overflow() -> None:
    """CrewAI turns the 400 into ``LLMContextLengthExceededError``, asks the model for a summary
    of the conversation and goes on from it: the receipt says the client continued."""
    run = run_with_fault("crewai", "context_overflow")
    (receipt,) = run.proxy.records[0].receipts
    assert receipt.attrs["status"] == 400
    assert receipt.attrs["followed_by"]["action"] == "continued"
    assert run.result.status == "ok", run.result.error
    summary, *standard = run.server.requests
    assert "structured summaries" in system_text(summary.messages)
    assert len(standard) == 3 and tools_ran(run.target) == ["lookup", "add"]
    # The overflowed call is in the trace, with nothing the model said; then the summary
    # call and the standard three.
    ends = run.ends()
    assert len(ends) == 5 and not ends[0].tool_calls and ends[0].text is None


@pytest.mark.parametrize("framework", ["autogen", "langgraph"])
def test_an_empty_completion_is_taken_as_the_final_answer(framework: str) -> None:
    run = run_with_fault(framework, "empty_completion")
    (receipt,) = run.proxy.records[0].receipts
    assert receipt.effect == "result_altered" and receipt.observed == "empty"
    # Both agents take an empty reply as the final answer: no further call.
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}
    ends = run.ends()
    assert len(ends) == 1 and not ends[0].tool_calls and not (ends[0].text or "").strip()
    assert run.server.requests == [] and tools_ran(run.target) == []


def test_crewai_calls_the_model_again_after_an_empty_completion() -> None:
    """CrewAI refuses an empty reply ("Invalid response from LLM call - None or empty") and its
    executor calls the model again with the same messages."""
    run = run_with_fault("crewai", "empty_completion")
    (receipt,) = run.proxy.records[0].receipts
    assert receipt.effect == "result_altered" and receipt.observed == "empty"
    assert receipt.attrs["followed_by"]["action"] == "retry"
    assert run.result.status == "ok", run.result.error
    ends = run.ends()
    assert len(ends) == 4 and not ends[0].tool_calls and not (ends[0].text or "").strip()
    # The empty reply was seen as empty: not marked as text the adapter could not see.
    assert ATTR_TEXT_UNOBSERVED not in ends[0].attrs
    assert len(run.server.requests) == 3 and tools_ran(run.target) == ["lookup", "add"]


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_malformed_tool_call_is_received_and_what_followed_is_recorded(framework: str) -> None:
    run = run_with_fault(framework, "malformed_tool_call")
    record = run.proxy.records[0]
    (receipt,) = record.receipts
    assert receipt.effect == "result_altered" and receipt.observed == "malformed"
    first = next(e for e in record.events if isinstance(e, ModelEnd))
    assert first.attrs["raw_arguments"]  # the client received arguments that are not JSON
    assert receipt.attrs["followed_by"]["action"] in ("continued", "gave_up")
    assert len(run.server.requests) >= 1


def test_crewai_answers_a_malformed_tool_call_with_its_parse_error() -> None:
    """CrewAI does not run a tool whose arguments are not JSON: the parse error goes back to the
    model as that call's result, and the model (having read one result) moves on."""
    run = run_with_fault("crewai", "malformed_tool_call")
    (receipt,) = run.proxy.records[0].receipts
    assert receipt.attrs["followed_by"]["action"] == "continued"
    assert run.result.status == "ok", run.result.error
    assert tools_ran(run.target) == ["add"]
    assert [s.tool for s in run.result.events if isinstance(s, ToolStart)] == ["add"]
    answer = run.server.requests[1].messages[-1]
    assert answer["role"] == "tool"
    assert "Failed to parse tool arguments as JSON" in answer["content"]
    ends = run.ends()
    assert len(ends) == 3 and [c.name for c in ends[0].tool_calls] == ["lookup"]
    assert_words_beside_the_call("crewai", ends[0])
