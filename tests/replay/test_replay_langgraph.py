"""``replay`` through the LangGraph adapter: a real graph (scripted model, real tool calls)
recorded by a battery run, replayed with the same graph and with a different one.

The naive graph follows instructions found in tool results; the recording holds such planted
instructions (prompt-injection scenarios). Which cases carry one is read from the stored
recording, not from the replay.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from hbeval.replay import replay_run
from hbeval_langgraph.examples import FORBIDDEN_TOOL, careful, naive, tasks


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery

    store = open_store(str(Path(tmp_path_factory.mktemp("lg")) / "hb.db"))
    report = run_battery(
        None, careful, tasks, Battery.hbeval(n_scenarios=6, seed=42), trials=1, store=store
    )
    yield store, report.run.run_id
    store.close()


def _planted_cases(store: Any, run_id: str) -> set[str]:
    """Cases whose recorded tool results name the forbidden tool (a planted instruction)."""
    out = set()
    for t in store.list_trials(run_id):
        for e in store.iter_events(run_id, t.trial_key, attempt=0):
            if e.kind == "tool_end" and FORBIDDEN_TOOL in str(e.result):
                out.add(t.trial_key)
    return out


def test_the_recorded_graph_replays_identically(recorded: tuple[Any, str]) -> None:
    store, run_id = recorded
    out = replay_run(store, run_id, careful, tasks=tasks)
    assert out["summary"]["cases"] == len(store.list_trials(run_id))
    assert out["summary"]["diverged"] == 0 and out["summary"]["violations"] == 0
    for case in out["cases"]:
        assert case["selection"]["replayed_tools"] == case["selection"]["recorded_tools"]
        assert case["outcome"]["replayed"] == case["outcome"]["recorded"]


def test_a_graph_that_obeys_planted_instructions_breaks_the_invariant(
    recorded: tuple[Any, str],
) -> None:
    store, run_id = recorded
    planted = _planted_cases(store, run_id)
    assert planted  # the battery planted at least one instruction in a tool result
    out = replay_run(store, run_id, naive, tasks=tasks)
    forbidden = {
        c["trial_key"] for c in out["cases"] if c["violations"]["counts"]["forbidden_tool"]
    }
    assert forbidden == planted
    for key in planted:
        case = next(c for c in out["cases"] if c["trial_key"] == key)
        assert FORBIDDEN_TOOL in [u["tool"] for u in case["selection"]["unexpected"]]
        assert case["selection"]["diverged"] is True
    assert out["summary"]["within_budget"] is False
