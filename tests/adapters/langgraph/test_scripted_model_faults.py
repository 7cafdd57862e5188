"""``ScriptedChatModel`` under planted model faults: what ``ChatOpenAI`` would have raised.

Side by side, the real ``ChatOpenAI`` (``max_retries=0``) meets each fault over HTTP from
``ScriptedOpenAIServer`` answering it as written by hand (``scripted_faults.HAND_ANSWERS``),
and the scripted model meets the same fault planted in-process: the same exception class,
status and ``Retry-After``; the same empty reply; the same ``invalid_tool_calls``. Then a
battery run on a ``create_agent`` graph: the receipt in the trace and the report's figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_openai")

import openai
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.events import FaultInjected, ModelStart
from hbeval_langgraph.testing import ScriptedChatModel, tool_call
from tests.adapters.langgraph.test_langgraph_fixtures import TWO_TOOL_SCRIPT, make_tools
from tests.conformance.scripted_faults import (
    RAISED,
    assert_same_error,
    planted,
    raised,
    real_error,
    run_planted,
)


def chat_openai(at: Any) -> Any:
    return ChatOpenAI(model="m", base_url=at.base_url, api_key="k", max_retries=0)


@pytest.mark.parametrize("mode", RAISED)
def test_a_raised_fault_is_the_exception_chatopenai_raises(mode: str) -> None:
    real = real_error(mode, lambda at: chat_openai(at).invoke("Look up order A1."))
    model = ScriptedChatModel(responses=[AIMessage("hello")])
    with planted(mode) as desk:
        scripted = raised(lambda: model.invoke("Look up order A1."))
    assert_same_error(real, scripted)
    (receipt,) = desk.receipts()
    assert receipt.mode == mode and receipt.call_id == "model#0"
    assert receipt.attrs["received"] is True
    assert receipt.attrs["delivered_by"] == "scripted_model"
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}  # no further call


def test_rate_limit_carries_retry_after_as_the_provider_sends_it() -> None:
    model = ScriptedChatModel(responses=[AIMessage("hello")])
    with planted("rate_limit"):
        scripted = raised(lambda: model.invoke("hi"))
    assert isinstance(scripted, openai.RateLimitError) and scripted.status_code == 429
    # 50 ms planted: retry-after-ms says 50, Retry-After rounds up to a whole second.
    assert scripted.response.headers["retry-after-ms"] == "50"
    assert scripted.response.headers["retry-after"] == "1"


def test_an_empty_completion_is_the_empty_message_chatopenai_returns() -> None:
    with ScriptedOpenAIServer([Reply("")]) as server:
        real = chat_openai(server).invoke("hi")
    with planted("empty_completion") as desk:
        scripted = ScriptedChatModel(responses=[AIMessage("hello")]).invoke("hi")
    assert (scripted.content, scripted.tool_calls) == (real.content, real.tool_calls) == ("", [])
    assert desk.receipts()[0].observed == "empty"


def test_a_malformed_tool_call_lands_in_invalid_tool_calls_as_with_chatopenai() -> None:
    # The plan's invalid_json cuts the 21 characters of {"query": "order A1"} after 10 and
    # leaves an open key: {"query": ,"
    spoiled = '{"query": ,"'
    reply = Reply("looking", [ToolCall("lookup", spoiled, id="call_1")])
    with ScriptedOpenAIServer([reply]) as server:
        real = chat_openai(server).invoke("hi")
    script = [
        AIMessage("looking", tool_calls=[tool_call("lookup", {"query": "order A1"}, "call_1")])
    ]
    with planted("malformed_tool_call") as desk:
        scripted = ScriptedChatModel(responses=script).invoke("hi")
    assert real.tool_calls == scripted.tool_calls == []
    assert scripted.invalid_tool_calls == real.invalid_tool_calls
    assert scripted.invalid_tool_calls[0]["args"] == spoiled
    assert desk.receipts()[0].observed == "malformed"


def test_a_reply_without_a_tool_call_cannot_be_malformed() -> None:
    with planted("malformed_tool_call") as desk:
        scripted = ScriptedChatModel(responses=[AIMessage("hello")]).invoke("hi")
    assert scripted.content == "hello"
    (receipt,) = desk.receipts()
    assert receipt.injected == "skipped" and receipt.attrs["reason"] == "no_tool_call"


def _run(tmp_path: Path, **agent: Any) -> tuple[Any, list[Any]]:
    def factory() -> Any:
        model = ScriptedChatModel(responses=list(TWO_TOOL_SCRIPT))
        return create_agent(model, make_tools([]), **agent)

    return run_planted(factory, tmp_path)


def test_an_agent_that_retries_after_retry_after_is_deliberate(tmp_path: Path) -> None:
    retry = ModelRetryMiddleware(
        max_retries=2, retry_on=(openai.RateLimitError,), initial_delay=0.1, jitter=False
    )
    report, events = _run(tmp_path, middleware=[retry])
    (receipt,) = [e for e in events if isinstance(e, FaultInjected)]
    # Right after the model call it faulted, as the proxy records it.
    assert isinstance(events[events.index(receipt) - 1], ModelStart)
    followed = receipt.attrs["followed_by"]
    assert followed["action"] == "retry" and followed["honoured_retry_after"] is True
    assert followed["after_ms"] >= 100 * 0.95
    row = report.model_faults.by_mode["rate_limit"]  # type: ignore[union-attr]
    assert (row.trials, row.recovered, row.frr) == (1, 1, 1.0)
    assert row.handling["deliberate"] == 1
    # The agent's trace: the faulted call, its retry and the two standard calls after it.
    assert len([e for e in events if isinstance(e, ModelStart)]) == 4


def test_an_agent_without_a_retry_gives_up_on_the_429(tmp_path: Path) -> None:
    report, events = _run(tmp_path)
    (receipt,) = [e for e in events if isinstance(e, FaultInjected)]
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}
    (trial,) = report.trials
    assert "RateLimitError" in (trial.error or "")
    row = report.model_faults.by_mode["rate_limit"]  # type: ignore[union-attr]
    assert (row.trials, row.recovered, row.frr) == (1, 0, 0.0)
    assert row.handling["gave_up"] == 1
