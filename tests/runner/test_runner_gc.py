"""The cyclic collector around a run: paused only while the run builds its report.

``hbeval._gc.collector_paused`` pauses the collector for the phase after the trials (reading
verdicts back, building and saving the report), which is hbeval's own code. These tests check
the state of the collector the agent and the store see, and that it is as it was afterwards,
however the run ends.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hbeval.runner.run import run_battery
from hbeval.store import RUN_COMPLETED, InMemoryStore, SQLiteStore
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from hbeval_plain import think

TASK = Task(id="t", question="say ok", required=("ok",))


class _Node:
    """One half of a reference cycle the agent makes (garbage only the collector frees)."""

    alive: ClassVar[weakref.WeakSet[_Node]] = weakref.WeakSet()

    def __init__(self) -> None:
        _Node.alive.add(self)
        self.other: _Node | None = None


def _factory(seen: list[bool], cycles: int = 1) -> Callable[[], Callable[[str], str]]:
    def build() -> Callable[[str], str]:
        def agent(question: str) -> str:
            seen.append(gc.isenabled())
            for _ in range(cycles):
                a, b = _Node(), _Node()
                a.other, b.other = b, a
            think("answering")
            return "ok"

        return agent

    return build


class _WatchedSQLite(SQLiteStore):
    """SQLite, noting whether the collector runs when the run saves its report."""

    def __init__(self, path: str, fail: bool = False) -> None:
        super().__init__(path)
        self.fail = fail
        self.collecting_at_finish: list[bool] = []

    def finish_run(
        self,
        run_id: str,
        status: str,
        report_json: Mapping[str, Any] | str | None = None,
        *,
        finished_at: float | None = None,
    ) -> None:
        self.collecting_at_finish.append(gc.isenabled())
        if self.fail and status == RUN_COMPLETED:
            raise OSError("disk full while saving the report")
        super().finish_run(run_id, status, report_json, finished_at=finished_at)


@pytest.fixture
def collector() -> Iterator[None]:
    """Leave the collector as the test found it."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def test_agents_run_with_the_collector_and_the_report_is_built_without_it(
    tmp_path: Path, collector: None
) -> None:
    gc.enable()
    thresholds = gc.get_threshold()
    seen: list[bool] = []
    store = _WatchedSQLite(str(tmp_path / "hb.db"))
    with store:
        report = run_battery(
            None, _factory(seen), [TASK], Battery.hbeval(n_scenarios=6, seed=42), trials=1,
            store=store, run_id="gc",
        )  # fmt: skip
        assert store.get_report("gc") == report
    assert seen and all(seen)  # every trial's agent ran with the collector on
    assert store.collecting_at_finish == [False]  # the report phase ran with it paused
    assert gc.isenabled() and gc.get_threshold() == thresholds


def test_the_collector_is_enabled_again_when_saving_the_report_fails(
    tmp_path: Path, collector: None
) -> None:
    gc.enable()
    store = _WatchedSQLite(str(tmp_path / "hb.db"), fail=True)
    with store:
        with pytest.raises(OSError, match="disk full"):
            run_battery(
                None, _factory([]), [TASK], Battery.hbeval(n_scenarios=6, seed=42), trials=1,
                store=store, run_id="gc",
            )  # fmt: skip
        assert store.collecting_at_finish == [False]
    assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled(collector: None) -> None:
    gc.disable()
    seen: list[bool] = []
    run_battery(
        None, _factory(seen), [TASK], Battery.hbeval(n_scenarios=6, seed=42), trials=1,
        store=InMemoryStore(), run_id="gc",
    )  # fmt: skip
    assert seen and not any(seen) and not gc.isenabled()


def test_cycles_the_trials_make_are_collected_during_the_run(collector: None) -> None:
    """Each trial leaves 2,000 objects in cycles; they are freed as the battery goes (by the
    collector running inside the trials), not held until it ends."""
    gc.enable()
    gc.collect()
    seen: list[bool] = []
    run_battery(
        None, _factory(seen, cycles=1000), [TASK], Battery.hbeval(n_scenarios=6, seed=42),
        trials=2, store=InMemoryStore(), run_id="gc",
    )  # fmt: skip
    made = 2000 * len(seen)
    assert made >= 24_000
    assert len(_Node.alive) < 4000  # without any collection all of them would be alive
