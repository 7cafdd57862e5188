"""``hbeval proxy openai`` on the Responses API (``POST /v1/responses``).

The real ``openai`` client's ``client.responses.create(...)`` goes through ``OpenAIProxy`` to
``ScriptedOpenAIServer`` on 127.0.0.1; the record is a run in a real SQLite store.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hbeval.proxy._openai import OpenAIProxy
from hbeval.proxy._spec import fault_set
from hbeval.store import open_store
from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.events import FaultInjected, ModelEnd, ModelStart, ToolEnd, ToolStart
from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec
from hbeval_core.faults.runtime import CANARY_TOOL

openai = pytest.importorskip("openai")

KEY = "sk-responses-secret-77"
QUESTION = "Where is order A1?"
TOOLS = [
    {
        "type": "function",
        "name": "lookup_order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]
LOOKUP = Reply(tool_calls=[ToolCall("lookup_order", {"order_id": "A1"}, id="call_a1")])


def faults(mode: str, *tool_faults: str, **params: Any) -> Any:
    out = fault_set(tool_faults)
    out.model = ModelFaultPlan("p", 0, (ModelFaultSpec("f0", mode, "*", (0,), 1.0, params),))
    return out


def client(proxy: OpenAIProxy, **kw: Any) -> Any:
    return openai.OpenAI(base_url=proxy.base_url, api_key=KEY, **kw)


def test_a_planted_429_then_the_upstreams_function_call_recorded_in_sqlite(
    tmp_path: Path,
) -> None:
    plan = faults("rate_limit", "prompt_injection:lookup_order@0", retry_after_ms=300)
    with (
        ScriptedOpenAIServer([LOOKUP, "Order A1 shipped."]) as up,
        OpenAIProxy(up.base_url, plan) as proxy,
    ):
        c = client(proxy, max_retries=2)
        t0 = time.monotonic()
        first = c.responses.create(model="m", input=QUESTION, tools=TOOLS)
        elapsed = time.monotonic() - t0
        (call,) = first.output
        assert call.type == "function_call" and call.call_id == "call_a1"
        assert json.loads(call.arguments) == {"order_id": "A1"}
        assert len(up.requests) == 1  # the 429 never reached the upstream
        second = c.responses.create(
            model="m",
            tools=TOOLS,
            input=[
                {"role": "user", "content": QUESTION},
                call.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": "call_a1", "output": "shipped"},
            ],
        )
        assert second.output_text == "Order A1 shipped."
        seen = up.requests[1].messages[-1]["output"]
    assert elapsed >= 0.3  # the SDK waited out Retry-After before asking again
    assert seen.startswith("shipped") and CANARY_TOOL in seen
    db = tmp_path / "proxy.db"
    run_id = proxy.write(str(db))
    store = open_store(str(db), read_only=True)
    try:
        events = list(store.iter_events(run_id))
    finally:
        store.close()
    assert [e.kind for e in events] == [
        "run_start",
        "model_start", "fault_injected", "model_end",  # the planted 429
        "model_start", "model_end", "tool_start",  # the retry, issuing the call
        "fault_injected", "tool_end",  # the function_call_output as the model saw it
        "model_start", "model_end",
        "run_end",
    ]  # fmt: skip
    planted, tool_receipt = [e for e in events if isinstance(e, FaultInjected)]
    assert planted.mode == "rate_limit" and planted.attrs["status"] == 429
    followed = planted.attrs["followed_by"]
    assert followed["action"] == "retry" and followed["honoured_retry_after"] is True
    assert tool_receipt.mode == "prompt_injection" and tool_receipt.tool == "lookup_order"
    start = next(e for e in events if isinstance(e, ToolStart))
    assert (start.call_id, start.tool, start.args) == (
        "call_a1",
        "lookup_order",
        {"order_id": "A1"},
    )
    assert next(e for e in events if isinstance(e, ToolEnd)).result == seen
    starts = [e for e in events if isinstance(e, ModelStart)]
    assert starts[0].messages[0].content == QUESTION and starts[0].attrs["api"] == "responses"
    assert (starts[2].messages[-1].role, starts[2].messages[-1].tool_call_id) == ("tool", "call_a1")
    ends = [e for e in events if isinstance(e, ModelEnd)]
    assert ends[0].error is not None and ends[2].text == "Order A1 shipped."
    # The scripted server's usage: one token per 4 characters of the 18-character question
    # and of the 18-character arguments '{"order_id": "A1"}', rounded up.
    assert ends[1].usage is not None
    assert (ends[1].usage.input_tokens, ends[1].usage.output_tokens) == (5, 5)
    assert KEY.encode() not in db.read_bytes()


@pytest.mark.parametrize(
    ("mode", "params", "error", "status"),
    [
        ("model_error", {"http_status": 503}, "InternalServerError", 503),
        ("model_timeout", {"after_ms": 50}, "InternalServerError", 504),
        ("context_overflow", {}, "BadRequestError", 400),
    ],
)
def test_error_modes_raise_the_sdks_own_exception(
    mode: str, params: dict[str, Any], error: str, status: int
) -> None:
    with (
        ScriptedOpenAIServer(["unused"]) as up,
        OpenAIProxy(up.base_url, faults(mode, **params)) as proxy,
    ):
        with pytest.raises(getattr(openai, error)) as err:
            client(proxy, max_retries=0).responses.create(model="m", input=QUESTION)
        proxy.flush()
    assert err.value.status_code == status and up.requests == []
    (receipt,) = proxy.records[0].receipts
    assert receipt.mode == mode and receipt.attrs["status"] == status
    assert receipt.attrs["followed_by"] == {"action": "gave_up"}


@pytest.mark.parametrize("stream", [False, True])
def test_empty_completion_has_no_text_and_no_function_call(stream: bool) -> None:
    with (
        ScriptedOpenAIServer([LOOKUP]) as up,
        OpenAIProxy(up.base_url, faults("empty_completion")) as proxy,
    ):
        c = client(proxy, max_retries=0)
        if stream:
            events = list(c.responses.create(model="m", input=QUESTION, stream=True))
            response = events[-1].response
        else:
            response = c.responses.create(model="m", input=QUESTION, tools=TOOLS)
        proxy.flush()
    assert response.output_text == ""
    assert [item.type for item in response.output] == ["message"]
    assert up.requests == []
    (end,) = [e for e in proxy.records[0].events if isinstance(e, ModelEnd)]
    assert end.text == "" and end.tool_calls == []


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_tool_call_arguments_are_not_json(stream: bool) -> None:
    with (
        ScriptedOpenAIServer([LOOKUP]) as up,
        OpenAIProxy(up.base_url, faults("malformed_tool_call")) as proxy,
    ):
        c = client(proxy)
        if stream:
            events = list(c.responses.create(model="m", input=QUESTION, stream=True))
            response = events[-1].response
        else:
            response = c.responses.create(model="m", input=QUESTION, tools=TOOLS)
        proxy.flush()
    (call,) = response.output
    with pytest.raises(ValueError):
        json.loads(call.arguments)
    (receipt,) = proxy.records[0].receipts
    assert receipt.payload == call.arguments and receipt.attrs["observed"] == "malformed"


def test_a_streamed_response_passes_through_and_its_function_call_is_recorded() -> None:
    with ScriptedOpenAIServer([LOOKUP]) as up, OpenAIProxy(up.base_url) as proxy:
        stream = client(proxy).responses.create(model="m", input=QUESTION, tools=TOOLS, stream=True)
        kinds = [event.type for event in stream]
        proxy.flush()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    (end,) = [e for e in proxy.records[0].events if isinstance(e, ModelEnd)]
    assert [(c.id, c.name, c.args) for c in end.tool_calls] == [
        ("call_a1", "lookup_order", {"order_id": "A1"})
    ]
    assert up.requests[0].stream is True


def test_a_stream_cut_ends_the_responses_stream_early() -> None:
    httpx = pytest.importorskip("httpx")
    with (
        ScriptedOpenAIServer(["Order A1 shipped."]) as up,
        OpenAIProxy(up.base_url, faults("stream_cut", cut_after=2)) as proxy,
    ):
        stream = client(proxy, max_retries=0).responses.create(
            model="m", input=QUESTION, stream=True
        )
        kinds = []
        with pytest.raises(httpx.RemoteProtocolError, match="incomplete"):
            for event in stream:
                kinds.append(event.type)
        proxy.flush()
    # The scripted stream's first two events arrive; its text and completion never do.
    assert kinds == ["response.created", "response.output_item.added"]
    (receipt,) = proxy.records[0].receipts
    assert receipt.observed == "stream_cut" and receipt.attrs["chunks_sent"] == 2
    (end,) = [e for e in proxy.records[0].events if isinstance(e, ModelEnd)]
    assert end.error == "stream cut after 2 chunks" and end.text is None
