"""A planted 429 is a fault for the agent, never a pause of the run; the provider's own still is.

The real ``openai`` client and a LangGraph agent on the real ``ChatOpenAI`` meet a 429 that
``OpenAIProxy`` planted, and one that the upstream (``ScriptedOpenAIServer``) answered itself
and the proxy passed through. Only the second is a rate limit the run waits out.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openai")

import openai

from hbeval.proxy._openai import OpenAIProxy
from hbeval.proxy._spec import fault_set
from hbeval.runner import run_battery
from hbeval.store import InMemoryStore
from hbeval.testing import ErrorReply, ScriptedOpenAIServer
from hbeval_core.contract import Task
from hbeval_core.contract._ratelimit import PLANTED_FAULT_HEADER, rate_limit_delay
from hbeval_core.faults.userbattery import parse_battery

USER = [{"role": "user", "content": "hi"}]


def test_a_planted_429_names_no_pause_and_the_providers_own_does() -> None:
    with ScriptedOpenAIServer([ErrorReply(429, "slow down", retry_after_ms=40)]) as up:
        with OpenAIProxy(up.base_url, fault_set(["rate_limit@0"])) as proxy:
            client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
            with pytest.raises(openai.RateLimitError) as planted:
                client.chat.completions.create(model="m", messages=USER)
            # The next call is not planted: the upstream's own 429 comes through.
            with pytest.raises(openai.RateLimitError) as real:
                client.chat.completions.create(model="m", messages=USER)
    assert planted.value.response.headers[PLANTED_FAULT_HEADER] == "rate_limit"
    assert rate_limit_delay(planted.value) is None
    assert PLANTED_FAULT_HEADER not in real.value.response.headers
    assert rate_limit_delay(real.value) == pytest.approx(0.04)


def test_an_in_process_run_does_not_pause_on_a_planted_429() -> None:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_openai")
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from hbeval_langgraph import LangGraphAdapter

    battery = parse_battery(
        {
            "format": "hbeval-battery-file/1",
            "name": "n",
            "scenarios": [{"name": "base", "mode": "none"}],
        },
        seed=1,
    )
    task = Task(id="t", question="hi", required=("hello",))
    store = InMemoryStore()
    with ScriptedOpenAIServer(["hello"]) as up:
        with OpenAIProxy(up.base_url, fault_set(["rate_limit@0"])) as proxy:
            model = ChatOpenAI(model="m", base_url=proxy.base_url, api_key="k", max_retries=0)
            report = run_battery(
                LangGraphAdapter(), create_agent(model, []), [task], battery,
                trials=1, seed=1, store=store,
            )  # fmt: skip
    # The agent gave up on the planted 429: its trial failed. Had the run taken the 429 for
    # the provider's, the attempt would be an infra error and the run's limiter would count it.
    (run,) = store.list_runs()
    (trial,) = store.list_trials(run.run_id)
    assert trial.outcome == "fail"
    assert report.outcomes["infra_error"] == 0
    assert report.run.rate_limit is None
    assert up.requests == []
