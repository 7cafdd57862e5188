"""The real provider clients pointed at ``ScriptedOpenAIServer`` (helpers for the tests).

Each builder takes an endpoint (a running server, or ``hbeval proxy openai`` in front of one:
anything with a ``base_url``) and returns what a user would build: ``ChatOpenAI`` with
``base_url`` set, ``crewai.LLM`` on its OpenAI provider, autogen-ext's
``OpenAIChatCompletionClient`` with explicit ``model_info`` (so no model table is consulted).
``no_tiktoken`` makes any use of tiktoken fail the test: tokens are never counted locally,
so nothing tries to download an encoding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pytest

from hbeval.testing import ErrorReply, Reply, ScriptedOpenAIServer, ToolCall

MODEL = "scripted-model"

AUTOGEN_MODEL_INFO: dict[str, Any] = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "structured_output": False,
    "family": "unknown",
    "multiple_system_messages": True,
}


class Endpoint(Protocol):
    """Where a provider client is pointed: ``ScriptedOpenAIServer`` or ``OpenAIProxy``."""

    @property
    def base_url(self) -> str: ...


class TiktokenUsed(AssertionError):
    """A client tried to count tokens with tiktoken (which would download an encoding)."""


@pytest.fixture
def no_tiktoken(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import tiktoken

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise TiktokenUsed(f"tiktoken was asked for an encoding: {args!r}")

    for name in ("get_encoding", "encoding_for_model"):
        monkeypatch.setattr(tiktoken, name, refuse)
    yield


def autogen_client(server: Endpoint, **kwargs: Any) -> Any:
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    kwargs.setdefault("max_retries", 2)
    return OpenAIChatCompletionClient(
        model=MODEL,
        base_url=server.base_url,
        api_key="unused",
        model_info=AUTOGEN_MODEL_INFO,  # type: ignore[arg-type]
        **kwargs,
    )


def chat_openai(server: Endpoint, **kwargs: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=MODEL, base_url=server.base_url, api_key="unused", **kwargs)


def crewai_llm(server: Endpoint, **kwargs: Any) -> Any:
    from crewai import LLM

    return LLM(model=f"openai/{MODEL}", base_url=server.base_url, api_key="unused", **kwargs)


def system_text(messages: list[dict[str, Any]]) -> str:
    """The system messages of a request, joined (how a responder tells agents apart)."""
    return "\n".join(
        str(m.get("content") or "") for m in messages if m.get("role") in ("system", "developer")
    )


def last_tool_result(messages: list[dict[str, Any]]) -> str | None:
    """The content of the request's last message when it is a tool result."""
    if messages and messages[-1].get("role") == "tool":
        return str(messages[-1].get("content") or "")
    return None


PER_CALL_USAGE = (100, 10)
"""Prompt and completion tokens the standard responder reports on every reply."""


class StandardResponder:
    """The conformance suite's standard script, answered from what the model has read.

    No tool result yet: explain and call ``lookup(query="order A1")``; one: explain and call
    ``add(a=2, b=3)``; two or more: answer "done". With ``parallel`` the first reply issues both
    calls at once. A request whose system message names the reviewer gets "APPROVE". Errors in
    ``before`` are answered first (one per request), so a client's retries are exercised.
    """

    def __init__(self, *, parallel: bool = False, before: Sequence[ErrorReply] = ()) -> None:
        self.parallel = parallel
        self.before = list(before)

    def __call__(self, messages: list[dict[str, Any]]) -> Reply | ErrorReply:
        from hbeval.testing import Usage

        if self.before:
            return self.before.pop(0)
        usage = Usage(*PER_CALL_USAGE)
        if "reviewer" in system_text(messages).lower():
            return Reply("APPROVE", usage=usage)
        if "lead" in system_text(messages).lower():
            return Reply("Clerk, please handle this request.", usage=usage)
        results = sum(1 for m in messages if m.get("role") == "tool")
        lookup = ToolCall("lookup", {"query": "order A1"})
        add = ToolCall("add", {"a": 2, "b": 3})
        if results == 0 and self.parallel:
            return Reply("I'll look up order A1 and add 2 and 3 at once.", [lookup, add], usage)
        if results == 0:
            return Reply("I'll look up order A1 first.", [lookup], usage)
        if results == 1 and not self.parallel:
            return Reply("Now I'll add 2 and 3.", [add], usage)
        return Reply("done", usage=usage)


class ProviderServer:
    """Mixin for a conformance class: a ``ScriptedOpenAIServer`` on the standard responder runs
    for each test (``self.server``), and tiktoken is out of bounds."""

    server: ScriptedOpenAIServer

    @pytest.fixture(autouse=True)
    def _provider_server(self, no_tiktoken: None) -> Iterator[None]:
        with ScriptedOpenAIServer(StandardResponder()) as server:
            self.server = server
            yield


class ProviderChecks(ProviderServer):
    """Checks only a provider client can fail: usage and cost as the server reported them,
    every call explained and linked by the model's own tool-call id, the client's own retries.

    Mixed in before ``AdapterConformance`` (whose ``run``, ``of`` and hooks it uses).
    """

    MODEL_CALLS_PER_RUN: int = 3

    def test_usage_and_cost_are_what_the_server_reported(self) -> None:
        from hbeval.runner._budget import trial_cost
        from hbeval_core.contract import token_usage
        from hbeval_core.events import ModelEnd

        result = self.run()  # type: ignore[attr-defined]
        assert result.status == "ok", result.error
        ends = [e for e in result.events if isinstance(e, ModelEnd)]
        n = self.MODEL_CALLS_PER_RUN
        assert len(ends) == n and len(self.server.requests) == n
        prompt, completion = PER_CALL_USAGE
        assert all(
            (e.usage.input_tokens, e.usage.output_tokens) == (prompt, completion)
            for e in ends
            if e.usage is not None
        )
        usage = token_usage(result.events)
        assert usage == {"input_tokens": prompt * n, "output_tokens": completion * n}
        # USD 3 / 15 per million input / output tokens, worked out by hand.
        expected = (prompt * n * 3.0 + completion * n * 15.0) / 1_000_000
        assert trial_cost({"usage": usage}, {"input": 3.0, "output": 15.0}) == pytest.approx(
            expected
        )

    def test_every_call_is_explained_and_linked_by_id(self) -> None:
        from hbeval.scoring import score_trial
        from hbeval.testing.conformance import two_tool_task

        verdict = score_trial(two_tool_task(), None, self.run()).as_dict()  # type: ignore[attr-defined]
        links = verdict["links"]
        assert (links["calls"], links["explained"], links["id"]) == (2, 2, 2), links

    def test_a_429_is_retried_by_the_client_inside_one_model_call(self) -> None:
        from hbeval_core.events import ModelEnd

        responder = StandardResponder(before=[ErrorReply(429, "slow down")])
        with ScriptedOpenAIServer(responder) as server:
            self.server = server
            result = self.run()  # type: ignore[attr-defined]
            requests = server.requests
        assert result.status == "ok", result.error
        assert len(requests) == self.MODEL_CALLS_PER_RUN + 1
        assert requests[0].messages == requests[1].messages  # the same call, sent again
        assert len([e for e in result.events if isinstance(e, ModelEnd)]) == (
            self.MODEL_CALLS_PER_RUN
        )
