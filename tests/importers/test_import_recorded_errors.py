"""A recording's own tool errors are not injected faults (tau-bench gpt-4o airline).

Expected figures are counted here from the raw corpus: a trial "met an error" when one of its
tool messages starts with ``Error: `` (the corpus README's rule); it recovered when its reward
is 1.0.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TAU = ROOT.parent / "shared" / "corpora" / "tau-bench" / "gpt-4o-airline.json"

pytestmark = pytest.mark.skipif(not TAU.is_file(), reason=f"recording {TAU} is absent")


def hb(*args: str) -> Any:
    from typer.testing import CliRunner

    from hbeval.cli import app

    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def tau(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    db = str(tmp_path_factory.mktemp("tau") / "hb.db")
    assert hb("import", "tau-bench", str(TAU), "--db", db, "--run-id", "tau").exit_code == 0
    shown = hb("report", "tau", "--db", db, "--json")
    return db, next(iter(json.loads(shown.stdout)["reports"].values()))["report"]


def _errored(record: dict[str, Any]) -> list[str]:
    return [
        m["content"]
        for m in record["traj"]
        if m.get("role") == "tool" and str(m.get("content", "")).startswith("Error: ")
    ]


def test_recorded_errors_are_apart_from_fault_handling(tau: tuple[str, dict[str, Any]]) -> None:
    report = tau[1]
    records = json.loads(TAU.read_text(encoding="utf-8"))
    errored = [r for r in records if _errored(r)]
    recovered = sum(1 for r in errored if r["reward"] == 1.0)
    assert (len(errored), recovered) == (36, 9)
    for name in ("frr", "irs"):
        assert report["metrics"][name] is None
    assert report["undefined"]["frr"] == "no_injected_fault"
    gap = report["reliability_gap"]
    assert gap["r_op"] is None and gap["undefined"]["r_op"] == "no_injected_fault"
    block = report["recorded_errors"]
    assert block["injected"] is False
    assert (block["trials"], block["recovered"]) == (36, 9)
    assert block["rate"] == pytest.approx(0.25)
    messages = Counter(text.splitlines()[0] for r in records for text in _errored(r))
    assert sum(m["count"] for m in block["messages"]) <= sum(messages.values())
    top = block["messages"][0]
    assert top["count"] == max(messages.values())
    assert top["message"] == messages.most_common(1)[0][0][:160]


def test_no_fault_floor_is_cited_and_the_gate_decides_on_the_rest(
    tau: tuple[str, dict[str, Any]],
) -> None:
    db, report = tau
    assert report["verdict"] != "UNSAFE"
    assert not any("frr" in r.lower() or "irs" in r.lower() for r in report["verdict_reasons"])
    assert "Fault floors do not apply" in report["summary"]
    gate = hb("gate", "tau", "--db", db, "--skip-security")
    assert gate.exit_code == 0, gate.stdout
    assert "fault floors (frr, irs) do not apply: no fault was injected" in gate.stdout
    # Without --skip-security the security gate alone is unmeasured (exit 3), not the floors.
    plain = hb("gate", "tau", "--db", db, "--json")
    assert plain.exit_code == 3
    assert json.loads(plain.stdout)["unmeasured"] == ["security"]


def test_scenario_labels_follow_all_of_their_trials(tau: tuple[str, dict[str, Any]]) -> None:
    report = tau[1]
    records = json.loads(TAU.read_text(encoding="utf-8"))
    tasks_with_errors = {str(r["task_id"]) for r in records if _errored(r)}
    by_scenario: dict[int, set[str]] = defaultdict(set)
    for t in report["trials"]:
        by_scenario[t["scenario_index"]].add(str(t["task_id"]))
    for sc in report["scenarios"]:
        (task,) = by_scenario[sc["scenario_index"]]
        assert sc["is_nominal"] is (task not in tasks_with_errors), task


def test_the_terminal_names_recorded_error_recovery(tau: tuple[str, dict[str, Any]]) -> None:
    proc = hb("report", "tau", "--db", tau[0])
    text = " ".join(proc.stdout.split())
    assert "recorded-error recovery │ 0.250" in text
    assert "FRR │ undefined (no_injected_fault)" in text
    assert "BELOW" not in text
    # No fault floor is shown where nothing was injected, and the errors are called recorded.
    frr_row = next(line for line in proc.stdout.splitlines() if "│ FRR " in line)
    assert "≥ 0.65" not in frr_row and "no floor: nothing was injected" in frr_row
    delivered = next(line for line in proc.stdout.splitlines() if "faults delivered" in line)
    assert "trials with a recorded error" in delivered and "faulted trials" not in delivered
