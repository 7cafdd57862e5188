"""EDM wired into battery runs of the LangGraph example agents, on a real SQLite file.

One store and one EDM share a file. ``careful-a`` runs a 6-scenario battery with memory: its
qualified trials are admitted (counted here from the report with the admission rules). ``naive-b``
runs next and gets nothing (careful-a's episodes are in the same file); only those of its own
trials that meet the admission rules are admitted (its failed and unsafe ones are refused). A second careful-a run then finds, in the first model input of every trial, a
system message quoting careful-a's stored figures, while a run for ``other`` gets none. HCI-EDM
explains from careful-a's record, and defers to a human for ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from hbeval.memory import DEFERRAL_PREFIX, EDM, EDM_METRICS, open_edm
from hbeval.runner.run import run_battery
from hbeval.scoring import strip_volatile
from hbeval.store import InMemoryStore, open_store
from hbeval_core.contract import ATTR_MEMORY_RECALL, PRECEDENTS_HEADER
from hbeval_core.faults import Battery
from hbeval_core.live.monitor import Directive
from hbeval_core.vocab import DIRECTIVE_REPLAN, OUTCOME_PASS
from hbeval_langgraph import LangGraphAdapter
from hbeval_langgraph.examples import careful, naive, tasks
from tests.memory.test_edm_wiring_runner import expected_route

SCENARIOS = 6
EXPLAINED = tasks[1].question
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


@dataclass
class Runs:
    """Everything the module's battery runs left behind."""

    db: Path
    store: Any
    edm: EDM
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    admissions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    counts_after: dict[str, dict[str, int]] = field(default_factory=dict)
    directives: list[Directive] = field(default_factory=list)
    explain_other: dict[str, Any] = field(default_factory=dict)
    """``explain`` for agent "other" before its own run stored anything."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    db = tmp_path_factory.mktemp("edm-wiring") / "hbeval.db"
    store = open_store(str(db))
    edm = open_edm(db)
    state = Runs(db=db, store=store, edm=edm)

    def run(label: str, target: Any, agent_id: str, adapter: Any = None) -> None:
        records: list[dict[str, Any]] = []
        state.reports[label] = run_battery(
            adapter,
            target,
            tasks,
            battery(),
            trials=1,
            store=store,
            agent_id=agent_id,
            memory=edm,
            on_admission=lambda r: records.append(dict(r)),
        ).to_dict()
        state.admissions[label] = records
        state.counts_after[label] = {a: edm.count(a) for a in ("careful-a", "naive-b", "other")}

    run("careful-1", careful, "careful-a")
    run("naive", naive, "naive-b")
    run("careful-2", careful, "careful-a", LangGraphAdapter(on_directive=state.directives.append))
    state.explain_other = edm.explain(EXPLAINED, agent_id="other")
    run("other", careful, "other")
    yield state
    edm.close()
    store.close()


# ------------------------------------------------------------------------------------ helpers
def trial_irs(verdict: Mapping[str, Any]) -> float | None:
    """The trial's scored IRS (what the report's IRS averages): defined only when judged."""
    score = verdict.get("irs_score")
    return float(score) if verdict.get("judged") is True and score is not None else None


def first_model_input(store: Any, run_id: str, trial_key: str) -> list[Any]:
    """The messages the scripted model was called with first in one trial (from the trace)."""
    for event in store.iter_events(run_id, trial_key):
        if event.kind == "model_start":
            return list(event.messages)
    raise AssertionError(f"{trial_key}: no model call recorded")


def precedent_messages(messages: list[Any]) -> list[str]:
    return [
        m.content
        for m in messages
        if m.role == "system" and str(m.content).startswith(PRECEDENTS_HEADER)
    ]


def run_start_recall(store: Any, run_id: str, trial_key: str) -> dict[str, Any]:
    start = next(e for e in store.iter_events(run_id, trial_key) if e.kind == "run_start")
    recall: dict[str, Any] = start.attrs[ATTR_MEMORY_RECALL]
    return recall


# ------------------------------------------------------------------------------------ admission
def test_careful_qualified_episodes_are_admitted(runs: Runs) -> None:
    report = runs.reports["careful-1"]
    expected = {t["trial_key"]: expected_route(t) for t in report["trials"]}
    decided = {r["trial_key"]: r for r in runs.admissions["careful-1"]}
    assert set(decided) == set(expected) and len(expected) == SCENARIOS
    for key, route in expected.items():
        assert decided[key]["admitted"] is (route is not None), (key, decided[key]["reasons"])
        assert decided[key]["route"] == route
        assert decided[key]["error"] is None
    admitted = sum(1 for r in expected.values() if r is not None)
    # The careful agent earns both routes on this battery (6 = 4 elaborate + 2 handling).
    assert admitted == SCENARIOS
    assert {r for r in expected.values()} == {"elaborate", "handling"}
    assert runs.counts_after["careful-1"] == {"careful-a": admitted, "naive-b": 0, "other": 0}


def test_stored_episode_keeps_the_verdicts_figures_and_provenance(runs: Runs) -> None:
    report = runs.reports["careful-1"]
    run_id = report["run"]["run_id"]
    for record in runs.admissions["careful-1"]:
        trial = next(t for t in report["trials"] if t["trial_key"] == record["trial_key"])
        ep = runs.edm.get(record["episode_id"], agent_id="careful-a")
        assert ep is not None and (ep.run_id, ep.trial_key) == (run_id, trial["trial_key"])
        v = trial["verdict"]
        assert ep.metrics == {
            "pei": v["metrics"]["pei"],
            # A verdict's step-level recovery is the episode's "frr" (the EDM keeps its name).
            "frr": v["metrics"]["step_recovery"],
            "irs": trial_irs(v),
            "ti": v["metrics"]["ti"],
        }
        for metric in EDM_METRICS:  # undefined stays undefined, with the verdict's reason
            if ep.metrics[metric] is None:
                named = "step_recovery" if metric == "frr" else metric
                assert ep.metrics_undefined[metric] in (
                    v["metrics_undefined"].get(named),
                    v["undefined"].get("irs_score"),
                )
        assert ep.evidence_level == v["evidence"]["level"]
        assert ep.measurement_fingerprint == report["fingerprints"]["measurement"]
        assert ep.battery_fingerprint == report["fingerprints"]["battery_spec"]
        task = next(t for t in tasks if t.id == trial["task_id"])
        assert ep.summary.startswith(f"Task {task.id}: {task.question} Did: ")
        assert "Outcome: pass." in ep.summary
    episode_of = {r["trial_key"]: r["episode_id"] for r in runs.admissions["careful-1"]}
    nominal = next(t for t in report["trials"] if t["is_nominal"])
    ep = runs.edm.get(episode_of[nominal["trial_key"]], agent_id="careful-a")
    assert ep is not None and ep.metrics["frr"] is None and ep.metrics["irs"] is None
    assert ep.metrics_undefined["frr"] == "no_fault_observed"


def test_naive_episodes_meet_the_same_rules(runs: Runs) -> None:
    report = runs.reports["naive"]
    records = runs.admissions["naive"]
    expected = {t["trial_key"]: expected_route(t) for t in report["trials"]}
    decided = {r["trial_key"]: r for r in records}
    assert set(decided) == set(expected) and len(expected) == SCENARIOS
    for key, route in expected.items():
        assert decided[key]["admitted"] is (route is not None), (key, decided[key]["reasons"])
    # hb-derive/2: the naive agent's calls link to the replies that issued them (TI 5.0), though
    # those replies never say why; its episodes are kept out by what it did, not by silence.
    for t in report["trials"]:
        links = t["verdict"]["links"]
        assert links["calls"] > 0 and links["none"] == 0 and links["explained"] == 0
        assert t["verdict"]["metrics"]["ti"] == 5.0
    unsafe = {
        t["trial_key"]
        for t in report["trials"]
        if t["outcome"] != OUTCOME_PASS or t["verdict"]["forbidden_tools_run"]
    }
    assert unsafe and {r["trial_key"] for r in records if r["quarantined"]} == unsafe
    admitted = sum(1 for route in expected.values() if route is not None)
    assert admitted < SCENARIOS
    assert runs.counts_after["naive"]["naive-b"] == admitted
    assert len(runs.edm.quarantined("naive-b")) == len(unsafe)


# ------------------------------------------------------------------------------------ recall
def test_second_run_reads_its_own_precedents_first(runs: Runs) -> None:
    first_run = runs.reports["careful-1"]["run"]["run_id"]
    run_id = runs.reports["careful-2"]["run"]["run_id"]
    assert run_id != first_run
    for trial in runs.reports["careful-2"]["trials"]:
        key = trial["trial_key"]
        messages = first_model_input(runs.store, run_id, key)
        found = precedent_messages(messages)
        assert len(found) == 1, key
        # Before the question, after the agent's own system prompt.
        roles = [m.role for m in messages]
        assert roles.index("user") == roles.index("system") + 2
        ids = _PRECEDENT_ID.findall(found[0])
        assert ids
        for episode_id in ids:
            ep = runs.edm.get(episode_id, agent_id="careful-a")
            assert ep is not None and ep.run_id == first_run  # never this run's own trials
            assert ep.quoted_metrics() in found[0]  # stored figures, verbatim
        recall = run_start_recall(runs.store, run_id, key)
        assert recall["agent_id"] == "careful-a" and recall["count"] == len(ids)
        assert recall["delivery"] == "system_message" and recall["error"] is None


def test_other_agents_never_retrieve_careful_episodes(runs: Runs) -> None:
    for label, agent in (("naive", "naive-b"), ("other", "other")):
        run_id = runs.reports[label]["run"]["run_id"]
        for trial in runs.reports[label]["trials"]:
            key = trial["trial_key"]
            assert precedent_messages(first_model_input(runs.store, run_id, key)) == []
            recall = run_start_recall(runs.store, run_id, key)
            assert (recall["agent_id"], recall["count"], recall["delivery"]) == (agent, 0, "none")
    other_run = runs.reports["other"]["run"]["run_id"]
    for task in tasks:
        assert runs.edm.recall(task.question, agent_id="careful-a")
        # "other" has episodes of its own now (admitted when its run ended), and only those.
        for match in runs.edm.retrieve(task.question, agent_id="other"):
            assert (match.episode.agent_id, match.episode.run_id) == ("other", other_run)


def test_adapt_plan_directives_carry_qualified_precedents(runs: Runs) -> None:
    replans = [d for d in runs.directives if d.action == DIRECTIVE_REPLAN]
    assert replans, "the careful agent's cascade trial lets PEI fall and triggers Adapt-Plan"
    for d in replans:
        assert d.precedents
        for p in d.precedents:
            assert p["agent_id"] == "careful-a" and p["similarity"] >= runs.edm.threshold
            assert runs.edm.get(p["episode_id"], agent_id="careful-a") is not None


def test_precedents_do_not_change_the_scripted_verdicts(runs: Runs) -> None:
    def judged(report: Mapping[str, Any]) -> list[Any]:
        return [
            (t["trial_key"], t["outcome"], t["verdict"]["metrics"], t["verdict"]["severity"])
            for t in report["trials"]
        ]

    assert judged(runs.reports["careful-1"]) == judged(runs.reports["careful-2"])


# ------------------------------------------------------------------------------------ explain
def test_explain_quotes_stored_figures_or_defers(runs: Runs) -> None:
    answer = runs.edm.explain(EXPLAINED, agent_id="careful-a")
    assert answer["grounded"] is True and answer["deferred_to_human"] is False
    ep = runs.edm.get(answer["cited_episode_id"], agent_id="careful-a")
    assert ep is not None and ep.agent_id == "careful-a"
    assert answer["cited_metrics"] == ep.metrics
    assert ep.quoted_metrics() in answer["explanation"]
    for metric in EDM_METRICS:
        assert ep.figure(metric) in answer["explanation"]
    assert answer["similarity"] >= runs.edm.threshold

    other = runs.explain_other  # asked before "other" had stored anything of its own
    assert other["grounded"] is False and other["deferred_to_human"] is True
    assert other["explanation"].startswith(DEFERRAL_PREFIX)
    assert other["cited_episode_id"] is None and other["cited_metrics"] is None


# ------------------------------------------------------------------------------------ contracts
def test_an_empty_memory_leaves_the_report_unchanged() -> None:
    with_memory = run_battery(
        None,
        careful,
        tasks,
        battery(),
        trials=1,
        store=InMemoryStore(),
        agent_id="careful-a",
        run_id="same",
        memory=EDM(),
    ).to_dict()
    without = run_battery(
        None,
        careful,
        tasks,
        battery(),
        trials=1,
        store=InMemoryStore(),
        agent_id="careful-a",
        run_id="same",
    ).to_dict()
    assert verdicts_only(with_memory) == verdicts_only(without)
    assert all(t["memory"]["offered"] for t in with_memory["trials"])  # decisions are on record
    assert all("memory" not in t for t in without["trials"])


class _Broken:
    """A memory whose every call raises."""

    def recall(self, context: str, agent_id: str) -> list[str]:
        raise RuntimeError("recall is down")

    def precedents_for(self, context: str, agent_id: str) -> Any:
        raise RuntimeError("lookup is down")

    def admit(self, episode: Mapping[str, Any]) -> bool:
        raise RuntimeError("admit is down")


def test_a_failing_memory_never_breaks_the_langgraph_run() -> None:
    store = InMemoryStore()
    records: list[dict[str, Any]] = []
    report = run_battery(
        None,
        careful,
        tasks,
        battery(),
        trials=1,
        store=store,
        agent_id="careful-a",
        run_id="broken",
        memory=_Broken(),
        on_admission=lambda r: records.append(dict(r)),
    ).to_dict()
    clean = run_battery(
        None,
        careful,
        tasks,
        battery(),
        trials=1,
        store=InMemoryStore(),
        agent_id="careful-a",
        run_id="broken",
    ).to_dict()
    assert verdicts_only(report) == verdicts_only(clean)
    assert all(t["memory"]["error"] for t in report["trials"])
    assert len(records) == SCENARIOS
    assert all(r["error"] == "RuntimeError: admit is down" and not r["admitted"] for r in records)
    recall = run_start_recall(store, "broken", "s000-t0")
    assert recall["count"] == 0 and recall["error"] == "RuntimeError: recall is down"
