"""Trials on a real two-node Ray cluster (one CPU each), writing to a real PostgreSQL server.

The cluster is started inside the test (``ray.cluster_utils.Cluster``). The battery on it must
give the local run's report (timings aside), with trials on both nodes; a worker node killed in
the middle of a battery and a driver killed in the middle of a run must lose and double nothing.
With EDM (``--memory``) the workers recall what the memory held before the battery and the
driver admits what the local run admits, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli._battery import battery_app
from hbeval.memory import open_edm
from hbeval.runner.manifest import RunManifest
from hbeval.runner.run import run_battery
from hbeval.store import InMemoryStore, PostgresStore, open_store
from hbeval_core.contract import ATTR_MEMORY_RECALL
from hbeval_core.events import RunStart
from hbeval_core.faults import Battery
from hbeval_plain.examples import careful

from ..memory.test_edm_wiring_runner import expected_route
from .ray_agent import slow_careful, slower_careful, tasks
from .report_compare import without_timings

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    made.add_node(num_cpus=1)
    made.wait_for_nodes()
    ray.init(address=made.address, include_dashboard=False, log_to_driver=False)
    yield made
    ray.shutdown()
    made.shutdown()


def battery_run(store: Any, factory: Any, ref: str, n: int, trials: int, **kw: Any) -> Any:
    return run_battery(
        None,
        factory,
        tasks,
        Battery.hbeval(n_scenarios=n, seed=42),
        trials=trials,
        seed=42,
        store=store,
        manifest=RunManifest(target=ref),
        **kw,
    ).to_dict()


def one_final_attempt_each(store: PostgresStore, run_id: str, expected: int) -> None:
    """Every (scenario, trial) recorded once, its attempts numbered 0..n-1 with no gap or twin."""
    trials = store.list_trials(run_id)
    keys = [t.trial_key for t in trials]
    assert len(keys) == expected and len(set(keys)) == expected
    for t in trials:
        numbers = [a.attempt for a in store.list_attempts(run_id, t.trial_key)]
        assert numbers == list(range(t.attempts)), (t.trial_key, numbers)


def test_two_nodes_give_the_local_report(cluster: Any, postgres_url: str) -> None:
    ref = "tests.runner.ray_agent:slow_careful"
    with open_store(postgres_url) as store:
        on_ray = battery_run(store, slow_careful, ref, 18, 3, executor="ray")
        assert isinstance(store, PostgresStore)
        one_final_attempt_each(store, on_ray["run"]["run_id"], 54)
    local = battery_run(InMemoryStore(), slow_careful, ref, 18, 3)
    assert on_ray["run"]["executor"] == "ray" and "executor" not in local["run"]
    cluster_nodes = {n["NodeID"][:12] for n in ray.nodes() if n["Alive"]}
    assert len(cluster_nodes) == 2
    assert {name.rsplit("/", 1)[1] for name in on_ray["run"]["nodes"]} == cluster_nodes
    assert on_ray["run"]["trial_count"] == 54
    assert without_timings(on_ray) == without_timings(local)


def test_a_killed_driver_is_resumed_by_the_same_command(
    cluster: Any, postgres_url: str, tmp_path: Path
) -> None:
    cmd = [
        sys.executable, "-m", "hbeval.cli", "battery", "run",
        "tests.runner.ray_agent:slower_careful", "--tasks", "tests.runner.ray_agent:tasks",
        "--scenarios", "6", "--trials", "3", "--executor", "ray",
        "--ray-address", cluster.address, "--db", postgres_url, "--out", str(tmp_path / "r.json"),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    with PostgresStore(postgres_url) as store:
        deadline = time.monotonic() + 180
        recorded = 0
        while time.monotonic() < deadline and first.poll() is None:
            runs = store.list_runs()
            recorded = len(store.list_trials(runs[0].run_id)) if runs else 0
            if recorded >= 3:
                break
            time.sleep(0.2)
        assert first.poll() is None, f"the driver ended first: {first.communicate()[1][-2000:]}"
        assert 3 <= recorded < 18
        first.send_signal(signal.SIGKILL)
        first.wait()
        (run,) = store.list_runs()
        assert run.status == "running"  # the driver died without closing its run
    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    with PostgresStore(postgres_url) as store:
        (again,) = store.list_runs()  # the same run, resumed, not a new one
        assert again.run_id == run.run_id and again.status == "completed"
        one_final_attempt_each(store, run.run_id, 18)
        report = store.get_report(run.run_id)
    assert report is not None and report.run.trial_count == 18


def test_a_worker_node_killed_mid_battery_loses_and_doubles_nothing(
    cluster: Any, postgres_url: str
) -> None:
    worker = next(n for n in cluster.list_all_nodes() if n is not cluster.head_node)
    ref = "tests.runner.ray_agent:slower_careful"
    result: dict[str, Any] = {}
    with PostgresStore(postgres_url) as store, PostgresStore(postgres_url) as watch:

        def drive() -> None:
            try:
                result["report"] = battery_run(store, slower_careful, ref, 6, 3, executor="ray")
            except BaseException as exc:  # reported by the assertion below
                result["error"] = exc

        driver = threading.Thread(target=drive)
        driver.start()
        deadline = time.monotonic() + 180
        recorded = 0
        while time.monotonic() < deadline and driver.is_alive():
            runs = watch.list_runs()
            recorded = len(watch.list_trials(runs[0].run_id)) if runs else 0
            if recorded >= 2:
                break
            time.sleep(0.1)
        assert driver.is_alive() and 2 <= recorded < 18, recorded
        cluster.remove_node(worker)  # its raylet and running trials die with it
        driver.join(timeout=300)
        assert not driver.is_alive()
        assert "error" not in result, result.get("error")
        report = result["report"]
        one_final_attempt_each(store, report["run"]["run_id"], 18)
    assert report["run"]["trial_count"] == 18
    cluster.add_node(num_cpus=1)  # leave the cluster as the module found it


def test_a_429_on_one_worker_pauses_the_trials_on_every_node(cluster: Any) -> None:
    from . import limits_agent
    from .test_runner_limits import comparable, model_starts, run

    # The run without 429s first: it also warms the workers, so that when the 429 comes the
    # other trials are calling their models (and would go on doing so, were the pause not shared).
    reference = run(limits_agent.careful, executor="ray")
    store = InMemoryStore()
    on_ray = run(limits_agent.careful_429, store, executor="ray")
    assert len(on_ray["run"]["nodes"]) == 2
    run_id = on_ray["run"]["run_id"]
    starts = model_starts(store, run_id)
    for key in limits_agent.LIMITED:
        hit = store.list_attempts(run_id, key)[0].ended_at
        pause = (hit + 0.1, hit + limits_agent.RETRY_AFTER - 0.1)
        assert not [t for t in starts if pause[0] < t < pause[1]]  # no node called its model
    assert on_ray["run"]["rate_limit"]["hits"] == len(limits_agent.LIMITED)
    assert comparable(on_ray) == comparable(reference) == comparable(run(limits_agent.careful))


def test_the_cost_budget_holds_on_ray_and_a_larger_one_resumes(cluster: Any) -> None:
    from . import limits_agent
    from .test_runner_limits import priced, run, trial_costs

    full_store = InMemoryStore()
    full = run(limits_agent.careful, full_store, manifest=priced())
    costs = trial_costs(full_store, full["run"]["run_id"])
    store = InMemoryStore()
    budget = min(costs.values()) / 2  # spent by the first trial that finishes
    stopped = run(limits_agent.careful, store, manifest=priced(), max_cost=budget, executor="ray")
    slots = int(ray.cluster_resources()["CPU"] / 0.25)  # trials the cluster runs at once
    ran = [t["trial_key"] for t in stopped["trials"]]
    assert len(ran) == slots < len(costs)  # the first wave, and nothing submitted after it
    assert stopped["run"]["budget"] == {
        "max_cost": budget,
        "spent": pytest.approx(sum(costs[k] for k in ran)),
        "stopped": "budget_exhausted",
    }
    assert store.list_runs()[0].status == "interrupted"
    resumed = run(limits_agent.careful, store, manifest=priced(), max_cost=100.0, executor="ray")
    assert resumed["run"]["run_id"] == stopped["run"]["run_id"]
    assert resumed["run"].pop("budget")["spent"] == pytest.approx(sum(costs.values()))
    assert without_timings(resumed) == without_timings(full)


# ------------------------------------------------------------------------------------ memory
# EDM on Ray: the trials recall from the memory as it stood before the battery (a snapshot the
# driver ships with the plan), and the driver admits the run's episodes after the last trial, in
# trial order, exactly as the local executor does.
MEMORY_AGENT = "careful"
_PRECEDENT_ID = re.compile(r"Precedent (ep-[0-9a-f]+) ")
_FIXED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@contextmanager
def another_schema(admin_url: str) -> Iterator[str]:
    """A second new, empty PostgreSQL schema (the ``postgres_url`` fixture gives one)."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in admin_url else "?"
    try:
        yield f"{admin_url}{sep}options={urllib.parse.quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def seeded(db: str) -> None:
    """The memory before the battery: one local run's admitted episodes (at a fixed time)."""
    with open_store(db) as store, open_edm(db, clock=lambda: _FIXED) as edm:
        battery_run(
            store, careful, "hbeval_plain.examples:careful", 6, 1,
            agent_id=MEMORY_AGENT, run_id="before", memory=edm,
        )  # fmt: skip
        assert edm.count(MEMORY_AGENT) > 0


def battery_with_memory(db: str, **kw: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The battery under test on ``db`` with its EDM; the report and the admission records."""
    records: list[dict[str, Any]] = []
    with open_store(db) as store, open_edm(db) as edm:
        report = battery_run(
            store, slow_careful, "tests.runner.ray_agent:slow_careful", 6, 2,
            agent_id=MEMORY_AGENT, memory=edm, on_admission=lambda r: records.append(dict(r)),
            **kw,
        )  # fmt: skip
    return report, records


def recalled(db: str, run_id: str) -> dict[str, dict[str, Any]]:
    """Each trial's recall record, as its ``run_start`` event stored it."""
    with open_store(db) as store:
        return {
            t.trial_key: next(
                e for e in store.iter_events(run_id, t.trial_key) if isinstance(e, RunStart)
            ).attrs[ATTR_MEMORY_RECALL]
            for t in store.list_trials(run_id)
        }


def stored_episodes(db: str) -> list[dict[str, Any]]:
    with open_store(db), open_edm(db) as edm:
        return [
            {k: v for k, v in ep.as_dict().items() if k != "created_at"}
            for ep in edm.list_episodes(MEMORY_AGENT)
        ]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_memory_on_two_nodes_recalls_and_admits_as_the_local_run(
    cluster: Any, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with ExitStack() as stack:
        if backend == "sqlite":
            local_db, ray_db = str(tmp_path / "local.db"), str(tmp_path / "ray.db")
        else:
            local_db = request.getfixturevalue("postgres_url")
            ray_db = stack.enter_context(
                another_schema(request.getfixturevalue("postgres_admin_url"))
            )
        for db in (local_db, ray_db):
            seeded(db)
        before = stored_episodes(ray_db)
        assert before == stored_episodes(local_db)
        local, local_admissions = battery_with_memory(local_db, concurrency=3)
        on_ray, ray_admissions = battery_with_memory(ray_db, executor="ray")
        run_id = on_ray["run"]["run_id"]
        assert run_id == local["run"]["run_id"]

        # The same report (its trials' admission decisions included), trials on both nodes.
        assert without_timings(on_ray) == without_timings(local)
        cluster_nodes = {n["NodeID"][:12] for n in ray.nodes() if n["Alive"]}
        assert len(cluster_nodes) == 2
        assert {name.rsplit("/", 1)[1] for name in on_ray["run"]["nodes"]} == cluster_nodes
        # Admission: the driver's decisions, in trial order, are the local run's, and they
        # follow the admission rules applied by hand to the report's trials.
        assert ray_admissions == local_admissions
        keys = [t["trial_key"] for t in on_ray["trials"]]
        assert [r["trial_key"] for r in ray_admissions] == keys
        routes = {t["trial_key"]: expected_route(t) for t in on_ray["trials"]}
        assert {r["trial_key"]: r["route"] for r in ray_admissions} == routes
        admitted = [r["episode_id"] for r in ray_admissions if r["admitted"]]
        assert admitted and all(r["admitted"] == (routes[r["trial_key"]] is not None)
                                for r in ray_admissions)  # fmt: skip
        after = stored_episodes(ray_db)
        assert after == stored_episodes(local_db)
        assert len(after) == len(before) + len(admitted)
        assert {e["episode_id"] for e in after} - {e["episode_id"] for e in before} == set(admitted)

        # Recall on the workers: every trial was shown precedents, all from before the battery
        # (none from an earlier trial of the same run), exactly those the local trials saw.
        on_workers = recalled(ray_db, run_id)
        assert on_workers == recalled(local_db, run_id)
        earlier = {e["episode_id"] for e in before}
        assert len(on_workers) == 12
        for record in on_workers.values():
            assert record["agent_id"] == MEMORY_AGENT and record["error"] is None
            ids = [_PRECEDENT_ID.findall(p)[0] for p in record["precedents"]]
            assert ids and set(ids) <= earlier, ids


def test_cli_memory_on_ray_end_to_end(cluster: Any, tmp_path: Path) -> None:
    db = str(tmp_path / "hbeval.db")
    base = [
        "run", "tests.runner.ray_agent:slow_careful", "--tasks", "tests.runner.ray_agent:tasks",
        "--scenarios", "6", "--db", db, "--agent-id", MEMORY_AGENT, "--memory",
    ]  # fmt: skip
    cli = CliRunner()
    first = cli.invoke(battery_app, [*base, "--trials", "1"])  # local: fills the memory
    assert first.exit_code == 0, first.output
    before = {e["episode_id"] for e in stored_episodes(db)}
    assert before
    res = cli.invoke(
        battery_app,
        [*base, "--trials", "2", "--executor", "ray", "--ray-address", cluster.address, "--json"],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["run"]["executor"] == "ray" and len(report["run"]["nodes"]) == 2
    now = {e["episode_id"] for e in stored_episodes(db)}
    admitted = [t["memory"]["episode_id"] for t in report["trials"] if t["memory"]["admitted"]]
    assert admitted and now - before == set(admitted)
    line = next(x for x in res.stderr.splitlines() if x.strip().startswith("memory:"))
    assert line.strip().startswith(f"memory: {len(admitted)} admitted")
    for record in recalled(db, report["run"]["run_id"]).values():
        ids = [_PRECEDENT_ID.findall(p)[0] for p in record["precedents"]]
        assert ids and set(ids) <= before
