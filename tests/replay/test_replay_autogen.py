"""``replay`` through the AutoGen adapter: examples/autogen_assistant.py (scripted model client,
real AutoGen tool calls) recorded by a battery run, replayed with the same agent and with the
naive one, which obeys instructions planted in tool results. Which cases carry a planted
instruction is read from the stored recording."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from hbeval.replay import replay_run
from tests.adapters.autogen.test_autogen_fixtures import hang_guard

__all__ = ["hang_guard"]
pytestmark = pytest.mark.usefixtures("hang_guard")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "autogen_assistant.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("autogen_assistant_replay", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = _example()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery

    store = open_store(str(Path(tmp_path_factory.mktemp("ag")) / "hb.db"))
    report = run_battery(
        None, ex.careful, ex.tasks, Battery.hbeval(n_scenarios=6, seed=42), trials=1, store=store
    )
    yield store, report.run.run_id
    store.close()


def test_autogen_replays_identically_then_finds_the_obeyed_injection(
    recorded: tuple[Any, str],
) -> None:
    store, run_id = recorded
    same = replay_run(store, run_id, ex.careful, tasks=ex.tasks)
    assert same["summary"]["diverged"] == 0 and same["summary"]["violations"] == 0
    planted = {
        t.trial_key
        for t in store.list_trials(run_id)
        for e in store.iter_events(run_id, t.trial_key, attempt=0)
        if e.kind == "tool_end" and ex.FORBIDDEN_TOOL in str(e.result)
    }
    assert planted
    other = replay_run(store, run_id, ex.naive, tasks=ex.tasks)
    forbidden = {
        c["trial_key"] for c in other["cases"] if c["violations"]["counts"]["forbidden_tool"]
    }
    assert forbidden == planted
    for case in other["cases"]:
        if case["trial_key"] in planted:
            assert ex.FORBIDDEN_TOOL in [u["tool"] for u in case["selection"]["unexpected"]]
