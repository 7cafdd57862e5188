"""``--perturb context`` and ``perturb: [context]``: asked for, checked, run and shown apart."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.report.html import render_html
from hbeval.report.terminal import print_summary
from hbeval.scoring._report_model import read_report
from hbeval_core.faults.compat import FAULT_CONTEXTS, FAULT_TYPES
from hbeval_core.faults.userbattery import load_battery_file
from tests.faults.test_battery_file import AGENT, SMALL

runner = CliRunner()


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_build_lists_the_perturbation_scenarios(tmp_path: Path) -> None:
    res = runner.invoke(app, ["battery", "build", "--perturb", "context", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["n_scenarios"] == 24 and data["perturb"] == ["context"]
    extra = data["scenarios"][18:]
    assert [s["question_suffix"] for s in extra] == [FAULT_CONTEXTS[t] for t in FAULT_TYPES]
    assert all(s["runtime"] is None and s["perturbation"] == "context" for s in extra)
    plain = json.loads(runner.invoke(app, ["battery", "build", "--json"]).output)
    assert "perturb" not in plain and plain["n_scenarios"] == 18
    assert plain["fingerprint"] != data["fingerprint"]


def test_bad_requests_exit_2_naming_the_flag(tmp_path: Path) -> None:
    res = runner.invoke(app, ["battery", "build", "--perturb", "typos"])
    assert res.exit_code == 2
    assert "--perturb: unknown perturbation family 'typos'; valid: context" in res.output
    res = runner.invoke(app, ["battery", "build", "--battery", "compat", "--perturb", "context"])
    assert res.exit_code == 2 and "compat battery appends the context sentences" in res.output
    small = _write(tmp_path, "small.yaml", SMALL)
    res = runner.invoke(app, ["battery", "build", "--battery", str(small), "--perturb", "context"])
    assert res.exit_code == 2 and "add 'perturb: [context]' to the file" in res.output
    bad = _write(tmp_path, "bad.yaml", SMALL.replace("name: small", "name: small\nperturb: yes"))
    res = runner.invoke(app, ["battery", "build", "--battery", str(bad)])
    assert res.exit_code == 2 and "battery.perturb: must be a list of families" in res.output


def test_a_battery_file_asks_for_the_family(tmp_path: Path) -> None:
    text = SMALL.replace("name: small", "name: small\nperturb: [context]")
    battery = load_battery_file(_write(tmp_path, "p.yaml", text), seed=42)
    plain = load_battery_file(_write(tmp_path, "s.yaml", SMALL), seed=42)
    assert len(battery) == 2 + 6 and battery.perturb == ("context",)
    assert battery.fault_types == plain.fault_types == ("none", "outage")
    assert battery.scenarios[:2] == plain.scenarios
    assert battery.spec()["scenarios"] == plain.spec()["scenarios"]
    assert battery.spec_fingerprint() != plain.spec_fingerprint()
    assert [s.index for s in battery.scenarios[2:]] == list(range(2, 8))
    assert battery.scenarios[2].question("Q") == "Q" + FAULT_CONTEXTS["tool_failure"]


def test_run_reports_the_family_apart_in_json_terminal_and_html(tmp_path: Path) -> None:
    (tmp_path / "inv_agent.py").write_text(AGENT, encoding="utf-8")
    battery = _write(
        tmp_path, "p.yaml", SMALL.replace("name: small", "name: small\nperturb: [context]")
    )
    out = tmp_path / "r.json"
    res = runner.invoke(
        app,
        [
            "battery",
            "run",
            f"{tmp_path / 'inv_agent.py'}:make_agent",
            "--battery",
            str(battery),
            "--trials",
            "2",
            "--db",
            str(tmp_path / "hb.db"),
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "prompt perturbations (not fault handling; no fault injected):" in res.output
    report = json.loads(out.read_text(encoding="utf-8"))
    marked = [t for t in report["trials"] if t.get("perturbation") == "context"]
    assert len(marked) == 12 and len(report["trials"]) == 16
    # The agent echoes its question: each perturbed trial's answer carries its sentence, so
    # the sentence reached the agent; it answers anyway ("can ship"), so every one passes.
    family = report["perturbations"]["families"]["context"]
    assert (family["trials"], family["passed"]) == (12, 12)
    assert family["nominal_trials"] == 2 and family["nominal_pass_rate"] == 1.0
    assert family["change"] == 0.0
    assert (family["paired_trials"], family["tasks_without_nominal"]) == (12, [])
    assert {k: (v["trials"], v["passed"]) for k, v in family["by_context"].items()} == {
        t: (2, 2) for t in FAULT_TYPES
    }
    assert set(report["breakdowns"]["fault_type"]) == {"none", "outage"}
    assert report["scenario_count"] == 2
    typed = read_report(report)
    html = render_html({"agent": typed})
    assert "<h3>Prompt perturbations</h3>" in html
    from rich.console import Console

    console = Console(record=True, width=200)
    print_summary(typed, console)
    text = console.export_text()
    assert "prompt perturbations (not fault handling; no fault injected):" in text
    assert "context: passed 12/12, pass rate 1.000" in text
