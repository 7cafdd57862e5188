"""The monitor's fast step loop gives what a from-scratch computation gives, step by step.

``record_step`` queues steps when nothing can observe them and folds them on the next read;
breach intervals are kept lazily and closed when a metric recovers. Here every figure is
checked against an independent computation that recounts the whole history after every step
(the spec §2.1 rules spelled out plainly), and against the monitor's eager path (a monitor with
an ``on_breach`` callback folds each step at once and extends intervals step by step).
"""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

import hbeval_core
from hbeval_core import Monitor

Step = tuple[str, bool, bool, "bool | None", bool, bool, "bool | None"]
FLOORS = {"pei": 0.70, "frr": 0.65, "irs": 0.60, "ti": 3.00}


def random_steps(seed: int, n: int) -> list[Step]:
    """Runs of calm and faulted steps, with repeated and new actions, judged and unjudged."""
    rng = random.Random(seed)
    steps: list[Step] = []
    faulty = False
    for _ in range(n):
        if rng.random() < 0.15:
            faulty = not faulty
        had_fault = faulty and rng.random() < 0.8
        success = rng.random() < (0.4 if had_fault else 0.95)
        judged = had_fault and rng.random() < 0.5
        rec = (rng.random() < 0.5) if judged else None
        handled = (rng.random() < 0.3) if judged and rng.random() < 0.5 else None
        action = f"tool_{rng.randrange(12)}" if rng.random() < 0.9 else ""
        traceable = rng.random() < (0.5 if faulty else 0.97)
        replanned = rng.random() < 0.05
        steps.append((action, success, had_fault, rec, traceable, replanned, handled))
    return steps


def from_scratch(history: list[Step]) -> dict[str, float | None]:
    """PEI v2, FRR, IRS and TI of a whole history, recounted from nothing (spec §2.1)."""
    n = len(history)
    episodes = transitions = faulted = faulted_ok = judged = deliberate = traceable = 0
    seen: set[str] = set()
    for i, (action, success, had_fault, rec, trace, replanned, handled) in enumerate(history):
        opened_here = had_fault and (i == 0 or not history[i - 1][2])
        in_episode = had_fault
        episodes += opened_here
        new_action = bool(action) and action not in seen
        if action:
            seen.add(action)
        if replanned or (new_action and in_episode and success and not opened_here):
            transitions += 1
        if had_fault:
            faulted += 1
            faulted_ok += success
            if rec is not None or handled is not None:
                judged += 1
                deliberate += bool(rec or handled)
        traceable += trace
    return {
        "pei": max(0.0, 1.0 - abs(episodes - transitions) / n),
        "frr": faulted_ok / faulted if faulted else None,
        "irs": deliberate / judged if judged else None,
        "ti": round(5.0 * traceable / n, 2),
    }


def intervals(values: list[dict[str, float | None]]) -> list[dict[str, Any]]:
    """Maximal runs of steps below each floor, in the order they opened."""
    out: list[dict[str, Any]] = []
    open_: dict[str, dict[str, Any]] = {}
    for idx, row in enumerate(values):
        for metric in ("pei", "frr", "irs", "ti"):
            value = row[metric]
            if value is not None and value < FLOORS[metric]:
                b = open_.get(metric)
                if b is None:
                    b = {"metric": metric, "threshold": FLOORS[metric], "first_step": idx}
                    b["min_value"] = value
                    out.append(b)
                    open_[metric] = b
                b["last_step"] = idx
                b["steps"] = idx - b["first_step"] + 1
                b["min_value"] = min(b["min_value"], value)
                b["last_value"] = value
            else:
                open_.pop(metric, None)
    return out


def feed(m: Monitor, step: Step) -> None:
    action, success, had_fault, rec, traceable, replanned, handled = step
    m.record_step(
        action=action,
        success=success,
        had_fault=had_fault,
        recovered_intentionally=rec,
        traceable=traceable,
        replanned=replanned,
        handled_deliberately=handled,
    )


def rounded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: round(v, 12) if isinstance(v, float) else v for k, v in r.items()} for r in rows]


def as_dicts(m: Monitor) -> list[dict[str, Any]]:
    return rounded([b.as_dict() for b in m.breaches])


@pytest.mark.parametrize("seed", range(6))
def test_every_step_matches_a_from_scratch_count(seed: int) -> None:
    steps = random_steps(seed, 400)
    lazy = Monitor()
    eager = Monitor(on_breach=lambda *_: None)
    expected_rows: list[dict[str, float | None]] = []
    for i, step in enumerate(steps):
        feed(lazy, step)
        feed(eager, step)
        expected = from_scratch(steps[: i + 1])
        expected_rows.append(expected)
        for m in (lazy, eager):
            got = m.metrics
            for name in ("pei", "frr", "irs", "ti"):
                assert got[name] == pytest.approx(expected[name], abs=1e-12), (i, name)
        if i % 37 == 0:  # read the intervals mid-run too: an open one ends at this step
            assert as_dicts(lazy) == rounded(intervals(expected_rows))
            assert lazy.breach_count == sum(b["steps"] for b in intervals(expected_rows))
    want = intervals(expected_rows)
    assert want, "the random run breaches something"
    for m in (lazy, eager):
        assert as_dicts(m) == rounded(want)
        assert m.breach_count == sum(b["steps"] for b in want)
    assert [d.as_dict() | {"occurred_at": 0} for d in lazy.directives] == [
        d.as_dict() | {"occurred_at": 0} for d in eager.directives
    ]


@pytest.mark.parametrize("seed", range(4))
def test_reading_only_at_the_end_gives_the_same_monitor(seed: int) -> None:
    steps = random_steps(100 + seed, 3_000)  # several queue batches
    queued, eager = Monitor(), Monitor(on_breach=lambda *_: None)
    for step in steps:
        feed(queued, step)
        feed(eager, step)
    a, b = queued.summary(), eager.summary()
    for d in a["directives"] + b["directives"]:
        d["occurred_at"] = 0
    assert a == b
    assert a["metrics"] == pytest.approx({**from_scratch(steps), "csi": None})


def test_degraded_run_keeps_one_interval_per_metric() -> None:
    m = Monitor()
    for _ in range(5_000):
        m.record_step(action="lookup", success=False, had_fault=True, traceable=False)
    spans = {(b.metric, b.first_step, b.last_step, b.min_value) for b in m.breaches}
    # FRR is 0.0 from the first step; TI is 0.0 from the first; PEI = 1 - 1/n is 0.0 on
    # step 1 only, then 0.5, 0.67 (below 0.70) and 0.75 from step 4.
    assert spans == {("frr", 0, 4_999, 0.0), ("ti", 0, 4_999, 0.0), ("pei", 0, 2, 0.0)}
    assert m.breach_count == 5_000 + 5_000 + 3
    assert len(m._queue) < 512  # queued steps are bounded: memory stays flat


def test_ti_interval_reports_rounded_values() -> None:
    m = Monitor()
    # traceable 2 of 4 -> TI 2.5; then traceable steps lift it: 3 of 5 = 3.0 (not below 3.00)
    for trace in (True, False, True, False):
        m.record_step(action="a", traceable=trace)
    m.record_step(action="a", traceable=True)
    ti = [b for b in m.breaches if b.metric == "ti"]
    # step 2: 1 of 2 = 2.5, step 3: 2 of 3 = 3.333, step 4: 2.5 -> two intervals
    assert [(b.first_step, b.last_step, b.min_value, b.last_value) for b in ti] == [
        (1, 1, 2.5, 2.5),
        (3, 3, 2.5, 2.5),
    ]


def test_observe_and_record_step_keep_one_order() -> None:
    from hbeval_core.events import FaultInjected, ToolEnd, ToolError, ToolStart

    m, ref = Monitor(), Monitor(on_breach=lambda *_: None)
    for i in range(40):
        c = f"c{i}"
        events: list[Any] = [ToolStart(run_id="r", call_id=c, tool="t", args={"i": i % 3})]
        if i % 4 == 0:
            events.append(
                FaultInjected(run_id="r", call_id=c, tool="t", mode="error_5xx", effect="error")
            )
            events.append(ToolError(run_id="r", call_id=c, tool="t", error="503"))
        else:
            events.append(ToolEnd(run_id="r", call_id=c, tool="t", result="ok"))
        for ev in events:
            for mon in (m, ref):
                mon.observe(ev)
        for mon in (m, ref):
            mon.record_step(action=f"manual{i % 5}", success=i % 3 != 0, had_fault=i % 3 == 0)
    assert m.summary()["breaches"] == ref.summary()["breaches"]
    assert m.metrics == ref.metrics


def test_parallel_recorders_lose_no_step() -> None:
    m = Monitor()

    def worker() -> None:
        for i in range(5_000):
            m.record_step(action=f"a{i % 7}", success=False, had_fault=True)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.step_count == 20_000
    assert m.breach_count == sum(b.steps for b in m.breaches)


def test_old_import_paths_are_the_live_modules() -> None:
    import hbeval_core.live.derive as live_derive
    import hbeval_core.live.derive as old_derive
    import hbeval_core.live.monitor as live_monitor
    import hbeval_core.live.monitor as old_monitor

    assert old_monitor is live_monitor
    assert old_derive is live_derive
    assert hbeval_core.Monitor is live_monitor.Monitor
    assert hbeval_core.Deriver is live_derive.Deriver
