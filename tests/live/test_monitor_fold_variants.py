"""The step loop under every PEI version, unusual floors and Adapt-Plan, against a recount.

``test_monitor_fast`` checks PEI v2 with the default floors; the loop also has paths that only
other configurations take: PEI v1 (re-plans only), 2.0+hb.1 (a one-step deliberate handling of
a fault adapts), a metric without a floor, floors above a metric's range (a breach on the very
first step), and Adapt-Plan's re-plan directives. Each is recounted here from the whole history
after every step (spec §2.1, §4.4, §8.2 spelled out plainly) and compared with a queued monitor
(read now and then) and an eager one (an ``on_breach`` callback folds each step at once).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from hbeval_core import Monitor

Step = tuple[str, bool, bool, "bool | None", bool, bool, "bool | None"]


def random_steps(seed: int, n: int) -> list[Step]:
    """Calm and faulted runs; new and repeated actions; judged steps; re-plans now and then."""
    rng = random.Random(seed)
    steps: list[Step] = []
    faulty = False
    for _ in range(n):
        if rng.random() < 0.2:
            faulty = not faulty
        had_fault = faulty and rng.random() < 0.85
        success = rng.random() < (0.5 if had_fault else 0.9)
        judged = had_fault and rng.random() < 0.6
        rec = (rng.random() < 0.5) if judged else None
        handled = (rng.random() < 0.5) if judged and rng.random() < 0.5 else None
        action = f"tool_{rng.randrange(30)}" if rng.random() < 0.9 else ""
        traceable = rng.random() < (0.4 if faulty else 0.95)
        replanned = rng.random() < 0.08
        steps.append((action, success, had_fault, rec, traceable, replanned, handled))
    return steps


def recount(history: list[Step], version: str) -> dict[str, float | None]:
    """PEI (of ``version``), FRR, IRS and TI of a whole history, counted from nothing."""
    n = len(history)
    episodes = transitions = replans = faulted = faulted_ok = judged = deliberate = 0
    traceable = 0
    seen: set[str] = set()
    for i, (action, success, had_fault, rec, trace, replanned, handled) in enumerate(history):
        opened_here = had_fault and (i == 0 or not history[i - 1][2])
        episodes += opened_here
        new_action = bool(action) and action not in seen
        if action:
            seen.add(action)
        if replanned:
            replans += 1
            transitions += 1
        elif new_action and had_fault and success and not opened_here:
            transitions += 1
        elif version == "2.0+hb.1" and opened_here and success and (rec or handled):
            transitions += 1  # a one-step deliberate handling of a fault adapted (§8.2)
        if had_fault:
            faulted += 1
            faulted_ok += success
            if rec is not None or handled is not None:
                judged += 1
                deliberate += bool(rec or handled)
        traceable += trace
    lost = replans if version == "1.0" else abs(episodes - transitions)
    return {
        "pei": max(0.0, 1.0 - lost / n),
        "frr": faulted_ok / faulted if faulted else None,
        "irs": deliberate / judged if judged else None,
        "ti": round(5.0 * traceable / n, 2),
    }


def intervals(rows: list[dict[str, float | None]], floors: dict[str, float]) -> list[Any]:
    """Maximal runs of steps below each floor, in the order they opened (PEI, FRR, IRS, TI
    within one step)."""
    out: list[dict[str, Any]] = []
    open_: dict[str, dict[str, Any]] = {}
    for idx, row in enumerate(rows):
        for metric in ("pei", "frr", "irs", "ti"):
            value = row[metric]
            if metric in floors and value is not None and value < floors[metric]:
                b = open_.get(metric)
                if b is None:
                    b = {"metric": metric, "threshold": floors[metric], "first_step": idx}
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


def replan_steps(rows: list[dict[str, float | None]]) -> list[int]:
    """Adapt-Plan (§4.4): PEI falls from at least 0.70 to below it, from the third step on,
    at least three steps after the last re-plan."""
    out: list[int] = []
    for idx in range(1, len(rows)):
        before, now = rows[idx - 1]["pei"], rows[idx]["pei"]
        assert before is not None and now is not None
        if before >= 0.70 > now and idx + 1 >= 3 and (not out or idx - out[-1] >= 3):
            out.append(idx)
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


FLOOR_SETS = {
    "default": {"pei": 0.70, "frr": 0.65, "irs": 0.60, "ti": 3.00},
    # No PEI or IRS floor; floors a metric can't reach: FRR and TI breach from their first value.
    "partial-and-high": {"frr": 1.5, "ti": 5.5},
    # A PEI floor above 1.0 breaches on the first step, before anything has moved.
    "pei-above-range": {"pei": 1.01, "irs": 0.9, "ti": 0.5},
}


@pytest.mark.parametrize("version", ["2.0", "1.0", "2.0+hb.1"])
@pytest.mark.parametrize("floors", list(FLOOR_SETS))
@pytest.mark.parametrize("seed", range(3))
def test_the_loop_matches_a_recount(version: str, floors: str, seed: int) -> None:
    thresholds = FLOOR_SETS[floors]
    steps = random_steps(seed * 31 + len(floors), 700)  # more than one queue batch
    queued = Monitor(pei_version=version, thresholds=thresholds)
    eager = Monitor(pei_version=version, thresholds=thresholds, on_breach=lambda *_: None)
    rows: list[dict[str, float | None]] = []
    for i, step in enumerate(steps):
        feed(queued, step)
        feed(eager, step)
        rows.append(recount(steps[: i + 1], version))
        if i % 53 == 0 or i == len(steps) - 1:  # reading folds the queue mid-run
            want = intervals(rows, thresholds)
            for m in (queued, eager):
                got = m.metrics
                for name in ("pei", "frr", "irs", "ti"):
                    assert got[name] == rows[-1][name], (i, name, m is eager)
                assert [b.as_dict() for b in m.breaches] == want, (i, m is eager)
                assert m.breach_count == sum(b["steps"] for b in want)
    for m in (queued, eager):
        replans = [d.step_index for d in m.directives if d.action == "replan"]
        assert replans == replan_steps(rows)
    assert any(b["steps"] > 1 for b in intervals(rows, thresholds)), "something breaches"


def test_a_first_step_breaches_with_floors_above_range() -> None:
    # Nothing has moved before the first step, so it is looked at whatever it holds.
    m = Monitor(thresholds={"pei": 1.01, "ti": 5.5})
    m.record_step(action="a")
    assert [(b.metric, b.first_step, b.last_step, b.min_value) for b in m.breaches] == [
        ("pei", 0, 0, 1.0),
        ("ti", 0, 0, 5.0),
    ]
