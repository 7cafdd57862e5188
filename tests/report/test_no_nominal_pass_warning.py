"""A run where no fault-free trial passed warns that the verifier or the task is the likely
problem, on every surface, and changes no figure."""

from __future__ import annotations

import dataclasses
import io
import json
import textwrap
from pathlib import Path
from typing import Any

from rich.console import Console
from typer.testing import CliRunner

from hbeval import run_battery
from hbeval.cli import app
from hbeval.report.html import render_html
from hbeval.report.terminal import print_summary
from hbeval_plain.examples import careful, tasks

BATTERY = """
format: hbeval-battery-file/1
name: smoke
scenarios:
  - name: baseline
    mode: none
  - name: outage
    mode: error_5xx
    params: {http_status: 503}
    when: {attempts: [0]}
"""
TRIALS = 2


def _never(final_state: Any, trace: Any) -> bool:
    """A verifier that rejects every answer (an expected answer the task never produces)."""
    return False


def _run(tmp_path: Path, verify: Any | None) -> Any:
    battery = tmp_path / "smoke.yaml"
    battery.write_text(textwrap.dedent(BATTERY), encoding="utf-8")
    chosen = tasks[:2]
    if verify is not None:
        chosen = [dataclasses.replace(t, verify=verify) for t in chosen]
    return run_battery(
        careful, tasks=chosen, battery=str(battery), trials=TRIALS, db=tmp_path / "h.db"
    )


def test_a_verifier_that_rejects_everything_is_named_before_any_figure(tmp_path: Path) -> None:
    report = _run(tmp_path, _never)
    data = report.to_dict()
    nominal = [t for t in data["trials"] if t["fault_type"] == "none"]
    # A battery scenario runs one task: the baseline gives TRIALS fault-free trials.
    assert len(nominal) == TRIALS and not [t for t in nominal if t["outcome"] == "pass"]
    (warning,) = data["warnings"]
    assert warning.startswith(f"no nominal trial passed ({len(nominal)} of {len(nominal)} failed")
    assert "verifier or the task" in warning and "before reading FRR" in warning
    # A warning, not arithmetic: FRR is still the share of faulted trials that passed (0 here).
    faulted = [t for t in data["trials"] if t["verdict"]["faulted"]]
    assert data["metrics"]["frr"] == sum(t["outcome"] == "pass" for t in faulted) / len(faulted)

    out = io.StringIO()
    print_summary(report, Console(file=out, width=200))
    text = out.getvalue()
    assert text.index("warning: no nominal trial passed") < text.index("FRR")

    page = render_html({"run": report})
    assert 'class="warning"' in page and "no nominal trial passed" in page

    run_id = data["run_id"]
    proc = CliRunner().invoke(app, ["gate", run_id, "--db", str(tmp_path / "h.db")])
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("  warning: no nominal trial passed"), proc.stdout
    proc = CliRunner().invoke(app, ["gate", run_id, "--db", str(tmp_path / "h.db"), "--json"])
    assert json.loads(proc.stdout)["warnings"] == [warning]


def test_a_run_whose_nominal_trials_pass_carries_no_warning(tmp_path: Path) -> None:
    report = _run(tmp_path, None)
    data = report.to_dict()
    assert any(t["outcome"] == "pass" for t in data["trials"] if t["fault_type"] == "none")
    assert "warnings" not in data
    out = io.StringIO()
    print_summary(report, Console(file=out, width=200))
    assert "warning:" not in out.getvalue()
    assert 'class="warning"' not in render_html({"run": report})
