"""Finding 11 of the second adversarial pass: one bad agent id took Prometheus down.

An agent id with a lone surrogate, or a tracked source whose snapshot raised, turned every
scrape into HTTP 500 for all agents (and printed a traceback in the server's thread). Label
values are now made safe for the text format, and a failing source is isolated: its samples
are left out, a failure counter names it, and every other agent is still served with HTTP 200.
"""

from __future__ import annotations

import logging
import urllib.request
from typing import Any

import pytest

pytest.importorskip("prometheus_client")

from hbeval.export import serve_metrics
from hbeval_core import Monitor


class _Broken:
    """A source whose snapshot raises (a recorder whose monitor is gone, say)."""

    def __init__(self) -> None:
        self.fail = True
        self.inner = Monitor()

    def snapshot(self) -> Any:
        if self.fail:
            raise RuntimeError("monitor state is gone")
        return self.inner.snapshot()


def _scrape(port: int) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.status, response.read().decode("utf-8")


def test_a_lone_surrogate_in_an_agent_id_is_served_replaced() -> None:
    good, odd = Monitor(), Monitor()
    good.record_step(action="lookup")
    odd.record_step(action="pay", success=False, had_fault=True)
    with serve_metrics(0, good, agent_id="billing") as live:
        assert live.track(odd, "agent-\ud800-x")
        status, text = _scrape(int(live.port))
    assert status == 200
    assert 'hbeval_steps_total{agent="billing"} 1.0' in text
    assert 'hbeval_steps_total{agent="agent-\ufffd-x"} 1.0' in text


def test_a_source_that_raises_is_left_out_and_counted_the_rest_still_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good, broken = Monitor(), _Broken()
    good.record_step(action="lookup")
    with caplog.at_level(logging.WARNING, logger="hbeval.live"):
        with serve_metrics(0, good, agent_id="billing") as live:
            assert live.track(broken, "flaky")
            first = _scrape(int(live.port))
            second = _scrape(int(live.port))
            broken.fail = False  # it recovers: served again, the failures stay counted
            third = _scrape(int(live.port))
    for status, text in (first, second):
        assert status == 200
        assert 'hbeval_steps_total{agent="billing"} 1.0' in text
        assert (
            'agent="flaky",metric=' not in text and 'hbeval_steps_total{agent="flaky"}' not in text
        )
    assert 'hbeval_live_source_failures_total{agent="flaky"} 1.0' in first[1]
    assert 'hbeval_live_source_failures_total{agent="flaky"} 2.0' in second[1]
    assert 'hbeval_steps_total{agent="flaky"} 0.0' in third[1]
    assert 'hbeval_live_source_failures_total{agent="flaky"} 2.0' in third[1]
    assert "billing" not in " ".join(r.getMessage() for r in caplog.records)
    assert sum("flaky" in r.getMessage() for r in caplog.records) == 1  # warned once
