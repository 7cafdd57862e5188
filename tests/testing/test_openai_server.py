"""ScriptedOpenAIServer behind the real ``openai`` client: text, tool calls, streaming, usage,
errors and the SDK's own retries, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from hbeval.testing import ErrorReply, Reply, ScriptedOpenAIServer, ToolCall, Usage

USER: Any = [{"role": "user", "content": "Where is order A1?"}]  # 18 characters


def client(server: ScriptedOpenAIServer, **kwargs: Any) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="unused", **kwargs)


def test_text_reply_with_usage_and_the_request_recorded() -> None:
    with ScriptedOpenAIServer(["Order A1 shipped."]) as server:
        got = client(server).chat.completions.create(model="gpt-4o-mini", messages=USER)
        requests = server.requests
    assert got.choices[0].message.content == "Order A1 shipped."
    assert got.choices[0].finish_reason == "stop"
    assert got.model == "gpt-4o-mini"
    # Defaults: one token per 4 characters, rounded up: 18 chars in, 17 chars out.
    assert got.usage is not None
    assert (got.usage.prompt_tokens, got.usage.completion_tokens) == (5, 5)
    assert got.usage.total_tokens == 10
    (request,) = requests
    assert request.path == "/v1/chat/completions"
    assert request.messages == USER and request.model == "gpt-4o-mini" and not request.stream
    assert request.headers["authorization"] == "Bearer unused"


def test_parallel_tool_calls_and_given_usage() -> None:
    reply = Reply(
        "Checking both.",
        tool_calls=[ToolCall("lookup", {"query": "A1"}), ToolCall("add", {"a": 2, "b": 3})],
        usage=Usage(120, 30),
    )
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    with ScriptedOpenAIServer([reply]) as server:
        got = client(server).chat.completions.create(
            model="m",
            messages=USER,
            tools=tools,
        )
        assert server.requests[0].tools == tools
    message = got.choices[0].message
    assert message.content == "Checking both."
    assert got.choices[0].finish_reason == "tool_calls"
    calls = message.tool_calls or []
    assert [c.function.name for c in calls] == ["lookup", "add"]
    assert [json.loads(c.function.arguments) for c in calls] == [{"query": "A1"}, {"a": 2, "b": 3}]
    assert len({c.id for c in calls}) == 2
    assert got.usage is not None and got.usage.total_tokens == 150


def test_streaming_deltas_rebuild_the_reply_and_usage_comes_last() -> None:
    reply = Reply(
        "A long explanation before two calls.",
        tool_calls=[
            ToolCall("lookup", {"query": "a rather long order query"}, id="c1"),
            ToolCall("add", {"a": 2, "b": 3}, id="c2"),
        ],
        usage=Usage(40, 12),
    )
    with ScriptedOpenAIServer([reply, "plain"]) as server:
        stream = client(server).chat.completions.create(
            model="m",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, args, names, ids, usage, finishes = "", {0: "", 1: ""}, {}, {}, None, []
        for chunk in stream:
            if chunk.usage is not None:
                assert chunk.choices == []
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finishes.append(choice.finish_reason)
                for call in choice.delta.tool_calls or []:
                    if call.id:
                        ids[call.index] = call.id
                    if call.function and call.function.name:
                        names[call.index] = call.function.name
                    if call.function and call.function.arguments:
                        args[call.index] += call.function.arguments
        # Without include_usage there is no usage chunk.
        plain = list(client(server).chat.completions.create(model="m", messages=USER, stream=True))
        assert server.requests[0].stream
    assert text == "A long explanation before two calls."
    assert names == {0: "lookup", 1: "add"} and ids == {0: "c1", 1: "c2"}
    assert json.loads(args[0]) == {"query": "a rather long order query"}
    assert json.loads(args[1]) == {"a": 2, "b": 3}
    assert [f for f in finishes if f] == ["tool_calls"]
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (40, 12)
    assert all(c.usage is None for c in plain)
    assert "".join(c.choices[0].delta.content or "" for c in plain if c.choices) == "plain"


def test_a_429_is_retried_by_the_sdk_after_retry_after_ms() -> None:
    with ScriptedOpenAIServer([ErrorReply(429), ErrorReply(429, retry_after_ms=5), "ok"]) as server:
        started = time.monotonic()
        got = client(server, max_retries=2).chat.completions.create(model="m", messages=USER)
        elapsed = time.monotonic() - started
        assert len(server.requests) == 3
    assert got.choices[0].message.content == "ok"
    # The SDK's own backoff without the header starts at 0.5 s; 20 + 5 ms were asked for.
    assert elapsed < 0.45, elapsed


def test_429_headers_and_body_on_the_wire() -> None:
    with ScriptedOpenAIServer([ErrorReply(429, "slow down")]) as server:
        request = urllib.request.Request(
            server.url + "/chat/completions",
            data=json.dumps({"model": "m", "messages": USER}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
        assert server.requests[0].path == "/chat/completions"
    error = info.value
    assert error.code == 429
    assert error.headers["retry-after-ms"] == "20" and error.headers["Retry-After"] == "1"
    body = json.loads(error.read())
    assert body["error"]["message"] == "slow down"
    assert body["error"]["type"] == "rate_limit_exceeded"


def test_5xx_reaches_the_caller_when_retries_run_out() -> None:
    script = [ErrorReply(503, "upstream down", retry_after_ms=1)] * 2
    with ScriptedOpenAIServer(script) as server:
        with pytest.raises(openai.InternalServerError) as info:
            client(server, max_retries=1).chat.completions.create(model="m", messages=USER)
        assert len(server.requests) == 2
    assert info.value.status_code == 503 and "upstream down" in str(info.value)


def test_a_callable_script_answers_from_the_messages() -> None:
    def reply(messages: list[dict[str, Any]]) -> Reply | str:
        if messages[-1]["role"] == "tool":
            return f"Result: {messages[-1]['content']}"
        return Reply(tool_calls=[ToolCall("lookup", {"query": "A1"})])

    with ScriptedOpenAIServer(reply) as server:
        api = client(server)
        first = api.chat.completions.create(model="m", messages=USER)
        (call,) = first.choices[0].message.tool_calls or []
        history = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "shipped"},
        ]
        second = api.chat.completions.create(model="m", messages=history)
        assert server.remaining == 0
    assert first.choices[0].message.content is None
    assert second.choices[0].message.content == "Result: shipped"


def test_an_exhausted_script_answers_500_saying_so() -> None:
    with ScriptedOpenAIServer(["one"]) as server:
        api = client(server, max_retries=0)
        api.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            api.chat.completions.create(model="m", messages=USER)
        server.push("two")
        got = api.chat.completions.create(model="m", messages=USER)
        assert server.exhausted == 1
    assert got.choices[0].message.content == "two"


def test_async_client_from_an_event_loop() -> None:
    async def main() -> list[str]:
        async with ScriptedOpenAIServer(["a", "b"]) as server:
            api = AsyncOpenAI(base_url=server.base_url, api_key="unused")
            try:
                got = await asyncio.gather(
                    *(api.chat.completions.create(model="m", messages=USER) for _ in range(2))
                )
            finally:
                await api.close()
        return sorted(g.choices[0].message.content or "" for g in got)

    assert asyncio.run(main()) == ["a", "b"]


def test_unknown_paths_and_bad_scripts() -> None:
    with ScriptedOpenAIServer([]) as server:
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(server.url + "/v1/models", timeout=5)
        assert info.value.code == 404
        assert server.requests == []
    with pytest.raises(ValueError, match="retry_after_ms"):
        ErrorReply(429, retry_after_ms=1000)
    with pytest.raises(ValueError, match="status"):
        ErrorReply(200)
    with pytest.raises(TypeError, match="sequence"):
        ScriptedOpenAIServer("hello")
    with pytest.raises(RuntimeError, match="not running"):
        _ = ScriptedOpenAIServer().url


def test_a_raising_responder_is_a_500_naming_it() -> None:
    def broken(messages: list[dict[str, Any]]) -> str:
        raise KeyError("no rule")

    with ScriptedOpenAIServer(broken) as server:
        with pytest.raises(openai.InternalServerError, match="KeyError"):
            client(server, max_retries=0).chat.completions.create(model="m", messages=USER)


def test_responses_api_text_and_function_call() -> None:
    script = [Reply(tool_calls=[ToolCall("lookup", {"query": "A1"}, id="call_x")]), "Shipped."]
    with ScriptedOpenAIServer(script) as server:
        c = client(server)
        first = c.responses.create(model="m", input="Where is order A1?")
        (call,) = first.output
        second = c.responses.create(
            model="m",
            input=[
                *USER,
                call.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": "call_x", "output": "shipped"},
            ],
        )
        requests = server.requests
    assert (call.type, call.call_id, call.name) == ("function_call", "call_x", "lookup")
    assert json.loads(call.arguments) == {"query": "A1"}
    assert second.output_text == "Shipped."
    # 18 characters in, 8 out: one token per 4, rounded up.
    assert second.usage is not None
    assert (second.usage.input_tokens, second.usage.output_tokens) == (5, 2)
    assert requests[0].path == "/v1/responses"
    assert requests[0].messages == USER  # a string input is one user message
    assert requests[1].messages[-1] == {
        "type": "function_call_output",
        "call_id": "call_x",
        "output": "shipped",
    }


def test_responses_api_streams_its_events() -> None:
    with ScriptedOpenAIServer(["Order A1 shipped."]) as server:
        events = list(client(server).responses.create(model="m", input="hi", stream=True))
    assert [e.type for e in events] == [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[-1].response.output_text == "Order A1 shipped."
