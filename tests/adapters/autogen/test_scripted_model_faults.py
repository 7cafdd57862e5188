"""``ScriptedChatCompletionClient`` under planted model faults: what the real
``OpenAIChatCompletionClient`` (``max_retries=0``) raises or returns for the same fault, served
over HTTP as written by hand (``scripted_faults.HAND_ANSWERS``); then a battery run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_ext.models.openai")

from autogen_core.models import UserMessage

from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_autogen.testing import Reply as ScriptedReply
from hbeval_autogen.testing import ScriptedChatCompletionClient
from hbeval_core.events import FaultInjected
from tests.adapters.autogen.test_autogen_fixtures import scripted_agent
from tests.conformance.providers import autogen_client
from tests.conformance.scripted_faults import (
    RAISED,
    assert_same_error,
    planted,
    raised,
    real_error,
    run_planted,
)

ASK = [UserMessage(content="Look up order A1.", source="user")]


def create(client: Any) -> Any:
    return asyncio.run(client.create(ASK))


def scripted(reply: Any = "hello") -> ScriptedChatCompletionClient:
    return ScriptedChatCompletionClient(lambda messages, tools: reply)


@pytest.mark.parametrize("mode", RAISED)
def test_a_raised_fault_is_the_exception_the_openai_client_raises(mode: str) -> None:
    real = real_error(mode, lambda at: create(autogen_client(at, max_retries=0)))
    client = scripted()
    with planted(mode) as desk:
        fake = raised(lambda: create(client))
    assert_same_error(real, fake)
    (receipt,) = desk.receipts()
    assert receipt.mode == mode and receipt.attrs["delivered_by"] == "scripted_model"


def test_an_empty_completion_is_the_empty_text_the_client_returns() -> None:
    with ScriptedOpenAIServer([Reply("")]) as server:
        real = create(autogen_client(server, max_retries=0))
    with planted("empty_completion"):
        fake = create(scripted())
    assert (fake.content, fake.finish_reason) == (real.content, real.finish_reason) == ("", "stop")


def test_a_malformed_tool_call_hands_over_the_spoiled_arguments_as_the_client_does() -> None:
    # invalid_json cuts the 21 characters of {"query": "order A1"} after 10, leaving an open key.
    spoiled = '{"query": ,"'
    with ScriptedOpenAIServer([Reply("x", [ToolCall("lookup", spoiled, id="c1")])]) as server:
        real = create(autogen_client(server, max_retries=0))
    with planted("malformed_tool_call"):
        fake = create(scripted(ScriptedReply(calls=[("lookup", {"query": "order A1"})])))
    assert [(c.name, c.arguments) for c in fake.content] == [
        (c.name, c.arguments) for c in real.content
    ]
    assert fake.content[0].arguments == spoiled


def test_an_agent_without_a_retry_gives_up_on_the_429(tmp_path: Path) -> None:
    report, events = run_planted(scripted_agent, tmp_path)
    (receipt,) = [e for e in events if isinstance(e, FaultInjected)]
    assert receipt.attrs["received"] is True
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}
    row = report.model_faults.by_mode["rate_limit"]  # type: ignore[union-attr]
    assert (row.trials, row.recovered) == (1, 0) and row.handling["gave_up"] == 1
