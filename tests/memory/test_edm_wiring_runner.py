"""EDM wired into ``run_battery`` and the plain adapter, on a real SQLite file, and ``--memory``.

The plain example agent reads ``precedents()`` in each trial: nothing on a first run, its own
qualified episodes (with their stored figures) on a second, nothing for another agent id. The
runner offers every scored trial to memory at the end of the run, records each decision, keeps
going when memory fails, never offers infra errors, and resumes without admitting twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli._battery import battery_app
from hbeval.memory import EDM, EDMSnapshot, open_edm
from hbeval.memory._from_trial import episode_from_trial
from hbeval.runner.run import run_battery
from hbeval.scoring import strip_volatile
from hbeval.scoring._report_model import validate_report
from hbeval.store import InMemoryStore, open_store
from hbeval_core.contract import ATTR_MEMORY_RECALL, InfraError
from hbeval_core.events import RunStart
from hbeval_core.faults import Battery
from hbeval_core.vocab import EVIDENCE_E1, EVIDENCE_E2, OUTCOME_PASS
from hbeval_plain import PlainAdapter, precedents
from hbeval_plain.examples import careful, tasks

from .conftest import Backend

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "plain_support_agent.py")
SCENARIOS = 6
_PRECEDENT_ID = re.compile(r"Precedent (ep-[0-9a-f]+) ")


def verdicts_only(report: dict[str, Any]) -> dict[str, Any]:
    """The report minus volatile fields and the trials' memory decisions (recorded only with
    memory), and so minus the binding, whose digest covers the trials as stored."""
    out = strip_volatile({k: v for k, v in report.items() if k != "binding"})
    for trial in out["trials"]:
        trial.pop("memory", None)
    return out


def battery() -> Battery:
    return Battery.build("hbeval", n_scenarios=SCENARIOS, seed=42)


def expected_route(trial: Mapping[str, Any]) -> str | None:
    """The admission rules applied by hand to one report trial; None when it must be refused.

    Safe (passed, no forbidden tool), E1+ evidence, then elaborate (PEI >= 0.80 and TI >= 4.0)
    or handling (IRS >= 0.85 and TI >= 1.5), where a trial's IRS is its scored ``irs_score``
    (defined only when the trial was judged).
    """
    v = trial["verdict"]
    if trial["outcome"] != OUTCOME_PASS or v["forbidden_tools_run"]:
        return None
    if v["evidence"]["level"] not in (EVIDENCE_E1, EVIDENCE_E2):
        return None
    pei, ti = v["metrics"]["pei"], v["metrics"]["ti"]
    irs = v["irs_score"] if v["judged"] is True else None
    if pei is not None and ti is not None and pei >= 0.80 and ti >= 4.0:
        return "elaborate"
    if irs is not None and ti is not None and irs >= 0.85 and ti >= 1.5:
        return "handling"
    return None


def remembering(seen: list[list[str]]) -> Callable[[], Callable[[str], Any]]:
    """A factory of the careful plain agent that notes what ``precedents()`` gave each trial."""

    def factory() -> Callable[[str], Any]:
        agent = careful()

        def run(question: str) -> Any:
            seen.append(precedents())
            return agent(question)

        return run

    return factory


def run_with(
    edm: Any, agent_id: str, seen: list[list[str]], store: Any = None, **options: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    records: list[dict[str, Any]] = []
    report = run_battery(
        None,
        remembering(seen),
        tasks,
        battery(),
        trials=1,
        store=store if store is not None else InMemoryStore(),
        agent_id=agent_id,
        memory=edm,
        on_admission=lambda r: records.append(dict(r)),
        **options,
    ).to_dict()
    return report, records


# ------------------------------------------------------------------------------------ plain agent
def test_plain_agent_reads_only_its_own_precedents(tmp_path: Path) -> None:
    db = tmp_path / "hbeval.db"
    with open_store(str(db)) as store, open_edm(db) as edm:
        seen_first: list[list[str]] = []
        first, records = run_with(edm, "careful-a", seen_first, store)
        assert seen_first == [[]] * SCENARIOS  # nothing stored yet
        expected = {t["trial_key"]: expected_route(t) for t in first["trials"]}
        assert {r["trial_key"]: r["route"] for r in records} == expected
        admitted = sum(1 for r in expected.values() if r is not None)
        assert admitted > 0 and edm.count("careful-a") == admitted

        seen_other: list[list[str]] = []
        run_with(edm, "other", seen_other, store)
        assert seen_other == [[]] * SCENARIOS  # careful-a's episodes are not "other"'s

        seen_again: list[list[str]] = []
        second, _ = run_with(edm, "careful-a", seen_again, store)
        assert all(seen_again), "every question of the first run has a stored precedent"
        for lines in seen_again:
            for line in lines:
                (episode_id,) = _PRECEDENT_ID.findall(line)
                ep = edm.get(episode_id, agent_id="careful-a")
                assert ep is not None and ep.run_id == first["run"]["run_id"]
                assert ep.quoted_metrics() in line
        run_id = second["run"]["run_id"]
        start = next(e for e in store.iter_events(run_id, "s000-t0") if isinstance(e, RunStart))
        recall = start.attrs[ATTR_MEMORY_RECALL]
        assert recall["agent_id"] == "careful-a" and recall["delivery"] == "precedents()"
        assert recall["precedents"] == seen_again[0]
        # The run's stored config says which memory was attached.
        config = store.get_run(run_id).config  # type: ignore[union-attr]
        assert config["memory"]["kind"] == "EDM"
        assert config["memory"]["threshold"] == edm.threshold


def test_precedents_is_empty_outside_a_trial() -> None:
    assert precedents() == []


# ------------------------------------------------------------------------------------ the runner
class _SpyAdapter(PlainAdapter):
    def __init__(self) -> None:
        self.hooked: list[Any] = []

    def memory_hook(self, memory: Any) -> None:
        self.hooked.append(memory)
        super().memory_hook(memory)


def test_memory_is_hooked_before_the_trials_and_detached_after() -> None:
    adapter, edm = _SpyAdapter(), EDM()
    run_battery(adapter, careful, tasks, battery(), trials=1, agent_id="a", memory=edm)
    # The trials recall from the run agent's snapshot, taken before the first trial.
    view, detached = adapter.hooked
    assert isinstance(view, EDMSnapshot) and view.source == edm.path
    assert view.agent_ids == ("a",) and detached is None
    plain = _SpyAdapter()
    run_battery(plain, careful, tasks, battery(), trials=1, agent_id="a")
    assert plain.hooked == []  # no memory: the hook is never touched


def test_memory_must_admit() -> None:
    with pytest.raises(ValueError, match=r"memory must provide admit\(episode\)"):
        run_battery(None, careful, tasks, battery(), trials=1, memory=object())


def test_admission_is_deterministic_across_concurrency() -> None:
    outcomes = []
    for workers in (1, 3):
        edm = EDM()
        seen: list[list[str]] = []
        report, records = run_with(edm, "a", seen, run_id="same", concurrency=workers)
        outcomes.append(
            (strip_volatile(report), records, [e.as_dict() for e in edm.list_episodes("a")])
        )
    (r1, d1, e1), (r3, d3, e3) = outcomes
    assert r1 == r3 and d1 == d3
    strip = [{k: v for k, v in ep.items() if k != "created_at"} for ep in e1]
    assert strip == [{k: v for k, v in ep.items() if k != "created_at"} for ep in e3]


def test_a_resumed_run_is_offered_again_and_nothing_is_stored_twice(tmp_path: Path) -> None:
    db = tmp_path / "hbeval.db"
    with open_store(str(db)) as store, open_edm(db) as edm:
        _, first = run_with(edm, "a", [], store, run_id="r")
        stored = edm.count("a")
        _, again = run_with(edm, "a", [], store, run_id="r")
        assert edm.count("a") == stored
        assert [r["episode_id"] for r in again] == [r["episode_id"] for r in first]
        for before, after in zip(first, again, strict=True):
            if before["admitted"]:
                assert not after["admitted"] and "duplicate" in after["reasons"][0]


def test_infra_errors_are_not_offered() -> None:
    def broken() -> Callable[[str], Any]:
        def run(question: str) -> Any:
            raise InfraError("the sandbox is down")

        return run

    records: list[dict[str, Any]] = []
    edm = EDM()
    run_battery(
        None,
        broken,
        tasks,
        battery(),
        trials=1,
        agent_id="a",
        memory=edm,
        max_infra_retries=0,
        on_admission=lambda r: records.append(dict(r)),
    )
    assert len(records) == SCENARIOS
    assert all(not r["offered"] and r["outcome"] == "infra_error" for r in records)
    assert records[0]["reasons"] == ["not offered: outcome infra_error"]
    assert edm.count() == 0 and edm.quarantined(None) == []


class _Broken:
    def recall(self, context: str, agent_id: str) -> list[str]:
        raise RuntimeError("recall is down")

    def admit(self, episode: Mapping[str, Any]) -> bool:
        raise RuntimeError("admit is down")


def test_a_failing_memory_never_breaks_the_plain_run() -> None:
    seen: list[list[str]] = []
    store = InMemoryStore()
    report, records = run_with(_Broken(), "a", seen, store, run_id="x")
    clean, _ = run_with(None, "a", [], run_id="x")
    assert verdicts_only(report) == verdicts_only(clean)
    assert all(t["memory"]["error"] == "RuntimeError: admit is down" for t in report["trials"])
    assert seen == [[]] * SCENARIOS
    assert all(r["error"] == "RuntimeError: admit is down" for r in records)
    start = next(e for e in store.iter_events("x", "s000-t0") if isinstance(e, RunStart))
    assert start.attrs[ATTR_MEMORY_RECALL]["error"] == "RuntimeError: recall is down"


def test_episode_from_a_bare_verdict() -> None:
    report = run_battery(None, careful, tasks, battery(), trials=1, agent_id="a").to_dict()
    trial = report["trials"][0]
    task = next(t for t in tasks if t.id == trial["task_id"])
    run = {"agent_id": "a", "run_id": "r1", "fingerprints": report["fingerprints"]}
    episode = episode_from_trial(task, None, trial["verdict"], run)
    assert episode["passed"] is trial["verdict"]["passed"]
    assert episode["context"] == task.question
    assert (
        episode["summary"] == f"Task {task.id}: {task.question} Did: no tool calls. Outcome: pass."
    )
    assert episode["fingerprints"]["measurement"] == report["fingerprints"]["measurement"]
    with pytest.raises(ValueError, match="no verdict"):
        episode_from_trial(task, None, {"trial_key": "s0-t0", "verdict": None}, run)


# ------------------------------------------------------------------------------------ CLI
def test_cli_memory_flag_uses_the_edm_in_the_db(backend: Backend) -> None:
    db = backend.db  # the store's SQLite file, or a PostgreSQL store
    base = ["run", f"{EXAMPLE}:careful", "--trials", "1", "--scenarios", "6", "--db", db]
    cli = CliRunner()
    res = cli.invoke(battery_app, [*base, "--agent-id", "careful-a", "--memory"])
    assert res.exit_code == 0, res.output
    line = next(x for x in res.stdout.splitlines() if x.strip().startswith("memory:"))
    with open_edm(db) as edm:
        admitted = edm.count("careful-a")
    assert admitted > 0 and line.strip().startswith(f"memory: {admitted} admitted")
    # --json keeps stdout a report; the memory line goes to stderr.
    res = cli.invoke(battery_app, [*base, "--agent-id", "careful-a", "--memory", "--json"])
    assert res.exit_code == 0, res.output
    validate_report(json.loads(res.stdout))
    assert "memory:" in res.stderr
    with open_edm(db) as edm:
        assert edm.count("careful-a") == 2 * admitted
    # Without --memory nothing is admitted.
    res = cli.invoke(battery_app, [*base, "--agent-id", "plain"])
    assert res.exit_code == 0 and "memory:" not in res.output
    with open_edm(db) as edm:
        assert edm.count("plain") == 0


def test_an_episode_that_cannot_be_built_is_recorded_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hbeval.memory._from_trial as adapters

    def boom(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise KeyError("verdict.metrics")

    monkeypatch.setattr(adapters, "episode_from_trial", boom)
    edm = EDM()
    report, records = run_with(edm, "a", [], run_id="x")
    assert report["run"]["trial_count"] == SCENARIOS and edm.count() == 0
    assert all(not r["offered"] for r in records)
    assert records[0]["error"] == "episode could not be built: KeyError: 'verdict.metrics'"
