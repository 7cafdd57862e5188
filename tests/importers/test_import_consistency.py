"""Consistency over repeated trials on a real recording (tau-bench gpt-4o airline, 4 trials a
task) and on a battery run: C_out, flip rate, C_traj_d, C_traj_s and pass^k beside them.

The expected figures are computed here from the raw corpus JSON (reward and the assistant
messages' tool calls), with formulas written out below, never through hbeval's code; the
published values of the figures (0.560, 0.881, 0.714 over 24 tasks, flip rate 0.52) are checked
against that computation too.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT.parent / "shared" / "corpora"
TAU = CORPORA / "tau-bench" / "gpt-4o-airline.json"
PI = CORPORA / "pi" / "large-session.jsonl"


def hb(*args: str) -> Any:
    from typer.testing import CliRunner

    from hbeval.cli import app

    return CliRunner().invoke(app, list(args))


# --------------------------------------------------------------------------- by hand
def _tool_names(record: dict[str, Any]) -> list[str]:
    return [
        call["function"]["name"]
        for message in record["traj"]
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    ]


def _jsd2(a: list[str], b: list[str]) -> float:
    ca, cb = Counter(a), Counter(b)
    keys = set(ca) | set(cb)
    p = {k: ca[k] / len(a) for k in keys}
    q = {k: cb[k] / len(b) for k in keys}
    m = {k: (p[k] + q[k]) / 2 for k in keys}
    kl_p = sum(p[k] * math.log2(p[k] / m[k]) for k in keys if p[k])
    kl_q = sum(q[k] * math.log2(q[k] / m[k]) for k in keys if q[k])
    return (kl_p + kl_q) / 2


def _edit(a: list[str], b: list[str]) -> int:
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(
                table[i - 1][j] + 1,
                table[i][j - 1] + 1,
                table[i - 1][j - 1] + (a[i - 1] != b[j - 1]),
            )
    return table[len(a)][len(b)]


def by_hand(tasks: dict[str, list[tuple[bool, list[str]]]]) -> dict[str, float | int]:
    """The four figures and pass^k at k = trials per task, from (passed, tool names) pairs."""
    c_out = [(2 * sum(p for p, _ in v) / len(v) - 1) ** 2 for v in tasks.values()]
    mixed = [0 < sum(p for p, _ in v) < len(v) for v in tasks.values()]
    k = max(len(v) for v in tasks.values())
    hat = [math.comb(sum(p for p, _ in v), k) / math.comb(len(v), k) for v in tasks.values()]
    d_values, s_values = [], []
    for v in tasks.values():
        wins = [names for passed, names in v if passed]
        if len(wins) < 2:
            continue
        pairs = list(itertools.combinations(wins, 2))
        s_values.append(
            sum(1 - _edit(a, b) / max(len(a), len(b), 1) for a, b in pairs) / len(pairs)
        )
        # A success without any tool call has no frequency distribution: left out.
        with_calls = [w for w in wins if w]
        dpairs = list(itertools.combinations(with_calls, 2))
        if dpairs:
            d_values.append(1 - sum(_jsd2(a, b) for a, b in dpairs) / len(dpairs))
    return {
        "c_out": sum(c_out) / len(c_out),
        "flip_rate": sum(mixed) / len(mixed),
        "pass_hat_k": sum(hat) / len(hat),
        "k": k,
        "c_traj_d": sum(d_values) / len(d_values),
        "c_traj_s": sum(s_values) / len(s_values),
        "traj_d_tasks": len(d_values),
        "traj_s_tasks": len(s_values),
    }


# --------------------------------------------------------------------------- tau-bench
needs_corpora = pytest.mark.skipif(
    not TAU.is_file(), reason=f"recording {TAU} is absent (the shared corpora are not checked out)"
)


@pytest.fixture(scope="module")
def tau(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    db = tmp_path_factory.mktemp("tau") / "hb.db"
    proc = hb("import", "tau-bench", str(TAU), "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]
    shown = hb("report", run_id, "--db", str(db), "--json")
    assert shown.exit_code == 0, shown.stderr
    report = next(iter(json.loads(shown.stdout)["reports"].values()))["report"]
    return db, report


@needs_corpora
def test_tau_bench_consistency_matches_the_raw_corpus(tau: tuple[Path, dict[str, Any]]) -> None:
    records = json.loads(TAU.read_text(encoding="utf-8"))
    tasks: dict[str, list[tuple[bool, list[str]]]] = defaultdict(list)
    for record in records:
        tasks[str(record["task_id"])].append((record["reward"] == 1.0, _tool_names(record)))
    expected = by_hand(tasks)
    # The published figures, from the same raw file.
    assert round(expected["c_out"], 3) == 0.560
    assert round(expected["c_traj_d"], 3) == 0.881
    assert round(expected["c_traj_s"], 3) == 0.714
    assert expected["traj_s_tasks"] == expected["traj_d_tasks"] == 24
    assert expected["flip_rate"] == pytest.approx(0.52)
    assert round(expected["pass_hat_k"], 3) == 0.200  # the corpus README's pass^4

    block = tau[1]["consistency"]
    for name in ("c_out", "flip_rate", "c_traj_d", "c_traj_s", "pass_hat_k"):
        assert block[name] == pytest.approx(expected[name], abs=1e-12), name
    assert block["k"] == 4
    assert block["scenarios"] == block["scenarios_repeated"] == 50
    assert block["scenarios_traj_d"] == block["scenarios_traj_s"] == 24
    assert block["undefined"] == {}


@needs_corpora
def test_tau_bench_consistency_is_shown_in_terminal_and_html(
    tau: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db, report = tau
    page = tmp_path / "r.html"
    proc = hb("report", str(report["run_id"]), "--db", str(db), "--html", str(page))
    assert proc.exit_code == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "C_out (outcomes) │ 0.560" in text
    assert "flip rate │ 0.520 │ │ pass^4 0.200" in text
    assert "C_traj_d (tool mix) │ 0.881" in text
    assert "C_traj_s (tool order) │ 0.714" in text
    html = page.read_text(encoding="utf-8")
    assert "outcome consistency C_out 0.56 over 50 scenarios" in html
    assert "52% of them flipped between pass and fail (pass^4 0.20)" in html
    assert "C_traj_d 0.88 (tool mix, 24 scenarios), C_traj_s 0.71 (tool order" in html


@pytest.mark.skipif(not PI.is_file(), reason=f"recording {PI} is absent")
def test_a_recording_without_success_labels_has_no_consistency_figures(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    proc = hb("import", "pi", str(PI), "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]
    shown = hb("report", run_id, "--db", str(db), "--json")
    block = next(iter(json.loads(shown.stdout)["reports"].values()))["report"]["consistency"]
    for name in ("c_out", "flip_rate", "c_traj_d", "c_traj_s", "pass_hat_k"):
        assert block[name] is None
        assert block["undefined"][name] == "no_success_label"


# --------------------------------------------------------------------------- battery run
def _battery(tmp_path: Path, trials: int) -> tuple[Any, Any]:
    import hbeval
    from hbeval.store import open_store
    from hbeval_core.contract import Task
    from hbeval_plain import tool

    @tool
    def lookup(order_id: str) -> dict[str, str]:
        return {"order_id": order_id, "status": "shipped"}

    @tool
    def history(order_id: str) -> list[str]:
        return ["placed", "shipped"]

    counter = itertools.count()

    def agent(question: str) -> str:
        # Varies from trial to trial: a second tool every other call, a wrong answer every third.
        n = next(counter)
        lookup(order_id="A1")
        if n % 2:
            history(order_id="A1")
        return "A1 is shipped" if n % 3 else "I do not know"

    tasks = [
        Task(id="t1", question="where is A1", required=("shipped",)),
        Task(id="t2", question="status of A1", required=("shipped",)),
    ]
    store = open_store(tmp_path / "hb.db")
    report = hbeval.run_battery(
        agent, tasks=tasks, trials=trials, scenarios=6, store=store, concurrency=1
    )
    return report, store


def test_battery_run_consistency_follows_its_trials(tmp_path: Path) -> None:
    report, store = _battery(tmp_path, trials=3)
    # Outcomes from the report's trials; tool names straight from the stored events.
    scenarios: dict[str, list[tuple[bool, list[str]]]] = defaultdict(list)
    for entry in report.trials:
        names = [
            e.tool
            for e in store.iter_events(report.run_id, entry.trial_key)
            if e.kind == "tool_start"
        ]
        scenarios[str(entry.scenario_index)].append((entry.outcome == "pass", names))
    expected = by_hand(scenarios)
    block = report.consistency
    assert block is not None
    assert 0 < expected["flip_rate"] < 1  # the agent really is noisy across trials
    assert block.c_out == pytest.approx(expected["c_out"])
    assert block.flip_rate == pytest.approx(expected["flip_rate"])
    assert block.pass_hat_k == pytest.approx(expected["pass_hat_k"])
    assert block.c_traj_d == pytest.approx(expected["c_traj_d"])
    assert block.c_traj_s == pytest.approx(expected["c_traj_s"])
    assert block.k == 3 and block.scenarios == 6
    stored = store.get_report(report.run_id)
    assert stored is not None and stored.consistency == block
    store.close()


def test_one_trial_per_scenario_leaves_consistency_undefined(tmp_path: Path) -> None:
    from rich.console import Console

    from hbeval.report.terminal import summary_table

    report, store = _battery(tmp_path, trials=1)
    store.close()
    block = report.consistency
    assert block is not None
    assert block.c_out is None and block.flip_rate is None
    assert block.undefined["c_out"] == block.undefined["flip_rate"] == "single_trial"
    assert block.undefined["c_traj_s"] == "no_repeated_success"
    console = Console(width=200, record=True)
    console.print(summary_table(report))
    assert "undefined (single_trial)" in console.export_text()
