"""A run into SQLite reads its trials back for the report: errors included, as a run in memory.

A run whose store is not in memory keeps only a few facts of each recorded trial (its model
calls, interventions and final error) and reads the verdicts back at the end; the report must
be the one a run in memory (which holds every trial dict) builds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hbeval.runner.run import run_battery
from hbeval.scoring import strip_volatile
from hbeval.store import SQLiteStore
from hbeval_core.contract import InfraError, Task
from hbeval_core.faults import Battery
from hbeval_core.vocab import OUTCOME_FAIL, OUTCOME_INFRA_ERROR, OUTCOME_PASS
from hbeval_plain import think

TASK = Task(id="t", question="say done", required=("done",))


def _factory() -> Callable[[], Callable[[str], str]]:
    """Agents that, in turn, raise, fail as infrastructure (every retry too) and answer."""
    built = [0]

    def build() -> Callable[[str], str]:
        built[0] += 1
        n = built[0]

        def agent(question: str) -> str:
            think(f"agent {n}")
            if n % 4 == 1:
                raise RuntimeError(f"the agent broke on build {n}")
            if n % 4 == 2:
                raise InfraError(f"the sandbox is down (build {n})")
            return "done"

        return agent

    return build


def test_errors_read_back_from_sqlite_are_the_ones_a_run_in_memory_reports(
    tmp_path: Path,
) -> None:
    battery = Battery.hbeval(n_scenarios=6, seed=42)
    in_memory = run_battery(
        None, _factory(), [TASK], battery, trials=2, run_id="r", max_infra_retries=0
    ).to_dict()
    with SQLiteStore(str(tmp_path / "hb.db")) as store:
        on_disk = run_battery(
            None, _factory(), [TASK], battery, trials=2, store=store, run_id="r",
            max_infra_retries=0,
        ).to_dict()  # fmt: skip
    outcomes = {t["outcome"] for t in on_disk["trials"]}
    assert {OUTCOME_FAIL, OUTCOME_INFRA_ERROR, OUTCOME_PASS} <= outcomes
    errors = [t.get("error") for t in on_disk["trials"]]
    assert any(e and "the agent broke" in e for e in errors)
    assert any(e and "the sandbox is down" in e for e in errors)
    assert strip_volatile(on_disk) == strip_volatile(in_memory)
