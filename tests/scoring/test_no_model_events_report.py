"""A plain agent with faultable tools and no ``think()``: TI is undefined on every surface.

The agent's tool is a real ``@tool`` (faults reach it), but it records no model turn, so no tool
call can be traced to a model reply: TI is undefined with reason ``no_model_events`` (hb-derive/3),
never 0.0 and never a breach. A real ``hbeval battery run`` writes the report; the trial verdicts,
the report, the terminal summary, the HTML page, ``hbeval gate`` and the signed passport must all
say so.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.report.html import render_html
from hbeval.scoring._report_model import validate_report

runner = CliRunner()

NO_THINK_AGENT = textwrap.dedent(
    '''
    """A plain agent whose tool is faultable but which never records a model turn."""
    from hbeval_core.contract import Task
    from hbeval_plain import ToolCallError, tool


    @tool
    def lookup_order(order_id):
        return {"order_id": order_id, "status": "shipped"}


    def make_agent():
        def agent(question):
            try:
                info = lookup_order(order_id="A100")
            except ToolCallError as exc:
                return f"Sorry, the order lookup failed ({exc})."
            return f"Order {info['order_id']} is {info['status']}."

        return agent


    tasks = [
        Task(
            id="status",
            question="Where is order A100?",
            verify=lambda state, trace: "shipped" in str(state),
        )
    ]
    '''
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("no_model_events")
    agent = tmp / "no_think_agent.py"
    agent.write_text(NO_THINK_AGENT, encoding="utf-8")
    out = tmp / "report.json"
    res = runner.invoke(
        app,
        [
            "battery",
            "run",
            f"{agent}:make_agent",
            "--db",
            str(tmp / "runs.db"),
            "--out",
            str(out),
            "--trials",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    return {"tmp": tmp, "path": out, "report": json.loads(out.read_text(encoding="utf-8"))}


def test_trials_have_steps_and_ti_undefined(run: dict[str, Any]) -> None:
    trials = run["report"]["trials"]
    assert trials
    with_calls = [t for t in trials if t["verdict"]["links"]["calls"]]
    assert with_calls, "the faultable tool ran"
    for t in with_calls:
        v = t["verdict"]
        assert v["derive_version"] == "hb-derive/3"
        assert v["links"]["none"] == v["links"]["calls"]  # no reply issued any call
        assert v["metrics"]["ti"] is None
        assert v["metrics_undefined"]["ti"] == "no_model_events"
        assert v["metrics"]["pei"] is not None  # the other live figures are still measured


def test_report_ti_is_undefined_with_its_reason(run: dict[str, Any]) -> None:
    report = run["report"]
    assert report["versions"]["derive"] == "hb-derive/3"
    assert report["metrics"]["ti"] is None
    assert report["undefined"]["ti"] == "no_model_events"
    trace = report["traceability"]
    assert trace["explained_share"] is None
    assert trace["undefined"]["explained_share"] == "no_model_events"
    assert "recorded tool calls but no model event" in trace["note"]
    # Not a breach: the TI floor could not be checked (other floors decide the verdict).
    assert "ti" in report["unmeasured_metrics"]
    assert not any("TI" in r and "below its floor" in r for r in report["verdict_reasons"])
    assert any("TI undefined (no_model_events)" in r for r in report["verdict_reasons"])
    assert "think()" in report["verdict_fix"]


def test_terminal_shows_undefined_with_the_reason(run: dict[str, Any]) -> None:
    shown = runner.invoke(app, ["report", str(run["path"])])
    assert shown.exit_code == 0, shown.output
    ti_rows = [line for line in shown.stdout.splitlines() if re.search(r"\bTI\b", line)]
    assert any("undefined (no_model_events)" in line for line in ti_rows), shown.stdout
    assert not any(re.search(r"\bTI\b.*\b0\.00\b", line) for line in ti_rows), ti_rows


def test_html_shows_undefined_with_the_reason(run: dict[str, Any]) -> None:
    page = render_html({"r": validate_report(run["report"])})
    assert 'data-reason="no_model_events"' in page
    assert "no model call was recorded, so traceability cannot be observed" in page


def test_gate_exits_insufficient_data_naming_ti_and_the_fix(run: dict[str, Any]) -> None:
    # PEI (the one defined floored metric, low here) is left out: nothing then fails, and the
    # undefined TI makes the gate insufficient data, not a failure.
    gate = runner.invoke(app, ["gate", str(run["path"]), "--json", "--floor", "pei=off"])
    assert gate.exit_code == 3, gate.output
    doc = json.loads(gate.stdout)
    (ti,) = [c for c in doc["checks"] if c["metric"] == "ti"]
    assert ti["passed"] is None and ti["value"] is None
    assert ti["undefined"] == {"value": "no_model_events"}
    (fix,) = [r for r in doc["reasons"] if r.startswith("fix: ")]
    assert "think()" in fix and "--floor ti=off" in fix


def test_passport_carries_ti_undefined_with_the_reason(run: dict[str, Any]) -> None:
    tmp = run["tmp"]
    key, out = tmp / "key.pem", tmp / "passport.json"
    assert runner.invoke(app, ["passport", "keygen", "--out", str(key)]).exit_code == 0
    signed = runner.invoke(
        app, ["passport", "sign", str(run["path"]), "--key", str(key), "--out", str(out)]
    )
    assert signed.exit_code == 0, signed.output
    passport = json.loads(out.read_text(encoding="utf-8"))
    assert passport["metrics"]["ti"] is None
    assert passport["undefined"]["ti"] == "no_model_events"
    assert "ti" in passport["unmeasured_metrics"]
    assert not any("TI" in r and "below its floor" in r for r in passport["verdict_reasons"])
    verified = runner.invoke(app, ["passport", "verify", str(out), "--key", f"{key}.pub"])
    assert verified.exit_code == 0, verified.output
