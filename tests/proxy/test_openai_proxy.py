"""``hbeval proxy openai`` in front of ScriptedOpenAIServer, driven by the real ``openai`` client.

The upstream is the scripted server on 127.0.0.1; the client is the real SDK with its own
retry logic; the record is a run in a real SQLite store.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from hbeval.proxy._openai import OpenAIProxy
from hbeval.proxy._spec import FaultSpecError, fault_set, parse_fault_spec
from hbeval.store import open_store
from hbeval.testing import Reply, ScriptedOpenAIServer, ToolCall
from hbeval_core.events import FaultInjected, ModelEnd, ModelStart, ToolEnd, ToolStart
from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec
from hbeval_core.faults.runtime import CANARY_TOOL

openai = pytest.importorskip("openai")

KEY = "sk-test-secret-4242"
USER = [{"role": "user", "content": "Where is order A1?"}]


def plan(mode: str, calls: tuple[int, ...] | None = (0,), **params: Any) -> Any:
    faults = fault_set(())
    faults.model = ModelFaultPlan(
        "test-plan", 0, (ModelFaultSpec("f0", mode, "*", calls, 1.0, params),)
    )
    return faults


def client(proxy: OpenAIProxy, **kw: Any) -> Any:
    return openai.OpenAI(base_url=proxy.base_url, api_key=kw.pop("key", KEY), **kw)


def receipts(proxy: OpenAIProxy, session: int = 0) -> list[FaultInjected]:
    return proxy.records[session].receipts


def test_rate_limit_then_the_upstreams_answer_after_retry_after() -> None:
    # The SDK honours retry-after-ms when it is at most 60 s: the retry comes >= 300 ms later.
    with (
        ScriptedOpenAIServer(["Order A1 shipped."]) as up,
        OpenAIProxy(up.base_url, plan("rate_limit", retry_after_ms=300)) as proxy,
    ):
        t0 = time.monotonic()
        reply = client(proxy, max_retries=2).chat.completions.create(model="m", messages=USER)
        elapsed = time.monotonic() - t0
        proxy.flush()
        assert reply.choices[0].message.content == "Order A1 shipped."
        assert elapsed >= 0.3
        assert len(up.requests) == 1  # the 429 never reached the upstream
        (receipt,) = receipts(proxy)
    assert receipt.mode == "rate_limit" and receipt.attrs["status"] == 429
    assert receipt.attrs["received"] is True and receipt.call_id == "model#0"
    followed = proxy.records[0].receipts[0].attrs["followed_by"]
    assert followed["action"] == "retry"
    assert followed["after_ms"] >= 285 and followed["honoured_retry_after"] is True


def test_a_429_is_sent_with_retry_after_headers() -> None:
    with (
        ScriptedOpenAIServer(["unused"]) as up,
        OpenAIProxy(up.base_url, plan("rate_limit", retry_after_ms=2500)) as proxy,
    ):
        with pytest.raises(openai.RateLimitError) as err:
            client(proxy, max_retries=0).chat.completions.create(model="m", messages=USER)
        headers = err.value.response.headers
        assert headers["retry-after-ms"] == "2500" and headers["retry-after"] == "3"
    # The client gave up: no further call before the session ended.
    assert receipts(proxy)[0].attrs["followed_by"] == {"action": "gave_up"}
    assert up.requests == []


def test_a_retry_that_ignores_retry_after_is_counted_as_such() -> None:
    body = json.dumps({"model": "m", "messages": USER}).encode()

    def post() -> int:
        req = urllib.request.Request(
            proxy.base_url + "/chat/completions",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    with (
        ScriptedOpenAIServer(["ok"]) as up,
        OpenAIProxy(up.base_url, plan("rate_limit", retry_after_ms=1000)) as proxy,
    ):
        assert post() == 429
        assert post() == 200  # at once, not after 1000 ms
    followed = receipts(proxy)[0].attrs["followed_by"]
    assert followed["action"] == "retry" and followed["honoured_retry_after"] is False
    assert followed["after_ms"] < 1000


def test_fallback_to_another_model_is_recorded() -> None:
    with (
        ScriptedOpenAIServer(["from the fallback"]) as up,
        OpenAIProxy(up.base_url, plan("model_error", http_status=502)) as proxy,
    ):
        c = client(proxy, max_retries=0)
        with pytest.raises(openai.InternalServerError) as err:
            c.chat.completions.create(model="big", messages=USER)
        assert err.value.status_code == 502
        reply = c.chat.completions.create(model="small", messages=USER)
        assert reply.choices[0].message.content == "from the fallback"
    followed = receipts(proxy)[0].attrs["followed_by"]
    assert followed["action"] == "fallback" and followed["model"] == "small"


@pytest.mark.parametrize(
    ("mode", "params", "error", "status"),
    [
        ("model_error", {}, "InternalServerError", 503),
        ("model_timeout", {"after_ms": 50}, "InternalServerError", 504),
        ("context_overflow", {}, "BadRequestError", 400),
    ],
)
def test_error_modes_raise_the_sdks_own_exception(
    mode: str, params: dict[str, Any], error: str, status: int
) -> None:
    with (
        ScriptedOpenAIServer(["unused"]) as up,
        OpenAIProxy(up.base_url, plan(mode, **params)) as proxy,
    ):
        t0 = time.monotonic()
        with pytest.raises(getattr(openai, error)) as err:
            client(proxy, max_retries=0).chat.completions.create(model="m", messages=USER)
        assert err.value.status_code == status
        if mode == "model_timeout":
            assert time.monotonic() - t0 >= 0.05
        if mode == "context_overflow":
            assert err.value.code == "context_length_exceeded"
    (receipt,) = receipts(proxy)
    assert receipt.mode == mode and receipt.effect == "error" and receipt.attrs["status"] == status


def test_model_errors_are_retried_by_the_sdk_and_then_pass() -> None:
    with (
        ScriptedOpenAIServer(["recovered"]) as up,
        OpenAIProxy(up.base_url, plan("model_error", calls=(0, 1))) as proxy,
    ):
        reply = client(proxy, max_retries=2).chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "recovered"
    first, second = receipts(proxy)
    assert first.attempt == 0 and second.attempt == 1
    assert first.attrs["followed_by"]["action"] == "retry"
    assert second.attrs["followed_by"]["action"] == "retry"
    assert len(up.requests) == 1


def test_empty_completion_has_no_text_and_no_tool_call() -> None:
    with (
        ScriptedOpenAIServer(["unused"]) as up,
        OpenAIProxy(up.base_url, plan("empty_completion", calls=None)) as proxy,
    ):
        c = client(proxy, max_retries=0)
        reply = c.chat.completions.create(model="m", messages=USER)
        chunks = list(c.chat.completions.create(model="m", messages=USER, stream=True))
    assert reply.choices[0].message.content == "" and not reply.choices[0].message.tool_calls
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == ""
    assert up.requests == []  # an empty completion is the proxy's own answer
    assert [r.mode for r in receipts(proxy)] == ["empty_completion"] * 2


def test_malformed_tool_call_arguments_are_not_json() -> None:
    script = [Reply(tool_calls=[ToolCall("lookup_order", {"order_id": "A1"})])] * 2
    with (
        ScriptedOpenAIServer(script) as up,
        OpenAIProxy(up.base_url, plan("malformed_tool_call", calls=None)) as proxy,
    ):
        c = client(proxy, max_retries=0)
        reply = c.chat.completions.create(model="m", messages=USER)
        chunks = list(c.chat.completions.create(model="m", messages=USER, stream=True))
        assert len(up.requests) == 2
    arguments = reply.choices[0].message.tool_calls[0].function.arguments
    with pytest.raises(ValueError):
        json.loads(arguments)
    streamed = "".join(
        (tc.function.arguments or "")
        for ch in chunks
        if ch.choices
        for tc in ch.choices[0].delta.tool_calls or ()
    )
    with pytest.raises(ValueError):
        json.loads(streamed)
    first = receipts(proxy)[0]
    assert first.effect == "result_altered" and first.payload == arguments
    end = next(e for e in proxy.records[0].events if isinstance(e, ModelEnd))
    assert end.attrs["raw_arguments"] == {"call_1": arguments}


def test_malformed_tool_call_wrong_type() -> None:
    script = [Reply(tool_calls=[ToolCall("refund", {"order_id": "A1", "amount": 5})])]
    with (
        ScriptedOpenAIServer(script) as up,
        OpenAIProxy(up.base_url, plan("malformed_tool_call", malformed_kind="wrong_type")) as proxy,
    ):
        reply = client(proxy).chat.completions.create(model="m", messages=USER)
    args = json.loads(reply.choices[0].message.tool_calls[0].function.arguments)
    assert set(args) == {"order_id", "amount"} and not isinstance(args["amount"], int)


def test_stream_cut_breaks_the_stream_after_its_first_chunks() -> None:
    httpx = pytest.importorskip("httpx")
    with (
        ScriptedOpenAIServer(["a long answer " * 6, "answer again"]) as up,
        OpenAIProxy(up.base_url, plan("stream_cut", cut_after=2)) as proxy,
    ):
        c = client(proxy, max_retries=0)
        seen: list[str] = []
        with pytest.raises(httpx.RemoteProtocolError, match="incomplete"):
            for ch in c.chat.completions.create(model="m", messages=USER, stream=True):
                seen.append(ch.choices[0].delta.content or "" if ch.choices else "")
        assert len(seen) == 2  # the two chunks before the cut arrived
        reply = c.chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "answer again"
    (receipt,) = receipts(proxy)
    assert receipt.observed == "stream_cut" and receipt.attrs["chunks_sent"] == 2
    assert receipt.attrs["followed_by"]["action"] == "retry"


def test_a_cut_plain_response_is_retried_by_the_sdk() -> None:
    with (
        ScriptedOpenAIServer(["first, cut", "second, whole"]) as up,
        OpenAIProxy(up.base_url, plan("stream_cut")) as proxy,
    ):
        reply = client(proxy, max_retries=1).chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "second, whole"
        assert len(up.requests) == 2
    (receipt,) = receipts(proxy)
    assert receipt.attrs["bytes_sent"] > 0 and receipt.attrs["followed_by"]["action"] == "retry"


def test_streaming_passes_through_with_tool_calls_and_usage() -> None:
    script = [Reply("Checking.", tool_calls=[ToolCall("lookup_order", {"order_id": "A1"})])]
    with ScriptedOpenAIServer(script) as up, OpenAIProxy(up.base_url) as proxy:
        stream = client(proxy).chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        text, args, usage = "", "", None
        for ch in stream:
            usage = ch.usage or usage
            for choice in ch.choices:
                text += choice.delta.content or ""
                for tc in choice.delta.tool_calls or ():
                    args += tc.function.arguments or ""
        assert up.requests[0].stream
    assert text == "Checking." and json.loads(args) == {"order_id": "A1"}
    assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    end = next(e for e in proxy.records[0].events if isinstance(e, ModelEnd))
    assert end.text == "Checking." and end.tool_calls[0].args == {"order_id": "A1"}
    assert end.usage is not None and end.usage.output_tokens == usage.completion_tokens
    assert receipts(proxy) == []


def test_tool_result_faults_reach_the_model_in_the_next_request(tmp_path: Path) -> None:
    script = [
        Reply(tool_calls=[ToolCall("lookup_order", {"order_id": "A1"})]),
        "Order A1 shipped.",
    ]
    faults = fault_set(["prompt_injection:lookup_order@0", "rate_limit@0"])
    assert faults.model is not None
    faults.model = ModelFaultPlan(
        faults.model.id,
        0,
        (ModelFaultSpec("fault-1", "rate_limit", "*", (0,), 1.0, {"retry_after_ms": 20}),),
    )
    with ScriptedOpenAIServer(script) as up, OpenAIProxy(up.base_url, faults) as proxy:
        c = client(proxy)
        first = c.chat.completions.create(model="m", messages=USER)
        call = first.choices[0].message.tool_calls[0]
        messages = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": '{"status": "shipped"}'},
        ]
        c.chat.completions.create(model="m", messages=messages)
        seen = up.requests[1].messages[-1]["content"]
    assert seen.startswith('{"status": "shipped"}') and CANARY_TOOL in seen
    db = tmp_path / "proxy.db"
    run_id = proxy.write(str(db))
    store = open_store(str(db), read_only=True)
    try:
        events = list(store.iter_events(run_id))
        assert [e.seq for e in store.iter_events(run_id, "session-0")] == list(range(len(events)))
    finally:
        store.close()
    kinds = [e.kind for e in events]
    assert kinds == [
        "run_start",
        "model_start", "fault_injected", "model_end",  # the 429
        "model_start", "model_end", "tool_start",  # the retry, issuing the call
        "fault_injected", "tool_end",  # the result as the model saw it
        "model_start", "model_end",
        "run_end",
    ]  # fmt: skip
    tool_receipt = [e for e in events if isinstance(e, FaultInjected)][1]
    assert tool_receipt.mode == "prompt_injection" and tool_receipt.tool == "lookup_order"
    assert tool_receipt.attrs["delivered_by"] == "next_request"
    assert tool_receipt.payload is not None and tool_receipt.payload in seen
    assert next(e for e in events if isinstance(e, ToolStart)).args == {"order_id": "A1"}
    assert next(e for e in events if isinstance(e, ToolEnd)).result == seen
    starts = [e for e in events if isinstance(e, ModelStart)]
    assert starts[0].attrs["headers"]["authorization"] == "[redacted]"
    # The client's key is nowhere in the store.
    assert KEY.encode() not in db.read_bytes()


def test_upstream_key_replaces_the_clients_and_is_not_recorded(tmp_path: Path) -> None:
    with (
        ScriptedOpenAIServer(["ok"]) as up,
        OpenAIProxy(up.base_url, upstream_key="sk-upstream-777") as proxy,
    ):
        client(proxy).chat.completions.create(model="m", messages=USER)
        assert up.requests[0].headers["authorization"] == "Bearer sk-upstream-777"
    db = tmp_path / "k.db"
    proxy.write(str(db))
    data = db.read_bytes()
    assert b"sk-upstream-777" not in data and KEY.encode() not in data


def test_trial_keys_mark_sessions_and_refuse_other_keys() -> None:
    trials = {
        "key-a": ("s0-t0", plan("rate_limit", retry_after_ms=10)),
        "key-b": ("s1-t0", fault_set(())),
    }
    with (
        ScriptedOpenAIServer(["for a", "for b"]) as up,
        OpenAIProxy(up.base_url, trial_keys=trials) as proxy,
    ):
        with pytest.raises(openai.AuthenticationError):
            client(proxy, key="stranger", max_retries=0).chat.completions.create(
                model="m", messages=USER
            )
        assert up.requests == []
        a = client(proxy, key="key-a").chat.completions.create(model="m", messages=USER)
        b = client(proxy, key="key-b").chat.completions.create(model="m", messages=USER)
    assert (a.choices[0].message.content, b.choices[0].message.content) == ("for a", "for b")
    assert [r.session for r in proxy.records] == ["s0-t0", "s1-t0"]
    assert [len(r.receipts) for r in proxy.records] == [1, 0]


def test_a_new_key_or_an_idle_gap_starts_a_new_session() -> None:
    with (
        ScriptedOpenAIServer(["1", "2", "3"]) as up,
        OpenAIProxy(up.base_url, session_idle=0.2) as proxy,
    ):
        client(proxy, key="k1").chat.completions.create(model="m", messages=USER)
        client(proxy, key="k2").chat.completions.create(model="m", messages=USER)
        time.sleep(0.3)
        client(proxy, key="k2").chat.completions.create(model="m", messages=USER)
    assert [r.session for r in proxy.records] == ["session-0", "session-1", "session-2"]
    assert all(r.events[-1].kind == "run_end" for r in proxy.records)


def test_fault_specs_parse_into_their_family() -> None:
    assert isinstance(parse_fault_spec("rate_limit@0"), ModelFaultSpec)
    assert parse_fault_spec("stream_cut:gpt-*@1,2").target == "gpt-*"  # type: ignore[union-attr]
    with pytest.raises(FaultSpecError, match="unknown mode 'rate_limited'"):
        parse_fault_spec("rate_limited@0")
    with pytest.raises(ValueError, match="upstream must be an http"):
        OpenAIProxy("ftp://example.org")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cli_proxy_records_the_session_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    port = _free_port()
    with ScriptedOpenAIServer(["through the CLI"]) as up:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hbeval.cli", "proxy", "openai", "--upstream", up.base_url,
             "--port", str(port), "--fault", "model_error@0", "--record", str(db)],
            stderr=subprocess.PIPE, text=True, env={**os.environ, "HBEVAL_UPSTREAM_API_KEY": "sk-up-1"},
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            assert "OpenAI proxy at" in proc.stderr.readline()
            c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=1)
            reply = c.chat.completions.create(model="m", messages=USER)
            assert reply.choices[0].message.content == "through the CLI"
            assert up.requests[0].headers["authorization"] == "Bearer sk-up-1"
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "1 receipts" in err
    store = open_store(str(db), read_only=True)
    try:
        (run,) = store.list_runs()
        events = list(store.iter_events(run.run_id))
    finally:
        store.close()
    (receipt,) = [e for e in events if isinstance(e, FaultInjected)]
    assert receipt.mode == "model_error" and receipt.attrs["followed_by"]["action"] == "retry"
    assert b"sk-up-1" not in db.read_bytes() and KEY.encode() not in db.read_bytes()
    # The recorded trace says it was seen only through the proxy, and its score carries that.
    from hbeval.scoring import score_trial
    from hbeval_core.contract import Task, TrialResult

    result = TrialResult(final_state="through the CLI", events=events)
    evidence = score_trial(Task(id="t", question="q"), None, result).as_dict()["evidence"]
    assert (
        evidence["seen_through"]["proxy"] == "the trace was seen only through hbeval proxy openai"
    )
    assert "spans" in evidence["seen_through"]["cannot_support"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fault", "poisoned_description"], "hbeval mcp-proxy"),
        (["--fault", "nope@0"], "unknown mode 'nope'"),
        (["--session-idle", "0"], "--session-idle must be seconds > 0"),
    ],
)
def test_cli_bad_input_exits_2(args: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from hbeval.cli import app

    result = CliRunner().invoke(
        app, ["proxy", "openai", "--upstream", "http://127.0.0.1:9/v1", *args]
    )
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_mcp_proxy_refuses_model_fault_modes() -> None:
    from typer.testing import CliRunner

    from hbeval.cli import app

    result = CliRunner().invoke(app, ["mcp-proxy", "--fault", "rate_limit@0", "--", "true"])
    assert result.exit_code == 2, result.output
    assert "use `hbeval proxy openai`" in result.output


def test_an_unreachable_upstream_is_a_502_and_recorded() -> None:
    port = _free_port()  # nothing listens there
    with OpenAIProxy(f"http://127.0.0.1:{port}/v1") as proxy:
        with pytest.raises(openai.APIStatusError) as err:
            client(proxy, max_retries=0).chat.completions.create(model="m", messages=USER)
        assert err.value.status_code == 502
    end = next(e for e in proxy.records[0].events if isinstance(e, ModelEnd))
    assert end.attrs["status"] == 502 and "upstream" in (end.error or "")
