"""Finding 10: memory does not grow without bound.

On main a long-lived ``instrument()`` handler kept every event even with an ``on_event`` sink
(107 -> 197 MB from 500 to 2,000 runs), ``Monitor._seen`` kept every distinct action as a
string (1M actions -> 200 MB), and a battery held every finished trial in memory. These tests
check the bounded structures themselves; ``benchmarks/bench_memory.py`` prints the RSS.
"""

from __future__ import annotations

import hashlib
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore, open_store
from hbeval_core.faults import Battery
from hbeval_core.live.monitor import Monitor, action_fingerprint
from hbeval_plain.examples import careful, tasks


def test_action_fingerprint_is_blake2b_64_little_endian() -> None:
    expected = int.from_bytes(hashlib.blake2b(b"lookup(A1)", digest_size=8).digest(), "little")
    assert action_fingerprint("lookup(A1)") == expected
    assert 0 <= action_fingerprint("x" * 100_000) < 2**64
    assert action_fingerprint("a\ud800") != action_fingerprint("a")  # never raises


def test_monitor_keeps_distinct_actions_as_ints_and_pei_stays_exact() -> None:
    m = Monitor()
    long_actions = [f"search({'q' * 500}{i})" for i in range(2_000)]
    for i, action in enumerate(long_actions):
        m.record_step(action=action, success=True, had_fault=(i % 4 == 0))
    assert m.step_count == 2_000  # a read folds the steps record_step queued
    seen = m._seen
    assert len(seen) == 2_000 and all(type(k) is int for k in seen)
    per_action = (sys.getsizeof(seen) + sum(sys.getsizeof(k) for k in seen)) / len(seen)
    assert per_action < 128  # the 500-character strings themselves would be > 540 bytes each
    # PEI by hand (reference v2): every 4th step opens a fault episode (4 steps apart, so each
    # episode is one step long) and no step inside an open episode is a new successful action
    # taken by a later step, so transitions = 0 and PEI = 1 - |500 - 0| / 2000 = 0.75.
    assert m.metrics["pei"] == pytest.approx(0.75)


def test_monitor_counts_a_repeated_action_once() -> None:
    m = Monitor()
    # A fault on step 1 opens an episode; steps 2 and 3 are inside it, succeed and were taken by
    # a later step: a new action (step 2) is a transition, a repeated one (step 3) is not.
    m.record_step(action="a", success=False, had_fault=True)
    m.record_step(action="b", success=True, had_fault=True)
    m.record_step(action="b", success=True, had_fault=True)
    # episodes 1, transitions 1: PEI = 1 - |1 - 1| / 3 = 1.0
    assert m.metrics["pei"] == pytest.approx(1.0)
    assert len(m._seen) == 2


langgraph = pytest.importorskip("langgraph")


def _runs(n: int) -> None:
    from tests.adapters.langgraph.test_langgraph_fixtures import inputs, scripted_agent

    graph = scripted_agent()
    for _ in range(n):
        graph.invoke(inputs())


def test_instrument_with_a_sink_keeps_no_events_and_no_run_state() -> None:
    from hbeval_langgraph import instrument, uninstrument

    received: list[Any] = []
    handler = instrument(on_event=received.append)
    try:
        _runs(20)
    finally:
        uninstrument()
    assert len([e for e in received if e.kind == "run_end"]) == 20  # the sink got everything
    assert handler.events == []
    assert not handler._runs and not handler._messages and not handler._root_ids
    assert handler.max_events == 0


def test_instrument_keeps_a_bounded_window_of_the_newest_events() -> None:
    from hbeval_langgraph import instrument, uninstrument
    from hbeval_langgraph._hook import DEFAULT_EVENT_WINDOW

    handler = instrument(max_events=40)
    try:
        _runs(12)
        events = handler.events
        assert 0 < len(events) <= 40
        assert events[-1].kind == "run_end"  # the newest are the ones kept
        assert not handler._runs and not handler._messages and not handler._root_ids
    finally:
        uninstrument()
    default = instrument()
    try:
        assert default.max_events == DEFAULT_EVENT_WINDOW
    finally:
        uninstrument()


def test_an_explicit_handler_still_keeps_everything() -> None:
    from hbeval_langgraph import HBEvalCallbackHandler
    from tests.adapters.langgraph.test_langgraph_fixtures import inputs, scripted_agent

    handler = HBEvalCallbackHandler()
    graph = scripted_agent()
    for _ in range(5):
        graph.invoke(inputs(), config={"callbacks": [handler]})
    assert len([e for e in handler.events if e.kind == "run_end"]) == 5


def test_a_battery_does_not_hold_finished_trials(tmp_path: Path) -> None:
    """Memory allocated between trial 30 and trial 240 stays small: trials live in the store."""
    sizes: dict[int, int] = {}

    def progress(update: Any) -> None:
        if update.done in (30, 240):
            sizes[update.done] = tracemalloc.get_traced_memory()[0]

    battery = Battery.hbeval(n_scenarios=60, seed=42)
    with open_store(str(tmp_path / "hb.db")) as store:
        tracemalloc.start()
        try:
            report = run_battery(
                None, careful, tasks, battery, trials=4, store=store, progress=progress, timeout=0
            )
        finally:
            tracemalloc.stop()
    growth_per_trial = (sizes[240] - sizes[30]) / 210
    assert growth_per_trial < 1_000, growth_per_trial  # a held trial dict is ~6 KB
    assert report.run.trial_count == 240
    # The report read back from the store equals the one built from trials held in memory.
    held = run_battery(None, careful, tasks, battery, trials=4, store=InMemoryStore(), timeout=0)
    strip = ("latency_ms",)

    def plain(trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in t.items() if k not in strip} for t in trials]

    assert plain(report.to_dict()["trials"]) == plain(held.to_dict()["trials"])
