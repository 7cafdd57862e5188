"""Live metrics for Prometheus: ``/metrics`` scraped over HTTP on 127.0.0.1 while an agent runs.

A real LangGraph agent (scripted model, real tools) runs in its own thread under
``hbeval_langgraph.instrument()``; the test scrapes between its two conversations. Expected
values are worked out by hand below from the spec's rules (spec §2.1), not read from the code.
"""

from __future__ import annotations

import contextvars
import logging
import re
import subprocess
import sys
import threading
import urllib.request

import pytest

pytest.importorskip("prometheus_client")

from hbeval.export import LiveMetrics, serve_metrics
from hbeval_core import Monitor

SECRET = "4111-1111-SECRET"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """``/metrics`` over HTTP, parsed into {(name, labels): value}; the raw text is checked too."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode("utf-8")
    assert SECRET not in text  # tool arguments never become labels
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m is not None, line
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def undefined_reasons(samples: dict, agent: str) -> dict[str, str]:
    out = {}
    for (name, labels), v in samples.items():
        got = dict(labels)
        if name == "hbeval_metric_undefined" and got["agent"] == agent:
            assert v == 1.0
            out[got["metric"]] = got["reason"]
    return out


def test_scrapes_follow_a_langgraph_agent_under_instrument() -> None:
    pytest.importorskip("langgraph")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool, ToolException

    from hbeval_langgraph import instrument, uninstrument
    from tests.adapters.langgraph.test_langgraph_fixtures import ScriptedChatModel, call, inputs

    def lookup(query: str) -> str:
        """Look an order up."""
        return f"found: {query} is shipped"

    def charge(card: str, amount: float) -> str:
        """Charge a card; the payment backend is down."""
        raise ToolException("payment backend returned 503")

    tools = [
        StructuredTool.from_function(lookup),
        StructuredTool.from_function(charge, handle_tool_error=True),
    ]
    first = create_agent(
        ScriptedChatModel(
            responses=[
                AIMessage(
                    "I'll look the order up.", tool_calls=[call("lookup", {"query": "A1"}, "c1")]
                ),
                AIMessage("It has shipped."),
            ]
        ),
        tools,
    )
    second = create_agent(
        ScriptedChatModel(
            responses=[
                AIMessage(
                    "I'll charge the card.",
                    tool_calls=[call("charge", {"card": SECRET, "amount": 5.0}, "c2")],
                ),
                AIMessage("The charge failed; I'll give up on it and tell the customer."),
            ]
        ),
        tools,
    )

    between, go_on, done = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def agent() -> None:  # a long-running agent: two conversations, paused between them
        try:
            first.invoke(inputs("Where is order A1?"))
            between.set()
            assert go_on.wait(30)
            second.invoke(inputs("Charge my card 5.00."))
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
            between.set()
        finally:
            done.set()

    handler = instrument()
    live = serve_metrics(0, handler, agent_id="support")
    try:
        assert live.server.server_address[0] == "127.0.0.1"
        # A thread started by hand does not inherit context variables: it runs in a copy of
        # this context, where instrument() took effect (hbeval_langgraph's documented way).
        runner = threading.Thread(target=contextvars.copy_context().run, args=(agent,))
        runner.start()
        assert between.wait(30) and not errors, errors
        a = scrape(live.port)
        go_on.set()
        assert done.wait(30)
        runner.join(10)
        assert not errors, errors
        b = scrape(live.port)
    finally:
        live.close()
        uninstrument()

    # After the first conversation: one step, a successful call linked to the model reply that
    # issued it. PEI = 1 - |episodes - transitions| / steps = 1 - 0/1; TI = 5 x 1/1. No fault
    # yet: FRR and IRS are undefined (no_fault_observed), exported as such and never as 0.
    assert value(a, "hbeval_live_metric", agent="support", metric="pei") == 1.0
    assert value(a, "hbeval_live_metric", agent="support", metric="ti") == 5.0
    assert value(a, "hbeval_live_metric", agent="support", metric="frr") is None
    assert value(a, "hbeval_live_metric", agent="support", metric="irs") is None
    assert undefined_reasons(a, "support") == {
        "frr": "no_fault_observed",
        "irs": "no_fault_observed",
    }
    assert value(a, "hbeval_steps_total", agent="support") == 1.0
    assert value(a, "hbeval_faults_total", agent="support") == 0.0
    assert value(a, "hbeval_tool_latency_seconds_count", agent="support") == 1.0

    # After the second: step 2 is the failed charge (a fault, not a success), which opens one
    # fault episode with no transition: PEI = 1 - 1/2 = 0.5 (below 0.70: one breach), and
    # FRR = 0 successful / 1 faulted = 0.0 (below 0.65: one breach). FRR is now defined: a real
    # zero, with a sample. Nothing judged the faulted step deliberate or not: IRS undefined.
    assert value(b, "hbeval_live_metric", agent="support", metric="pei") == 0.5
    assert value(b, "hbeval_live_metric", agent="support", metric="frr") == 0.0
    assert value(b, "hbeval_live_metric", agent="support", metric="ti") == 5.0
    assert undefined_reasons(b, "support") == {"irs": "no_judged_step"}
    assert value(b, "hbeval_steps_total", agent="support") == 2.0
    assert value(b, "hbeval_faults_total", agent="support") == 1.0
    assert value(b, "hbeval_breaches_total", agent="support") == 2.0
    assert value(b, "hbeval_halts_total", agent="support") == 0.0
    assert value(b, "hbeval_tool_latency_seconds_count", agent="support") == 2.0
    inf = value(b, "hbeval_tool_latency_seconds_bucket", agent="support", le="+Inf")
    assert inf == 2.0
    # Only bounded labels: agent, metric, reason, and the histogram's le.
    keys = {k for _, labels in b for k, _ in labels}
    assert keys <= {"agent", "metric", "reason", "le"}


def test_a_halt_a_retired_run_and_counters_that_keep_their_totals() -> None:
    live = LiveMetrics()
    first = Monitor(halt_policy={"metric": "frr", "below": 0.5, "for_steps": 2})
    for _ in range(2):
        first.record_step(action="pay", success=False, had_fault=True)
    assert live.track(first, "billing")
    second = Monitor()
    second.record_step(action="lookup")
    assert live.track(second, "billing")  # a new conversation of the same agent
    with serve_metrics(0) as served:
        served.track(second, "billing")
        assert (
            scrape(int(served.port))[("hbeval_steps_total", frozenset({("agent", "billing")}))]
            == 1.0
        )

    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    registry.register(live)
    text = generate_latest(registry).decode()
    # Counters add the retired run's totals (2 faulted steps, 4 breaches: FRR 0 < 0.65 and
    # PEI 0.0 then 0.5 < 0.70 on both steps, one halt) to the current run's (1 clean step).
    assert 'hbeval_steps_total{agent="billing"} 3.0' in text
    assert 'hbeval_faults_total{agent="billing"} 2.0' in text
    assert 'hbeval_breaches_total{agent="billing"} 4.0' in text
    assert 'hbeval_halts_total{agent="billing"} 1.0' in text
    # Gauges follow the current run only: one clean step, no fault.
    assert 'hbeval_live_metric{agent="billing",metric="pei"} 1.0' in text
    assert 'metric="frr",reason="no_fault_observed"} 1.0' in text


def test_agent_ids_are_capped_and_the_overflow_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    live = LiveMetrics(max_agents=2)
    monitors = [Monitor() for _ in range(4)]
    with caplog.at_level(logging.WARNING, logger="hbeval.live"):
        tracked = [live.track(m, f"agent-{i}") for i, m in enumerate(monitors)]
    assert tracked == [True, True, False, False]
    assert live.track(monitors[3], "agent-0")  # an id already exported is always accepted
    assert live.agent_ids == ["agent-0", "agent-1"]
    assert sum("max_agents" in r.message for r in caplog.records) == 1
    families = {f.name: f for f in live.collect()}
    assert families["hbeval_live_agents_dropped"].samples[0].value == 2.0
    agents = {s.labels["agent"] for s in families["hbeval_steps"].samples}
    assert agents == {"agent-0", "agent-1"}
    # With no step at all every metric is undefined, each with its reason.
    undefined = {
        (s.labels["metric"], s.labels["reason"])
        for s in families["hbeval_metric_undefined"].samples
        if s.labels["agent"] == "agent-1"
    }
    assert undefined == {
        ("pei", "no_steps"),
        ("ti", "no_steps"),
        ("frr", "no_fault_observed"),
        ("irs", "no_fault_observed"),
    }
    assert not [s for s in families["hbeval_live_metric"].samples if s.labels["agent"] == "agent-1"]


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(ValueError, match="max_agents"):
        LiveMetrics(max_agents=0)
    with pytest.raises(ValueError, match="latency_buckets"):
        LiveMetrics(latency_buckets=(1.0, 0.5))
    with pytest.raises(ValueError, match="agent_id"):
        LiveMetrics().track(Monitor(), "")
    with pytest.raises(TypeError, match="Monitor"):
        LiveMetrics().track(object(), "a")
    with pytest.raises(ValueError, match="port"):
        serve_metrics(70000)


def test_importing_live_does_not_import_prometheus_client() -> None:
    code = "import sys, hbeval_core.live; print('prometheus_client' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
