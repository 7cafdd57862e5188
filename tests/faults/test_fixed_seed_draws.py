"""A battery file's ``when.seed``: draws that differ between trials and repeat between runs.

A p = 0.5 fault on every agent's first tool call, over 20 trials of a plain agent: it fires on
some trials and not on others, and on the same trials in a second run with another run seed.
The expected trials are computed here from the documented rule: trial k's plan seed is
``int(sha256("<when.seed>:<k>")[:8], 16)``, and the call fails when
``int(sha256("<plan seed>:<plan id>:<target>:0")[:8], 16) / 0xFFFFFFFF < 0.5``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore
from hbeval_core.contract import Task
from hbeval_core.faults.userbattery import parse_battery
from hbeval_plain import ToolCallError, think, tool

TRIALS = 20
BATTERY = {
    "format": "hbeval-battery-file/1",
    "name": "flaky",
    "scenarios": [
        {
            "name": "coin",
            "mode": "error_5xx",
            "params": {"http_status": 503},
            "tools": ["lookup"],
            "when": {"attempts": [0], "probability": 0.5, "seed": 7},
        }
    ],
}
TASKS = [Task(id="t", question="Where is A1?", verify=lambda s, t: "A1" in str(s))]


@tool
def lookup(order_id: str) -> str:
    return f"{order_id}: shipped"


def agent(question: str) -> str:
    think("Looking the order up.", tool_calls=[("lookup", {"order_id": "A1"})])
    try:
        return lookup(order_id="A1")
    except ToolCallError:
        think("The lookup failed; trying once more.", tool_calls=[("lookup", {"order_id": "A1"})])
        return lookup(order_id="A1")


def _sha8(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def expected_fired() -> list[int]:
    plan_id = "hbeval-user-battery/1/flaky/s0/coin"
    return [
        k
        for k in range(TRIALS)
        if _sha8(f"{_sha8(f'7:{k}')}:{plan_id}:lookup:0") / 0xFFFFFFFF < 0.5
    ]


def fired(run_seed: int) -> list[int]:
    battery = parse_battery(BATTERY, seed=run_seed)
    report: Any = run_battery(
        None, agent, TASKS, battery, trials=TRIALS, seed=run_seed, store=InMemoryStore()
    )
    return sorted(
        t.trial_index for t in report.trials if any(f.delivered is True for f in t.faults)
    )


def test_a_fixed_seed_draws_per_trial_and_the_same_in_every_run() -> None:
    first, second = fired(1), fired(2024)
    assert 0 < len(first) < TRIALS, first  # fires on some trials, not on all
    assert first == second == expected_fired()
