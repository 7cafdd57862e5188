"""``hbeval plan``: from stated assumptions, from a real battery run and from the tau-bench
recording, with every expected figure worked out here (pooled normal, one-way ANOVA ICC,
n · deff / m)."""

from __future__ import annotations

import json
import math
import os
import textwrap
from collections import defaultdict
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TAU = ROOT.parent / "shared" / "corpora" / "tau-bench" / "gpt-4o-airline.json"


def hb(*args: str) -> Any:
    from typer.testing import CliRunner

    from hbeval.cli import app

    return CliRunner().invoke(app, list(args))


def planned(*args: str) -> dict[str, Any]:
    proc = hb("plan", *args, "--json")
    assert proc.exit_code == 0, proc.stderr
    return json.loads(proc.stdout)


def n_independent(p1: float, p2: float, alpha: float = 0.05, power: float = 0.8) -> int:
    z_a, z_b = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)
    pbar = (p1 + p2) / 2
    top = z_a * math.sqrt(2 * pbar * (1 - pbar)) + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(top**2 / (p1 - p2) ** 2)


def icc1(groups: list[list[int]]) -> float:
    n = sum(len(g) for g in groups)
    k = len(groups)
    grand = sum(sum(g) for g in groups) / n
    msb = sum(len(g) * (sum(g) / len(g) - grand) ** 2 for g in groups) / (k - 1)
    msw = sum(sum((y - sum(g) / len(g)) ** 2 for y in g) for g in groups) / (n - k)
    k0 = (n - sum(len(g) ** 2 for g in groups) / n) / (k - 1)
    return (msb - msw) / (msb + (k0 - 1) * msw)


def test_stated_assumptions_give_the_141_trial_answer() -> None:
    plan = planned("--metric", "frr", "--drop", "0.10", "--rate", "0.95", "--icc", "0")
    assert plan["independent_trials"] == n_independent(0.95, 0.85) == 141
    assert plan["target_rate"] == pytest.approx(0.85)
    # 14 faulted scenarios (the default battery): ⌈141 / 14⌉ = 11 trials each.
    default = planned("--rate", "0.95", "--icc", "0", "--scenarios", "14")
    assert default["trials_per_scenario_needed"] == math.ceil(141 / 14) == 11
    assert default["more_trials_reach_power"] is True


def test_tau_bench_correlation_gives_about_86_scenarios() -> None:
    plan = planned("--rate", "0.95", "--drop", "0.10", "--icc", "0.41", "--trials", "3")
    deff = 1 + (3 - 1) * 0.41
    assert plan["design_effect"] == pytest.approx(deff) == pytest.approx(1.82)
    assert plan["scenarios_needed"] == math.ceil(141 * deff / 3) == 86
    assert plan["min_scenarios_any_trials"] == math.ceil(141 * 0.41)
    assert "pooled normal approximation without continuity correction" in plan["method"]


def test_the_text_says_when_trials_cannot_reach_the_power() -> None:
    proc = hb("plan", "--rate", "0.95", "--icc", "0.99", "--scenarios", "14", "--trials", "3")
    assert proc.exit_code == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "independent trials needed: 141 per run" in text
    assert "with 14 scenarios no number of trials reaches the power" in text
    assert f"{math.ceil(141 * 0.99)} scenarios are needed however many trials each gets" in text
    assert "pooled normal approximation without continuity correction" in text


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--icc", "0.2"], "--rate"),
        (["--rate", "0.95"], "--icc"),
        (["--rate", "0.95", "--icc", "0", "--drop", "1.2"], "--drop"),
        (["--rate", "0.95", "--icc", "0", "--alpha", "0"], "--alpha"),
        (["--rate", "0.95", "--icc", "0", "--metric", "pei"], "--metric"),
        (["--rate", "0.95", "--icc", "0", "--trials", "0"], "--trials"),
    ],
)
def test_bad_input_names_the_option(args: list[str], named: str) -> None:
    proc = hb("plan", *args)
    assert proc.exit_code == 2
    assert named in proc.stderr and "Traceback" not in proc.stderr


AGENT = """
from hbeval_plain import think, tool


@tool
def lookup(order_id: str) -> dict:
    return {"order_id": order_id, "status": "shipped"}


def agent(question: str) -> str:
    think("I need the order first", tool_calls=[("lookup", {"order_id": "A1"})])
    try:
        order = lookup(order_id="A1")
    except Exception as exc:
        think(f"The lookup failed ({exc}); one retry", tool_calls=[("lookup", {"order_id": "A1"})])
        try:
            order = lookup(order_id="A1")
        except Exception:
            return "I could not reach the order system; please try later"
    return f"A1 is {order.get('status') if isinstance(order, dict) else order}"
"""


def test_a_deterministic_agent_counts_each_scenario_once(tmp_path: Path) -> None:
    import hbeval
    from hbeval_core.contract import Task

    (tmp_path / "steady.py").write_text(textwrap.dedent(AGENT))
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        tasks = [
            Task(id="t1", question="where is A1", required=("shipped",)),
            Task(id="t2", question="status of A1", required=("shipped",)),
        ]
        hbeval.run_battery(
            "steady.py:agent", tasks=tasks, trials=3, db=tmp_path / "hb.db", run_id="steady"
        )
    finally:
        os.chdir(here)
    db = str(tmp_path / "hb.db")
    shown = hb("report", "steady", "--db", db, "--json")
    report = next(iter(json.loads(shown.stdout)["reports"].values()))["report"]
    groups: dict[int, list[int]] = defaultdict(list)
    for t in report["trials"]:
        if t["verdict"] and t["verdict"]["faulted"] and t["outcome"] in ("pass", "fail"):
            groups[t["scenario_index"]].append(int(t["outcome"] == "pass"))
    outcomes = [v for g in groups.values() for v in g]
    assert 0 < sum(outcomes) < len(outcomes)  # some faults handled, some not
    assert all(len(set(g)) == 1 for g in groups.values())  # each scenario the same 3 times
    plan = planned("steady", "--db", db, "--drop", "0.10")
    assert plan["baseline"] == "steady"
    assert plan["rate"] == pytest.approx(sum(outcomes) / len(outcomes))
    assert plan["icc"] == pytest.approx(icc1(list(groups.values()))) == pytest.approx(1.0)
    assert plan["scenarios"] == len(groups)
    assert plan["more_trials_reach_power"] is False
    # From FRR 0.95 at this correlation each scenario counts once: 141 scenarios.
    at_095 = planned("steady", "--db", db, "--rate", "0.95", "--drop", "0.10")
    assert at_095["scenarios_needed"] == 141 and at_095["min_scenarios_any_trials"] == 141


@pytest.mark.skipif(not TAU.is_file(), reason=f"recording {TAU} is absent")
def test_tau_bench_baseline_within_task_correlation(tmp_path: Path) -> None:
    db = str(tmp_path / "hb.db")
    assert hb("import", "tau-bench", str(TAU), "--db", db, "--run-id", "tau").exit_code == 0
    by_task: dict[str, list[int]] = defaultdict(list)
    for record in json.loads(TAU.read_text(encoding="utf-8")):
        by_task[str(record["task_id"])].append(int(record["reward"] == 1.0))
    rho = icc1(list(by_task.values()))
    assert round(rho, 2) == 0.40  # the 0.41 is this, rounded up from 0.4046
    plan = planned("tau", "--db", db, "--metric", "pass_rate", "--drop", "0.10")
    assert plan["icc"] == pytest.approx(rho)
    assert plan["rate"] == pytest.approx(84 / 200)
    n = n_independent(0.42, 0.32)
    assert plan["independent_trials"] == n
    assert plan["trials_per_scenario"] == 4 and plan["scenarios"] == 50
    assert plan["scenarios_needed"] == math.ceil(n * (1 + 3 * rho) / 4)
    # And from FRR 0.95 at three trials a task at this correlation: about 86 scenarios.
    at_095 = planned("tau", "--db", db, "--metric", "pass_rate", "--rate", "0.95", "--trials", "3")
    assert at_095["scenarios_needed"] == math.ceil(141 * (1 + 2 * rho) / 3) == 86
