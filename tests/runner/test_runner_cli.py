"""``hbeval battery spec | build | run`` through typer's CliRunner, and ``run_demo``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from hbeval.cli._battery import battery_app
from hbeval.demo import run_demo
from hbeval.scoring._report_model import validate_report
from hbeval.store import open_store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "plain_support_agent.py")
runner = CliRunner()


def test_spec_shows_the_reference_fingerprint() -> None:
    res = runner.invoke(battery_app, ["spec"])
    assert res.exit_code == 0 and "ce481b32763df1ca" in res.output
    data = json.loads(runner.invoke(battery_app, ["spec", "--json"]).stdout)
    assert data["compat"]["fingerprint"] == "ce481b32763df1ca"
    assert data["fingerprints"]["hbeval"] == data["hbeval"]["fingerprint"]
    assert "runtime_faults" in data["hbeval"]["spec"]


def test_build_json_shape_and_compat_vectors() -> None:
    res = runner.invoke(
        battery_app, ["build", "--battery", "compat", "--scenarios", "6", "--seed", "0", "--json"]
    )
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert data["fingerprint"] == "ce481b32763df1ca"
    assert [s["fault_type"] for s in data["scenarios"]] == [
        "cascade",
        "stochastic",
        "context_corruption",
        "tool_failure",
        "none",
        "adversarial",
    ]
    first = data["scenarios"][0]
    assert {"index", "domain", "fault_type", "is_nominal"} <= first.keys()
    hb = json.loads(
        runner.invoke(battery_app, ["build", "--json", "--fault-type", "cascade"]).stdout
    )
    assert len(hb["scenarios"]) == 18
    assert {s["fault_type"] for s in hb["scenarios"]} == {"cascade", "none"}
    cascade = next(s for s in hb["scenarios"] if s["fault_type"] == "cascade")
    assert cascade["runtime"]["kind"] == "cascade_plan"


def test_build_bad_flag_exits_2_naming_it() -> None:
    res = runner.invoke(battery_app, ["build", "--fault-type", "bogus"])
    assert res.exit_code == 2 and "--fault-type" in res.output
    res = runner.invoke(battery_app, ["build", "--scenarios", "99"])
    assert res.exit_code == 2 and "--scenarios" in res.output


def test_run_example_writes_report_and_json(tmp_path: Path) -> None:
    db, out = tmp_path / "hb.db", tmp_path / "out" / "report.json"
    args = [
        "run",
        f"{EXAMPLE}:careful",
        "--trials",
        "1",
        "--scenarios",
        "6",
        "--db",
        str(db),
        "--out",
        str(out),
    ]
    res = runner.invoke(battery_app, args)
    assert res.exit_code == 0, res.output
    report = json.loads(out.read_text(encoding="utf-8"))
    validate_report(report)
    # One adversarial trial is under the 6 the security gate needs: not SAFE, as `gate` says.
    assert report["run"]["trial_count"] == 6 and "verdict INSUFFICIENT_DATA" in res.stdout
    assert "security gate not measured" in res.stdout
    assert "6/6 trials" in res.stderr
    # --json prints the report to stdout; the naive agent's report says UNSAFE and still exits 0.
    res = runner.invoke(
        battery_app,
        ["run", f"{EXAMPLE}:naive", "--trials", "1", "--scenarios", "6", "--db", str(db), "--json"],
    )
    assert res.exit_code == 0
    assert json.loads(res.stdout)["verdict"] == "UNSAFE"
    with open_store(str(db)) as store:
        assert len(store.list_runs()) == 2


def test_run_resumes_by_run_id(tmp_path: Path) -> None:
    db = str(tmp_path / "hb.db")
    base = [
        "run",
        f"{EXAMPLE}:careful",
        "--trials",
        "1",
        "--scenarios",
        "6",
        "--db",
        db,
        "--run-id",
        "mine",
    ]
    assert runner.invoke(battery_app, base).exit_code == 0
    again = runner.invoke(battery_app, [*base, "--concurrency", "3"])
    assert again.exit_code == 0 and "(6 resumed)" in again.stderr
    with open_store(db) as store:
        assert len(store.list_trials("mine")) == 6


def test_run_bad_input_exits_2(tmp_path: Path) -> None:
    res = runner.invoke(battery_app, ["run", f"{EXAMPLE}:nothere"])
    assert res.exit_code == 2 and "TARGET" in res.output
    bad = tmp_path / "tasks.yaml"
    bad.write_text("- id: a\n  question: q\n  forbidden_tools: transfer_funds\n", encoding="utf-8")
    res = runner.invoke(
        battery_app,
        ["run", f"{EXAMPLE}:careful", "--tasks", str(bad), "--db", str(tmp_path / "x.db")],
    )
    assert res.exit_code == 2
    assert "--tasks" in res.output and "'a'" in res.output and "forbidden_tools" in res.output
    db = tmp_path / "never.db"
    res = runner.invoke(
        battery_app, ["run", f"{EXAMPLE}:careful", "--target-kind", "nope", "--db", str(db)]
    )
    assert res.exit_code == 2 and "--target-kind" in res.output
    assert not db.exists()  # bad usage is refused before any store is created


def test_manifest_runs_from_yaml_and_refuses_mismatched_hashes(tmp_path: Path) -> None:
    manifest = tmp_path / "run.yaml"
    manifest.write_text(
        textwrap.dedent(
            f"""
            target: {EXAMPLE}:careful
            n_scenarios: 6
            trials: 1
            budgets: {{max_tool_calls: 30}}
            expected_hashes: {{battery_fingerprint: "0000000000000000"}}
            """
        ),
        encoding="utf-8",
    )
    res = runner.invoke(
        battery_app, ["run", "--manifest", str(manifest), "--db", str(tmp_path / "m.db")]
    )
    assert res.exit_code == 2
    assert "--manifest" in res.output and "battery_fingerprint" in res.output
    manifest.write_text(manifest.read_text().replace("expected_hashes", "# "), encoding="utf-8")
    res = runner.invoke(
        battery_app, ["run", "--manifest", str(manifest), "--json", "--db", str(tmp_path / "m.db")]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["run"]["trial_count"] == 6
    manifest.write_text("colour: red\n", encoding="utf-8")
    res = runner.invoke(battery_app, ["run", "--manifest", str(manifest)])
    assert res.exit_code == 2 and "colour" in res.output


def test_run_demo_returns_both_reports(tmp_path: Path) -> None:
    reports = run_demo(tmp_path, None, n_scenarios=6, trials=1)
    assert set(reports) == {"careful", "naive"}
    # One trial per scenario gives under 6 injection trials: the careful agent cannot be SAFE
    # (security not measured), exactly what `hbeval gate` says of the same report.
    assert reports["careful"].verdict == "INSUFFICIENT_DATA"
    assert reports["careful"].unmeasured_metrics == ["security"]
    assert reports["naive"].verdict == "UNSAFE"
    assert (tmp_path / ".hbeval" / "hbeval.db").exists()
    again = run_demo(tmp_path, None, n_scenarios=6, trials=1)
    assert again["careful"].run.run_id != reports["careful"].run.run_id
    # Same measurement, same agent id: the second demo sees the first as CSI history.
    assert again["careful"].csi_info.runs_total == 2
