"""run_battery end to end: store, determinism, resume, retries, timeouts, isolation, budgets."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hbeval.runner.manifest import ManifestMismatchError, RunManifest
from hbeval.runner.run import ProgressUpdate, run_battery
from hbeval.scoring import strip_volatile
from hbeval.scoring._report_model import validate_report
from hbeval.store import (
    RUN_COMPLETED,
    RUN_INTERRUPTED,
    InMemoryStore,
    SQLiteStore,
    open_store,
)
from hbeval_core.contract import Budgets, InfraError, Task
from hbeval_core.faults import Battery
from hbeval_core.vocab import OUTCOME_FAIL, OUTCOME_INFRA_ERROR, OUTCOME_PASS, OUTCOME_TIMEOUT
from hbeval_plain import PlainAdapter, ToolCallError, think, tool
from hbeval_plain.examples import CarefulAgent, careful, naive, tasks


def small(n: int = 6) -> Battery:
    return Battery.hbeval(n_scenarios=n, seed=42)


def test_end_to_end_into_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    with open_store(str(db)) as store:
        report = run_battery(
            None, careful, tasks, small(12), trials=2, store=store, agent_id="careful"
        ).to_dict()
        run_id = report["run"]["run_id"]
        validate_report(report)
        assert report["run"]["trial_count"] == 24
        assert store.get_run(run_id).status == RUN_COMPLETED  # type: ignore[union-attr]
        assert len(store.list_trials(run_id)) == 24
        assert len(store.list_attempts(run_id)) == 24
        stored = store.get_report(run_id)
        assert stored is not None and stored.to_dict() == report
        assert store.get_metrics(run_id).values.keys() == report["metrics"].keys()
        key = store.list_trials(run_id)[0].trial_key
        kinds = [e.kind for e in store.iter_events(run_id, key)]  # type: ignore[attr-defined]
        assert kinds[0] == "run_start" and kinds[-1] == "run_end"
        assert store.get_metrics(run_id, key).values
    fps = report["fingerprints"]
    battery = small(12)
    assert fps["battery_spec"] == battery.spec_fingerprint()
    assert fps["plan"] == battery.plan_fingerprint()
    assert fps["measurement"] == battery.measurement_fingerprint(2)
    assert report["manifest_hash"] and report["versions"]["scoring"] == "hbeval-scoring/3"
    assert report["isolation"]["isolated"] is True
    assert db.exists()


def test_careful_and_naive_differ_plainly() -> None:
    good = run_battery(
        None, careful, tasks, Battery.hbeval(seed=42), trials=1, agent_id="c"
    ).to_dict()
    bad = run_battery(None, naive, tasks, Battery.hbeval(seed=42), trials=1, agent_id="n").to_dict()
    assert good["agentdojo"]["targeted_attack_success_rate"] == 0.0
    assert bad["agentdojo"]["targeted_attack_success_rate"] == 1.0
    # trials=1: too few injection trials for the security gate, so not SAFE (as `gate` says).
    assert good["verdict"] == "INSUFFICIENT_DATA" and good["unmeasured_metrics"] == ["security"]
    assert bad["verdict"] == "UNSAFE"
    ran_forbidden = [
        t for t in bad["trials"] if "transfer_funds" in t["verdict"]["forbidden_tools_run"]
    ]
    assert ran_forbidden and all(t["fault_type"] == "adversarial" for t in ran_forbidden)
    # Both declare their calls (TI 5.0, hb-derive/2); only the careful one says why.
    assert good["metrics"]["ti"] == 5.0 and bad["metrics"]["ti"] == 5.0
    assert good["traceability"]["explained_share"] == 1.0
    assert bad["traceability"]["explained_share"] == 0.0
    assert good["metrics"]["irs"] > bad["metrics"]["irs"]
    assert "deliberate_handling" in bad["evidence"]["claims_unsupported"]


def test_same_seed_same_report(tmp_path: Path) -> None:
    reports = []
    for name in ("a.db", "b.db"):
        with SQLiteStore(str(tmp_path / name)) as store:
            reports.append(
                run_battery(
                    None, naive, tasks, small(), trials=2, store=store, run_id="same"
                ).to_dict()
            )
    assert strip_volatile(reports[0]) == strip_volatile(reports[1])
    other_seed = run_battery(
        None, naive, tasks, Battery.hbeval(n_scenarios=6, seed=7), seed=7
    ).to_dict()
    assert other_seed["fingerprints"]["measurement"] != reports[0]["fingerprints"]["measurement"]


def test_a_run_into_sqlite_reports_what_a_run_in_memory_reports(tmp_path: Path) -> None:
    """A SQLite run reads its trials back at the end; the report is the in-memory run's."""

    @tool
    def lookup(item: int) -> int:
        return item

    def factory() -> Any:
        def agent(question: str) -> str:
            for i in range(3):
                think(f"step {i}", tool_calls=[("lookup", {"item": i})])
                try:
                    lookup(item=i)
                except ToolCallError:
                    pass
            return "done"

        return agent

    task = Task(id="t", question="q", required=("done",))
    in_memory = run_battery(None, factory, [task], small(), trials=2, run_id="m").to_dict()
    with SQLiteStore(str(tmp_path / "hb.db")) as store:
        on_disk = run_battery(
            None, factory, [task], small(), trials=2, store=store, run_id="m"
        ).to_dict()
    # Three replies per trial, each issuing a call, whatever the faults did to the calls.
    assert {t["usage"]["model_calls"] for t in on_disk["trials"]} == {3}
    assert strip_volatile(on_disk) == strip_volatile(in_memory)


def test_resume_after_interrupt_has_no_duplicates(tmp_path: Path) -> None:
    db = str(tmp_path / "resume.db")

    def stop_after_five(update: ProgressUpdate) -> None:
        if update.done == 5:
            raise KeyboardInterrupt

    with open_store(db) as store:
        with pytest.raises(KeyboardInterrupt):
            run_battery(
                None,
                careful,
                tasks,
                small(),
                trials=2,
                store=store,
                run_id="r1",
                progress=stop_after_five,
            )
        assert store.get_run("r1").status == RUN_INTERRUPTED  # type: ignore[union-attr]
        assert len(store.completed_trial_keys("r1")) == 5
    seen: list[ProgressUpdate] = []
    with open_store(db) as store:
        report = run_battery(
            None, careful, tasks, small(), trials=2, store=store, run_id="r1", progress=seen.append
        ).to_dict()
        assert seen[0].resumed == 5 and seen[-1].done == 12
        trials = store.list_trials("r1")
        assert len(trials) == 12 and len({t.trial_key for t in trials}) == 12
        assert Counter(a.trial_key for a in store.list_attempts("r1")).most_common(1)[0][1] == 1
        assert store.get_run("r1").status == RUN_COMPLETED  # type: ignore[union-attr]
    fresh = run_battery(None, careful, tasks, small(), trials=2, run_id="r1").to_dict()
    assert strip_volatile(report) == strip_volatile(fresh)


class _StopOnceStore(InMemoryStore):
    """Tears the first trial's write: its attempts are stored, then KeyboardInterrupt, no trial.

    The runner writes a trial in one transaction, so this models a store written by a writer
    without bundles (or an older hbeval) that was interrupted between the attempt and the trial.
    """

    armed = True

    def record_trial_bundle(self, trial: Any, attempts: Any = (), *args: Any, **kwargs: Any) -> int:
        if self.armed:
            self.armed = False
            for attempt in attempts:
                self.record_attempt(attempt)
            raise KeyboardInterrupt
        return super().record_trial_bundle(trial, attempts, *args, **kwargs)


def test_resume_after_a_torn_write_continues_attempt_numbers() -> None:
    store = _StopOnceStore()
    with pytest.raises(KeyboardInterrupt):
        run_battery(None, careful, tasks, small(), trials=1, store=store, run_id="torn")
    assert store.list_attempts("torn") and not store.list_trials("torn")
    run_battery(None, careful, tasks, small(), trials=1, store=store, run_id="torn")
    attempts = store.list_attempts("torn", "s000-t0")
    assert [a.attempt for a in attempts] == [0, 1]
    assert len(store.list_trials("torn")) == 6


def test_default_run_id_resumes_unfinished_and_never_reopens_finished() -> None:
    store = InMemoryStore()
    first = run_battery(
        None, careful, tasks, small(), trials=1, store=store, agent_id="x"
    ).to_dict()
    second = run_battery(
        None, careful, tasks, small(), trials=1, store=store, agent_id="x"
    ).to_dict()
    fp = first["fingerprints"]["measurement"]
    assert first["run"]["run_id"] == f"x-{fp}"
    assert second["run"]["run_id"] == f"x-{fp}-2"
    # The second run of the same measurement gives CSI its history.
    assert second["csi_info"]["runs_total"] == 2


def test_infra_error_is_retried_and_every_attempt_kept() -> None:
    calls = Counter[str]()

    def flaky_factory() -> Any:
        def agent(question: str) -> str:
            calls[question] += 1
            if calls[question] == 1:
                raise InfraError("sandbox not ready")
            return "ok"

        return agent

    store = InMemoryStore()
    task = Task(id="t", question="hello", required=("ok",))
    report = run_battery(
        None,
        flaky_factory,
        [task],
        Battery.hbeval(n_scenarios=6, seed=42, fault_types=[]),
        trials=1,
        store=store,
        run_id="flaky",
    ).to_dict()
    first = report["trials"][0]
    assert first["attempts"] == 2 and first["outcome"] == OUTCOME_PASS
    attempts = store.list_attempts("flaky", first["trial_key"])
    assert [(a.attempt, a.outcome, a.infra) for a in attempts] == [
        (0, OUTCOME_INFRA_ERROR, True),
        (1, OUTCOME_PASS, False),
    ]
    assert attempts[0].error == "sandbox not ready"
    events = list(store.iter_events("flaky", first["trial_key"], attempt=0))
    assert events[0].run_id == "flaky/s000-t0" and events[-1].kind == "run_end"  # type: ignore[attr-defined]


def test_adapter_that_always_raises_ends_as_infra_error_not_a_crash() -> None:
    class Broken(PlainAdapter):
        def run_trial(self, target: Any, task: Task, scenario: Any, plan: Any) -> Any:
            raise RuntimeError("harness bug")

    store = InMemoryStore()
    report = run_battery(
        Broken(), careful, tasks, small(), trials=1, store=store, run_id="b", max_infra_retries=1
    ).to_dict()
    assert report["outcomes"][OUTCOME_INFRA_ERROR] == 6
    assert len(store.list_attempts("b")) == 12
    assert report["verdict"] == "INSUFFICIENT_DATA"


def test_target_that_raises_is_a_failed_trial() -> None:
    def factory() -> Any:
        def agent(question: str) -> str:
            raise ZeroDivisionError("oops")

        return agent

    report = run_battery(None, factory, tasks, small(), trials=1).to_dict()
    assert report["outcomes"][OUTCOME_FAIL] == 6
    v = report["trials"][0]["verdict"]
    assert v["run_status"] == "error" and v["severity"] == "workflow_blocked"


def test_factory_that_raises_is_infra_error() -> None:
    def factory() -> Any:
        raise OSError("no api key")

    report = run_battery(None, factory, tasks, small(), trials=1, max_infra_retries=0).to_dict()
    assert report["outcomes"][OUTCOME_INFRA_ERROR] == 6


def test_timeout_cuts_the_trial_and_keeps_the_trace_before_the_cut() -> None:
    release = threading.Event()
    after_cut = threading.Event()

    @tool
    def slow_step() -> str:
        return "step"

    def factory() -> Any:
        def agent(question: str) -> str:
            think("first a step", tool_calls=[("slow_step", {})])
            try:
                slow_step()
            except ToolCallError:
                pass  # the tool_failure scenarios fail this call; block either way
            release.wait(5)
            try:
                slow_step()  # the runner tells the background thread to stop here
            finally:
                after_cut.set()
            return "late"

        return agent

    store = InMemoryStore()
    task = Task(id="t", question="q", required=("late",))
    one = Battery.hbeval(n_scenarios=6, seed=42, fault_types=["tool_failure"])
    try:
        report = run_battery(
            None,
            factory,
            [task],
            one,
            trials=1,
            store=store,
            run_id="to",
            timeout=0.2,
            concurrency=6,
            max_infra_retries=0,
        ).to_dict()
    finally:
        release.set()
    assert after_cut.wait(5)
    assert report["outcomes"][OUTCOME_TIMEOUT] == 6
    trial = report["trials"][0]
    assert trial["verdict"]["run_status"] == "timeout"
    kinds = [e.kind for e in store.iter_events("to", trial["trial_key"])]  # type: ignore[attr-defined]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("tool_start") == 1  # the call after the cut is not in the trace
    assert len(store.list_attempts("to")) == 6


def test_shared_object_runs_serially_and_is_not_isolated() -> None:
    shared = CarefulAgent()
    report = run_battery(None, shared, tasks, small(), trials=1, concurrency=4).to_dict()
    assert report["isolation"]["isolated"] is False
    assert "not isolated" in report["isolation"]["note"]
    assert all(t["isolated"] is False for t in report["trials"])
    # Every trial touched the one help desk.
    assert len(shared.desk.refunds) >= 1


def test_factory_with_concurrency_matches_serial() -> None:
    serial = run_battery(None, naive, tasks, small(), trials=2, run_id="x").to_dict()
    parallel = run_battery(
        None, naive, tasks, small(), trials=2, run_id="x", concurrency=4
    ).to_dict()
    assert parallel["isolation"]["isolated"] is True
    assert strip_volatile(serial) == strip_volatile(parallel)


def test_budget_stops_the_trial_at_the_next_tool_boundary() -> None:
    manifest = RunManifest(budgets=Budgets(max_tool_calls=1))
    store = InMemoryStore()
    report = run_battery(
        None, careful, tasks, small(), trials=1, store=store, run_id="bud", manifest=manifest
    ).to_dict()
    halted = [t for t in report["trials"] if t["verdict"]["run_status"] == "halted"]
    assert halted and all(t["outcome"] == OUTCOME_FAIL for t in halted)
    assert all(t["usage"]["interventions"] >= 1 for t in halted)
    key = halted[0]["trial_key"]
    events = list(store.iter_events("bud", key))
    assert [e.kind for e in events].count("tool_end") + [  # type: ignore[attr-defined]
        e.kind  # type: ignore[attr-defined]
        for e in events
    ].count("tool_error") <= 1
    halt = next(e for e in events if e.kind == "halt")  # type: ignore[attr-defined]
    assert halt.attrs["budget"] == "max_tool_calls" and halt.enforced  # type: ignore[attr-defined]
    config = store.get_run("bud").config  # type: ignore[union-attr]
    assert config["manifest"]["budgets"]["max_tool_calls"] == 1


def test_manifest_pinning_a_different_fingerprint_is_refused() -> None:
    store = InMemoryStore()
    manifest = RunManifest(expected_hashes={"measurement_fingerprint": "0000000000000000"})
    with pytest.raises(ManifestMismatchError, match="measurement_fingerprint"):
        run_battery(None, careful, tasks, small(), store=store, manifest=manifest)
    assert store.list_runs() == []
    right = small().measurement_fingerprint(3)
    ok = RunManifest(expected_hashes={"measurement_fingerprint": right})
    assert run_battery(None, careful, tasks, small(), manifest=ok).verdict


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(ValueError, match="trials"):
        run_battery(None, careful, tasks, small(), trials=0)
    with pytest.raises(ValueError, match="methodology C"):
        run_battery(None, careful, tasks, small(), judge=lambda p: {"safe": True})
    with pytest.raises(ValueError, match="seed 42"):
        run_battery(None, careful, tasks, small(), seed=1)
    with pytest.raises(ValueError, match="tasks"):
        run_battery(None, careful, [], small())


@pytest.mark.parametrize("workers", [1, 3])
def test_ctrl_c_inside_a_trial_keeps_completed_trials(workers: int) -> None:
    calls = Counter[str]()
    lock = threading.Lock()

    def factory() -> Any:
        def agent(question: str) -> str:
            with lock:
                calls["n"] += 1
                n = calls["n"]
            if n == 4:
                # Ctrl-C reaches the process (an agent's own KeyboardInterrupt only ends its
                # trial), once the three trials started before this one have finished.
                time.sleep(0.3)
                signal.raise_signal(signal.SIGINT)
                time.sleep(0.2)
            return "ok"

        return agent

    store = InMemoryStore()
    task = Task(id="t", question="q", required=("ok",))
    with pytest.raises(KeyboardInterrupt):
        run_battery(
            None, factory, [task], small(), trials=1, store=store, run_id="k", concurrency=workers
        )
    assert store.get_run("k").status == RUN_INTERRUPTED  # type: ignore[union-attr]
    done = store.completed_trial_keys("k")
    assert len(done) >= 3 if workers > 1 else len(done) == 3
    resumed = run_battery(
        None, factory, [task], small(), trials=1, store=store, run_id="k"
    ).to_dict()
    assert resumed["run"]["trial_count"] == 6 and len(store.list_trials("k")) == 6


def test_shared_agent_still_busy_after_a_timeout_skips_the_rest() -> None:
    release = threading.Event()

    class Stuck:
        def __call__(self, question: str) -> str:
            release.wait(5)
            return "late"

    store = InMemoryStore()
    task = Task(id="t", question="q", required=("late",))
    try:
        report = run_battery(
            None,
            Stuck(),
            [task],
            small(),
            trials=1,
            store=store,
            run_id="busy",
            timeout=0.1,
            max_infra_retries=0,
        ).to_dict()
    finally:
        release.set()
    assert report["outcomes"][OUTCOME_TIMEOUT] == 1
    assert report["outcomes"]["skipped"] == 5
    skipped = [a for a in store.list_attempts("busy") if a.outcome == "skipped"]
    assert len(skipped) == 5 and "still running" in (skipped[0].error or "")
    assert report["isolation"]["isolated"] is False
