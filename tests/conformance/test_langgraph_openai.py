"""The adapter conformance suite on LangGraph with the real provider client: ``ChatOpenAI``
(langchain-openai) against ``ScriptedOpenAIServer``, plain and streaming, with a hand-built graph
and a parallel tool call."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_openai")

from langchain.agents import create_agent

from hbeval.testing import ScriptedOpenAIServer
from hbeval_core.events import ModelEnd, ToolStart
from tests.adapters.langgraph import test_langgraph_conformance as base
from tests.adapters.langgraph.test_langgraph_fixtures import hand_built_graph, make_tools
from tests.conformance.providers import (
    Endpoint,
    ProviderChecks,
    StandardResponder,
    chat_openai,
    no_tiktoken,
)

__all__ = ["no_tiktoken"]


def openai_agent(server: Endpoint, **model: Any) -> Any:
    calls: list[str] = []
    graph = create_agent(chat_openai(server, **model), make_tools(calls))
    graph.hbeval_calls = calls
    return graph


def hand_built_agent(server: Endpoint) -> Any:
    """A ``StateGraph`` whose own node runs the tools (no ToolNode), on ``ChatOpenAI``."""
    return hand_built_graph(lambda tools: chat_openai(server).bind_tools(tools))


class TestLangGraphOnChatOpenAI(ProviderChecks, base.TestLangGraphConformance):
    def make_target(self) -> Any:
        return openai_agent(self.server)

    def make_custom_target(self) -> Any:
        return hand_built_agent(self.server)

    def make_shape_targets(self) -> dict[str, tuple[Any, tuple[Any, ...]]]:
        return {"streaming": (openai_agent(self.server, streaming=True, stream_usage=True), ())}

    def test_a_parallel_tool_call_is_captured_and_linked(self) -> None:
        with ScriptedOpenAIServer(StandardResponder(parallel=True)) as server:
            result = self.run(target=openai_agent(server))
        assert result.status == "ok", result.error
        (first, _) = self.of(result.events, ModelEnd)
        issued = [c.id for c in first.tool_calls]
        starts = self.of(result.events, ToolStart)
        # LangGraph runs a parallel batch on threads: both start, in either order.
        assert sorted(s.tool for s in starts) == ["add", "lookup"]
        assert sorted(s.call_id for s in starts) == sorted(issued)

    def test_the_streaming_shape_streams_and_reports_usage(self) -> None:
        from hbeval_core.contract import token_usage

        (target, _) = self.make_shape_targets()["streaming"]
        result = self.run(target=target)
        assert result.status == "ok", result.error
        requests = self.server.requests
        assert len(requests) == 3 and all(r.stream for r in requests)
        assert all(r.body.get("stream_options") == {"include_usage": True} for r in requests)
        assert token_usage(result.events) == {"input_tokens": 300, "output_tokens": 30}
        assert (result.response_text or "").strip() == "done"
