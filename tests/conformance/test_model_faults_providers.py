"""Every model fault mode delivered through each adapter's real provider client.

LangGraph on ``ChatOpenAI`` and AutoGen on ``OpenAIChatCompletionClient`` are pointed at
``hbeval proxy openai`` (``OpenAIProxy``), itself in front of ``ScriptedOpenAIServer`` running
the standard script. The proxy plants the fault on the first model call at the HTTP layer; the
client's own retry logic meets it. Each test checks the receipt (the client received it) and
what followed, and what the adapter's own trace says about the same run.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openai")

from hbeval.proxy._openai import OpenAIProxy
from hbeval.proxy._spec import FaultSet
from hbeval.testing import ScriptedOpenAIServer
from hbeval.testing.conformance import two_tool_task
from hbeval_core.events import ModelEnd
from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec
from tests.conformance.providers import AUTOGEN_MODEL_INFO, MODEL, StandardResponder, no_tiktoken

__all__ = ["no_tiktoken"]

RETRIED = ("rate_limit", "model_error", "model_timeout", "stream_cut")
"""Modes the provider clients retry: the run then goes on as if nothing happened."""
PARAMS: dict[str, dict[str, Any]] = {
    "rate_limit": {"retry_after_ms": 60},
    "model_timeout": {"after_ms": 50},
}


def langgraph_agent(base_url: str) -> tuple[Any, Any]:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_openai")
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from hbeval_langgraph import LangGraphAdapter
    from tests.adapters.langgraph.test_langgraph_fixtures import make_tools

    model = ChatOpenAI(model=MODEL, base_url=base_url, api_key="sk-trial", max_retries=2)
    return LangGraphAdapter(), create_agent(model, make_tools([]))


def autogen_agent(base_url: str) -> tuple[Any, Any]:
    pytest.importorskip("autogen_agentchat")
    pytest.importorskip("autogen_ext.models.openai")
    from autogen_agentchat.agents import AssistantAgent
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    from hbeval_autogen import AutoGenAdapter
    from tests.adapters.autogen.test_autogen_fixtures import two_tools

    client = OpenAIChatCompletionClient(
        model=MODEL,
        base_url=base_url,
        api_key="sk-trial",
        model_info=AUTOGEN_MODEL_INFO,  # type: ignore[arg-type]
        max_retries=2,
    )
    agent = AssistantAgent(
        "agent",
        model_client=client,
        tools=two_tools([]),  # type: ignore[arg-type]
        max_tool_iterations=5,
    )
    return AutoGenAdapter(cancel_grace=2.0), agent


FRAMEWORKS = {"langgraph": langgraph_agent, "autogen": autogen_agent}


def run_with_fault(framework: str, mode: str) -> tuple[Any, OpenAIProxy, ScriptedOpenAIServer]:
    spec = ModelFaultSpec("f0", mode, "*", (0,), 1.0, PARAMS.get(mode, {}))
    faults = FaultSet(model=ModelFaultPlan("conformance/model", 0, (spec,)), source=[mode])
    with ScriptedOpenAIServer(StandardResponder()) as server:
        with OpenAIProxy(server.base_url, faults) as proxy:
            adapter, agent = FRAMEWORKS[framework](proxy.base_url)
            result = adapter.run_trial(agent, two_tool_task(), None, None)
        return result, proxy, server


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@pytest.mark.parametrize("mode", RETRIED)
def test_a_retried_model_fault_is_received_and_retried(framework: str, mode: str) -> None:
    result, proxy, server = run_with_fault(framework, mode)
    (record,) = proxy.records
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
    assert result.status == "ok", result.error
    assert len([e for e in result.events if isinstance(e, ModelEnd)]) == 3
    assert record.events[-1].kind == "run_end"
    assert len([e for e in record.events if isinstance(e, ModelEnd)]) == 4
    assert len(server.requests) == (4 if mode == "stream_cut" else 3)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_context_overflow_reaches_the_agent_as_the_clients_error(framework: str) -> None:
    result, proxy, server = run_with_fault(framework, "context_overflow")
    (receipt,) = proxy.records[0].receipts
    assert receipt.attrs["status"] == 400
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}
    assert result.status == "error"
    assert "context_length_exceeded" in (result.error or "") or "maximum context length" in (
        result.error or ""
    )
    assert server.requests == []


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_an_empty_completion_ends_or_derails_the_run(framework: str) -> None:
    result, proxy, server = run_with_fault(framework, "empty_completion")
    (receipt,) = proxy.records[0].receipts
    assert receipt.effect == "result_altered" and receipt.observed == "empty"
    # Both agents take an empty reply as the final answer: no further call.
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}
    ends = [e for e in result.events if isinstance(e, ModelEnd)]
    assert len(ends) == 1 and not ends[0].tool_calls and not (ends[0].text or "").strip()
    assert server.requests == []


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_malformed_tool_call_is_received_and_what_followed_is_recorded(framework: str) -> None:
    _, proxy, server = run_with_fault(framework, "malformed_tool_call")
    record = proxy.records[0]
    (receipt,) = record.receipts
    assert receipt.effect == "result_altered" and receipt.observed == "malformed"
    first = next(e for e in record.events if isinstance(e, ModelEnd))
    assert first.attrs["raw_arguments"]  # the client received arguments that are not JSON
    assert receipt.attrs["followed_by"]["action"] in ("continued", "gave_up")
    assert len(server.requests) >= 1
