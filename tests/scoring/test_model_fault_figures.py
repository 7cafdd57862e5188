"""Model faults in the figures: FRR, IRS, the per-mode rows, the terminal, the HTML, the gate.

LangGraph on the real ``ChatOpenAI`` and AutoGen on the real ``OpenAIChatCompletionClient``
are pointed at ``OpenAIProxy`` in front of ``ScriptedOpenAIServer`` (the standard script).
The proxy plants a 429 with ``Retry-After`` on the first model call. An agent whose SDK
retries (``max_retries=2``) waits and answers; one with retries disabled (``max_retries=0``)
gives up. Each trial is scored from what the proxy recorded, and the run's report is built
from those trials. Expected figures are worked out by hand in each test.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openai")

from rich.console import Console

from hbeval.proxy._openai import OpenAIProxy
from hbeval.proxy._spec import FaultSet
from hbeval.report.gate import run_gate
from hbeval.report.html import render_html
from hbeval.report.terminal import print_summary
from hbeval.scoring import build_report, score_trial
from hbeval.scoring._model_faults import RETRY_BOUND, trial_handlings
from hbeval.testing import ScriptedOpenAIServer
from hbeval_core.contract import Task, TrialResult
from hbeval_core.events import FaultInjected
from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec
from tests.conformance.providers import AUTOGEN_MODEL_INFO, MODEL, StandardResponder, no_tiktoken

__all__ = ["no_tiktoken"]

WAIT_MS = 120
TASK = Task(id="two_tools", question="Look up order A1, then add 2 and 3.", required=("done",))


class Scn:
    """The two scenarios of the run: nominal, and a 429 on the first model call."""

    def __init__(self, index: int, fault_type: str) -> None:
        self.index = index
        self.fault_type = fault_type
        self.is_nominal = fault_type == "none"
        self.domain = "retail"


def langgraph_agent(base_url: str, retries: int) -> tuple[Any, Any]:
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_openai")
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from hbeval_langgraph import LangGraphAdapter
    from tests.adapters.langgraph.test_langgraph_fixtures import make_tools

    model = ChatOpenAI(model=MODEL, base_url=base_url, api_key="sk-trial", max_retries=retries)
    return LangGraphAdapter(), create_agent(model, make_tools([]))


def autogen_agent(base_url: str, retries: int) -> tuple[Any, Any]:
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
        max_retries=retries,
    )
    agent = AssistantAgent(
        "agent",
        model_client=client,
        tools=two_tools([]),  # type: ignore[arg-type]
        max_tool_iterations=5,
    )
    return AutoGenAdapter(cancel_grace=2.0), agent


FRAMEWORKS = {"langgraph": langgraph_agent, "autogen": autogen_agent}


def trial(framework: str, retries: int, scn: Scn) -> dict[str, Any]:
    """One trial through the proxy, scored from the proxy's record, as the runner stores it."""
    specs = ()
    if not scn.is_nominal:
        specs = (ModelFaultSpec("f0", "rate_limit", "*", (0,), 1.0, {"retry_after_ms": WAIT_MS}),)
    faults = FaultSet(model=ModelFaultPlan("test/model", 0, specs), source=[scn.fault_type])
    with ScriptedOpenAIServer(StandardResponder()) as server:
        with OpenAIProxy(server.base_url, faults) as proxy:
            adapter, agent = FRAMEWORKS[framework](proxy.base_url, retries)
            result = adapter.run_trial(agent, TASK, None, None)
    (record,) = proxy.records
    seen = TrialResult(
        final_state=result.final_state,
        events=list(record.events),
        status=result.status,
        error=result.error,
        response_text=result.response_text,
    )
    verdict = score_trial(TASK, scn, seen).as_dict()
    return {
        "trial_key": f"s{scn.index:03d}-t0",
        "task_id": TASK.id,
        "category": None,
        "scenario_index": scn.index,
        "trial_index": 0,
        "domain": scn.domain,
        "fault_type": scn.fault_type,
        "is_nominal": scn.is_nominal,
        "outcome": "pass" if verdict["passed"] else "fail",
        "attempts": 1,
        "verdict": verdict,
        "isolated": True,
    }


def run_report(framework: str, retries: int) -> Any:
    trials = [
        trial(framework, retries, Scn(0, "none")),
        trial(framework, retries, Scn(1, "rate_limit")),
    ]
    run = {"run_id": f"{framework}-{retries}", "agent_id": "a", "battery": "model", "seed": 1}
    return build_report(run=run, trials=trials, history=[])


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_an_sdk_that_retries_after_retry_after_is_deliberate(framework: str) -> None:
    report = run_report(framework, retries=2)
    # By hand: the nominal trial passes unfaulted; the 429 trial is the one faulted trial. The
    # SDK waited WAIT_MS and asked again (a retry honouring Retry-After), then the standard
    # script answered "done": a recovery (FRR 1/1) with deliberate handling (IRS 1.0 / 1).
    faulted = report.trials[1]
    (fault,) = faulted.faults
    assert fault.mode == "rate_limit" and fault.delivered is True
    assert fault.handling == "deliberate"
    assert faulted.outcome == "pass"
    assert report.metrics.frr == 1.0 and report.defined_counts["frr"] == 1
    assert report.metrics.irs == 1.0 and report.defined_counts["irs"] == 1
    block = report.model_faults
    assert block is not None and list(block.by_mode) == ["rate_limit"]
    row = block.by_mode["rate_limit"]
    assert (row.faults, row.trials, row.recovered, row.frr) == (1, 1, 1, 1.0)
    assert (row.judged, row.deliberate, row.irs) == (1, 1, 1.0)
    assert row.handling["deliberate"] == 1 and sum(row.handling.values()) == 1
    console = Console(record=True, width=200)
    print_summary(report, console)
    text = console.export_text()
    assert "model faults" in text
    assert "rate_limit: 1 trials, FRR 1.000 (1/1), IRS 1.000 (1/1 deliberate); deliberate 1" in text
    html = render_html({"run": report})
    assert "Model faults" in html and "<td>rate_limit</td>" in html


@pytest.mark.parametrize("framework", ["langgraph"])
def test_the_evidence_section_says_the_trace_was_seen_only_through_the_proxy(
    framework: str,
) -> None:
    report = run_report(framework, retries=2)
    # Both trials were scored from the proxy's record alone.
    for t in report.trials:
        assert t.verdict is not None and t.verdict.evidence.seen_through is not None
        assert "tool execution and its latency" in t.verdict.evidence.seen_through.cannot_support
    block = report.evidence.proxy_only
    assert block is not None
    assert (block.level, block.trials, block.scored_trials) == ("proxy-only", 2, 2)
    assert block.proxies == ["the trace was seen only through hbeval proxy openai"]
    assert block.seen == ["model_calls", "tool_calls_issued", "tool_results_sent_back"]
    assert {"frr", "irs", "duplicate_side_effects", "tool latency"} <= set(block.figures)
    console = Console(record=True, width=200)
    print_summary(report, console)
    text = console.export_text()
    assert (
        "evidence: proxy-only, the trace was seen only through hbeval proxy openai (2 of 2 "
        "scored trials)" in text
    )
    assert "it cannot support: tool execution and its latency" in text
    assert "; proxy-only 2/2 trials" in text
    html = render_html({"run": report})
    assert "<h3>Evidence: proxy-only</h3>" in html
    assert "<td>duplicate_side_effects</td>" in html


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_an_sdk_with_retries_disabled_gives_up_and_is_not_deliberate(framework: str) -> None:
    report = run_report(framework, retries=0)
    # By hand: the 429 reaches the agent as RateLimitError, nothing asks again (gave_up), the
    # run errors and the verifier fails: FRR 0/1; the handling is not deliberate: IRS 0.0 / 1.
    faulted = report.trials[1]
    (fault,) = faulted.faults
    assert fault.handling == "gave_up"
    assert faulted.outcome == "fail"
    assert report.metrics.frr == 0.0 and report.defined_counts["frr"] == 1
    assert report.metrics.irs == 0.0 and report.defined_counts["irs"] == 1
    assert report.model_faults is not None
    row = report.model_faults.by_mode["rate_limit"]
    assert (row.trials, row.recovered, row.frr, row.judged, row.deliberate, row.irs) == (
        1,
        0,
        0.0,
        1,
        0,
        0.0,
    )
    assert row.handling["gave_up"] == 1
    # The gate sees them: FRR and IRS below their floors fail it.
    result = run_gate(report, require_security=False)
    assert result.verdict == "fail"
    failed = {c.metric for c in result.checks if c.passed is False}
    assert {"frr", "irs"} <= failed, result.as_dict()


def receipt(n: int, followed: dict[str, Any]) -> FaultInjected:
    return FaultInjected(
        run_id="r",
        call_id=f"model#{n}",
        mode="model_error",
        effect="error",
        attrs={"received": True, "followed_by": followed},
    )  # type: ignore[arg-type]


def test_a_chain_of_retries_longer_than_the_bound_is_unbounded() -> None:
    retry = {"action": "retry", "after_ms": 50.0}
    # RETRY_BOUND retries of one request, each met by another fault, then an answer: bounded.
    bounded = [receipt(i, retry) for i in range(RETRY_BOUND)]
    assert trial_handlings(bounded) == ["deliberate"] * RETRY_BOUND
    # One more retry in the same chain: every retry of it hammers.
    hammer = [receipt(i, retry) for i in range(RETRY_BOUND + 1)]
    assert trial_handlings(hammer) == ["retry_unbounded"] * (RETRY_BOUND + 1)
    # Two chains of three (call 3 answered, faults resume at call 5): each bounded.
    split = [receipt(i, retry) for i in (0, 1, 2, 5, 6, 7)]
    assert trial_handlings(split) == ["deliberate"] * 6
    # A chain that ends in giving up keeps its retries bounded and the last fault gave up.
    ended = [receipt(0, retry), receipt(1, {"action": "gave_up"})]
    assert trial_handlings(ended) == ["deliberate", "gave_up"]


def spoiled_call_trace(answer: str) -> list[Any]:
    """A proxy's trace: the first reply's tool call arrived spoiled, the agent went on."""
    from hbeval_core.events import ModelEnd, ModelStart, RunEnd, RunStart, ToolEnd, ToolStart
    from hbeval_core.events import ToolCall as Call

    followed = {"action": "continued", "after_ms": 4.0}
    return [
        RunStart(run_id="r", seq=0, framework="openai-proxy"),
        ModelStart(
            run_id="r", seq=1, call_id="model#0", messages=[{"role": "user", "content": "q"}]
        ),
        FaultInjected(
            run_id="r",
            seq=2,
            call_id="model#0",
            mode="malformed_tool_call",
            effect="result_altered",
            attrs={"received": True, "followed_by": followed},
        ),
        ModelEnd(run_id="r", seq=3, call_id="model#0", tool_calls=[Call(id="c1", name="lookup")]),
        ToolStart(run_id="r", seq=4, call_id="c1", tool="lookup"),
        ToolEnd(run_id="r", seq=5, call_id="c1", tool="lookup", result=answer),
        ModelStart(
            run_id="r",
            seq=6,
            call_id="model#1",
            messages=[
                {"role": "user", "content": "q"},
                {"role": "tool", "content": answer, "tool_call_id": "c1"},
            ],
        ),
        ModelEnd(run_id="r", seq=7, call_id="model#1", text="done"),
        RunEnd(run_id="r", seq=8, status="ok"),
    ]


@pytest.mark.parametrize(
    ("answer", "irs"),
    [
        # The agent told the model its call was spoiled: a workaround it noticed.
        ("Error: the arguments of lookup are not valid JSON", 1.0),
        # The agent ran the spoiled call as if nothing were wrong: it passed, unnoticed.
        ("order A1: shipped", 0.0),
    ],
)
def test_a_changed_conversation_is_deliberate_only_when_the_fault_was_noticed(
    answer: str, irs: float
) -> None:
    task = Task(id="t", question="q", required=("done",))
    result = TrialResult(
        final_state="done", events=spoiled_call_trace(answer), response_text="done"
    )
    verdict = score_trial(task, Scn(1, "malformed_tool_call"), result).as_dict()
    # By hand: the verifier passed (FRR's recovery either way); IRS follows the noticing.
    assert verdict["passed"] is True and verdict["faulted"] is True
    assert verdict["faults"][0]["handling"] == "continued"
    assert verdict["irs_score"] == irs
