"""A battery that measured nothing says so: delivery per scenario and per fault type.

The agent below is what a new user writes first: a plain callable whose tool is an ordinary
function, so no fault can reach it. Its battery must end INSUFFICIENT_DATA (``battery run``
still exits 0, ``gate`` exits 3), every fault figure undefined with ``no_fault_delivered`` and
a fix that names the faultable boundary, a warning on stderr, "not measured" in the terminal,
the JSON and the HTML, and ``compare`` must refuse the fault-dependent figures.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.report.compare import compare_reports
from hbeval.report.html import render_html
from hbeval.scoring import build_report, delivery_warning
from hbeval.scoring._report_model import validate_report
from tests.scoring.test_scoring_report import verdict

runner = CliRunner()
FAULT_TYPES = (
    "adversarial",
    "cascade",
    "combined",
    "context_corruption",
    "stochastic",
    "tool_failure",
)

AGENTS = textwrap.dedent(
    '''
    """The same order-status agent twice: its tool plain, and wrapped with hbeval's tool hook."""
    from hbeval_core.contract import Task
    from hbeval_plain import ToolCallError, think, tool


    def lookup_order(order_id):
        return {"order_id": order_id, "status": "shipped"}


    wrapped_lookup = tool(lookup_order)


    def unfaultable():
        def agent(question):
            info = lookup_order("A100")
            return f"Order {info['order_id']} is {info['status']}."

        return agent


    def faultable():
        def agent(question):
            think("I will look the order up.", tool_calls=[("lookup_order", {"order_id": "A100"})])
            try:
                info = wrapped_lookup(order_id="A100")
            except ToolCallError as exc:
                think(f"The lookup failed ({exc}); I cannot say where the order is.")
                return "I could not look the order up."
            think("The order was found.")
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
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("delivery")
    (tmp / "my_agent.py").write_text(AGENTS, encoding="utf-8")
    return tmp


def _run(project: Path, attr: str) -> tuple[dict[str, Any], Any]:
    out = project / f"{attr}.json"
    res = runner.invoke(
        app,
        [
            "battery",
            "run",
            f"{project / 'my_agent.py'}:{attr}",
            "--db",
            str(project / f"{attr}.db"),
            "--out",
            str(out),
        ],
    )
    return json.loads(out.read_text(encoding="utf-8")), res


@pytest.fixture(scope="module")
def unfaultable(project: Path) -> tuple[dict[str, Any], Any]:
    return _run(project, "unfaultable")


def test_no_faultable_tool_is_insufficient_data(
    project: Path, unfaultable: tuple[dict[str, Any], Any]
) -> None:
    report, res = unfaultable
    assert res.exit_code == 0
    validate_report(report)
    assert report["verdict"] == "INSUFFICIENT_DATA"
    assert report["verdict_fix"].startswith("no tool call was seen at a faultable boundary")
    assert "hbeval_core.faults.faultable" in report["verdict_fix"]
    for name in ("frr", "irs"):
        assert report["metrics"][name] is None
        assert report["undefined"][name] == "no_fault_delivered"
    gap = report["reliability_gap"]
    assert gap["r_op"] is None and gap["undefined"]["r_op"] == "no_fault_delivered"
    assert gap["gap"] is None
    fd = report["fault_delivery"]
    assert (fd["injected"], fd["delivered"], fd["faulted_trials"]) == (0, 0, 0)
    assert fd["unmeasured_fault_types"] == list(FAULT_TYPES)
    # 18 scenarios x 3 trials; plans hold one fault each, two for cascade and combined.
    per_trial = {"cascade": 2, "combined": 2}
    planned = sum(
        3 * per_trial.get(s["fault_type"], 1) for s in report["scenarios"] if not s["is_nominal"]
    )
    assert fd["planned"] == planned and fd["planned_delivered"] == 0
    for name in FAULT_TYPES:
        entry = report["breakdowns"]["fault_type"][name]
        assert entry["measured"] is False and entry["rate"] is None
        assert entry["undefined"]["rate"] == "no_fault_delivered"
        assert entry["pass_hat_k"]["value"] is None
        assert fd["by_fault_type"][name]["measured"] is False
        assert f"faults:{name}" in report["unmeasured_metrics"]
    # The nominal scenarios measured what they could: their pass rate stays.
    assert report["breakdowns"]["fault_type"]["none"]["rate"] == 1.0
    for s in report["scenarios"]:
        assert s["measured"] is s["is_nominal"]
        if not s["is_nominal"]:
            assert s["undefined"]["frr"] == "no_fault_delivered"
            assert s["delivery"]["delivered"] == 0
    attack = report["agentdojo"]
    assert attack["targeted_attack_success_rate"] is None
    assert attack["undefined"]["targeted_attack_success_rate"] == "no_fault_delivered"
    # Surfaces: warning on stderr, "not measured" in the terminal and the HTML.
    assert "warning: only 0 of" in res.stderr and "faultable" in res.stderr
    assert "not measured" in res.stdout and "fix: no tool call was seen" in res.stdout
    html = render_html({"r": validate_report(report)})
    assert "not measured" in html and "no_fault_delivered" in html
    gate = runner.invoke(app, ["gate", str(project / "unfaultable.json")])
    assert gate.exit_code == 3
    assert "faults:adversarial" in gate.stdout


def test_wrapped_tool_gets_its_faults_and_no_warning(project: Path) -> None:
    report, res = _run(project, "faultable")
    assert res.exit_code == 0
    fd = report["fault_delivery"]
    assert fd["delivered"] > 0 and fd["planned_delivered"] * 2 >= fd["planned"]
    assert "warning: only" not in res.stderr
    for name in ("tool_failure", "adversarial", "cascade", "combined", "context_corruption"):
        assert fd["by_fault_type"][name]["measured"] is True, name


def test_compare_refuses_fault_figures_where_a_side_delivered_none(
    project: Path, unfaultable: tuple[dict[str, Any], Any]
) -> None:
    plain, _ = unfaultable
    wrapped, _ = _run(project, "faultable")
    assert plain["fingerprints"]["measurement"] == wrapped["fingerprints"]["measurement"]
    result = compare_reports(
        validate_report(wrapped), validate_report(plain), labels=("wrapped", "plain")
    )
    adv = result["fault_types"]["adversarial"]
    assert adv["change"] is None and adv["p"] is None and adv["rate_b"] is None
    assert adv["undefined"]["change"] == "no_fault_delivered"
    assert "run plain delivered no fault" in adv["refused"]
    assert result["fault_types"]["none"].get("refused") is None
    assert result["metrics"]["frr"]["change"] is None
    assert any(m.startswith("fault type adversarial") for m in result["refused"])
    res = runner.invoke(
        app, ["compare", str(project / "faultable.json"), str(project / "unfaultable.json")]
    )
    assert res.exit_code == 0, res.output
    assert "refused: fault type adversarial" in res.stdout


def test_partly_delivered_fault_type_counts_only_where_delivered() -> None:
    """One stochastic scenario fired, the other never did: the type is measured, that scenario not."""

    def t(key: str, scn: int, faults: list[dict[str, Any]], outcome: str) -> dict[str, Any]:
        delivered = any(f["delivered"] for f in faults)
        return {
            "trial_key": key,
            "task_id": "T",
            "scenario_index": scn,
            "trial_index": 0,
            "fault_type": "stochastic",
            "is_nominal": False,
            "planned_faults": 1,
            "outcome": outcome,
            "verdict": verdict(pei=None, ti=None, faulted=delivered, faults=faults),
        }

    hit = {"mode": "intermittent", "delivered": True}
    trials = [t("a", 0, [hit, hit], "pass"), t("b", 1, [], "pass"), t("c", 1, [], "pass")]
    built = build_report(run={"run_id": "x", "trials": 1}, trials=trials)
    report = built.to_dict()
    fd = report["fault_delivery"]
    # Planned 3 (one per trial); delivered 2 faults, but one spec counts once: 1 of 3.
    assert (fd["planned"], fd["delivered"], fd["planned_delivered"]) == (3, 2, 1)
    assert fd["by_fault_type"]["stochastic"]["measured"] is True
    s0, s1 = report["scenarios"]
    assert s0["measured"] is True and s1["measured"] is False
    assert s1["undefined"]["frr"] == "no_fault_delivered"
    assert "faults:stochastic" not in report["unmeasured_metrics"]
    warning = delivery_warning(built)
    assert warning is not None and "only 1 of 3 planned faults" in warning
