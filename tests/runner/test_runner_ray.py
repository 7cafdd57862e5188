"""Trials on a real two-node Ray cluster (one CPU each), writing to a real PostgreSQL server.

The cluster is started inside the test (``ray.cluster_utils.Cluster``). The battery on it must
give the local run's report (timings aside), with trials on both nodes; a worker node killed in
the middle of a battery and a driver killed in the middle of a run must lose and double nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hbeval_core.faults import Battery
from hbeval_core.runner.manifest import RunManifest
from hbeval_core.runner.run import run_battery
from hbeval_core.store import MemoryStore, PostgresStore, open_store

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
    )


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
    local = battery_run(MemoryStore(), slow_careful, ref, 18, 3)
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
        sys.executable, "-m", "hbeval_core.cli", "battery", "run",
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
    assert report is not None and report["run"]["trial_count"] == 18


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
    store = MemoryStore()
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

    full_store = MemoryStore()
    full = run(limits_agent.careful, full_store, manifest=priced())
    costs = trial_costs(full_store, full["run"]["run_id"])
    store = MemoryStore()
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
