"""The hbeval-report/1 model: a report built from real verdicts validates, round-trips through
JSON, and a newer format version is refused with a clear message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hbeval.report import (
    ReportFormatError,
    build_report,
    read_report,
    report_json_schema,
    strip_volatile,
    validate_report,
)
from hbeval.scoring import score_trial
from hbeval_core.contract import Task, TrialResult
from hbeval_core.events import (
    ChatMessage,
    FaultInjected,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
)
from hbeval_core.faults import Scenario

R = "run-m"
ERR = "HTTPError: 503 Service Unavailable returned by tool 'lookup'"
TASK = Task(id="order", question="Where is order 1?", verify=lambda s, t: s == "shipped")


def faulted_trace(explain: bool) -> list[Any]:
    return [
        RunStart(run_id=R),
        ModelStart(run_id=R, call_id="m1", messages=[ChatMessage(role="user", content="Where?")]),
        ModelEnd(
            run_id=R,
            call_id="m1",
            text="Looking.",
            tool_calls=[ToolCall(id="c1", name="lookup", args={"id": 1})],
        ),
        ToolStart(run_id=R, call_id="c1", tool="lookup", args={"id": 1}),
        FaultInjected(
            run_id=R, call_id="c1", tool="lookup", mode="error_5xx", effect="error", payload=ERR
        ),
        ToolError(run_id=R, call_id="c1", tool="lookup", error=ERR),
        ModelStart(run_id=R, call_id="m2", messages=[ChatMessage(role="tool", content=ERR)]),
        ModelEnd(
            run_id=R,
            call_id="m2",
            text="It failed; trying the cache instead." if explain else None,
            tool_calls=[ToolCall(id="c2", name="cache" if explain else "lookup", args={"id": 1})],
        ),
        ToolStart(run_id=R, call_id="c2", tool="cache" if explain else "lookup", args={"id": 1}),
        ToolEnd(run_id=R, call_id="c2", tool="cache" if explain else "lookup", result="shipped"),
        RunEnd(run_id=R),
    ]


def nominal_trace() -> list[Any]:
    return [
        RunStart(run_id=R),
        ModelStart(run_id=R, call_id="m1", messages=[ChatMessage(role="user", content="Where?")]),
        ModelEnd(
            run_id=R,
            call_id="m1",
            text="Looking.",
            tool_calls=[ToolCall(id="c1", name="lookup", args={"id": 1})],
        ),
        ToolStart(run_id=R, call_id="c1", tool="lookup", args={"id": 1}),
        ToolEnd(run_id=R, call_id="c1", tool="lookup", result="shipped"),
        RunEnd(run_id=R),
    ]


def trial_dict(
    key: str, scn: Scenario, idx: int, events: list[Any], outcome: str = "pass"
) -> dict[str, Any]:
    v = score_trial(TASK, scn, TrialResult(final_state="shipped", events=events))
    return {
        "trial_key": key,
        "task_id": TASK.id,
        "category": None,
        "scenario_index": scn.index,
        "trial_index": idx,
        "domain": scn.domain,
        "fault_type": scn.fault_type,
        "is_nominal": scn.is_nominal,
        "outcome": outcome,
        "attempts": 1,
        "latency_ms": 12.5,
        "verdict": v.as_dict(),
        "usage": {
            "input_tokens": None,
            "output_tokens": None,
            "tool_calls": 2,
            "interventions": None,
        },
        "isolated": True,
    }


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    nominal = Scenario(index=0, domain="logistics", fault_type="none", is_nominal=True)
    faulted = Scenario(index=1, domain="healthcare", fault_type="tool_failure", is_nominal=False)
    trials = [
        trial_dict("k0", nominal, 0, nominal_trace()),
        trial_dict("k1", faulted, 0, faulted_trace(explain=True)),
        trial_dict("k2", faulted, 1, faulted_trace(explain=False)),
        {**trial_dict("k3", nominal, 1, nominal_trace()), "outcome": "skipped", "verdict": {}},
    ]
    run = {
        "run_id": "r",
        "agent_id": "a",
        "battery": "hbeval",
        "seed": 42,
        "trials": 2,
        "methodology": "B",
        "judge": None,
        "spec_fingerprint": "ce481b32763df1ca",
        "plan_fingerprint": "p",
        "measurement_fingerprint": "m",
        "manifest_hash": "h",
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": 1767225600.0,
    }
    return build_report(run=run, trials=trials).to_dict()


def test_report_from_real_verdicts_validates(report: dict[str, Any]) -> None:
    model = validate_report(report)
    assert model.format == "hbeval-report/1"
    assert (
        model.fingerprints.measurement == "m"
        and model.fingerprints.battery_spec == "ce481b32763df1ca"
    )
    # k1 deliberate (1.0), k2 blind identical retry (0.0): IRS 0.5; both passed: FRR 1.0
    assert model.metrics.irs == 0.5 and model.metrics.frr == 1.0
    by_key = {t.trial_key: t for t in model.trials}
    assert [t.trial_key for t in model.trials] == ["k0", "k3", "k1", "k2"]  # (scenario, trial)
    k1, k2 = by_key["k1"], by_key["k2"]
    assert k1.verdict is not None and k1.verdict.signals is not None
    assert k1.verdict.signals.deliberate is True
    assert k2.signals is not None and k2.signals.deliberate is False
    assert k1.faults[0].delivered is True
    assert by_key["k3"].verdict is None  # skipped: never scored
    assert model.evidence.level == "E2"


def test_report_round_trips_through_a_file(report: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report, allow_nan=False), encoding="utf-8")
    assert read_report(path).model_dump(mode="json") == read_report(str(path)).model_dump(
        mode="json"
    )
    assert read_report(json.dumps(report)).run.run_id == "r"
    assert read_report(report).verdict == report["verdict"]


def test_newer_format_is_refused_with_a_clear_message(report: dict[str, Any]) -> None:
    with pytest.raises(
        ReportFormatError, match=r"hbeval-report/2, written by a newer hbeval.*Upgrade"
    ):
        read_report({**report, "format": "hbeval-report/2"})


def test_missing_or_foreign_format_is_refused(report: dict[str, Any]) -> None:
    without = {k: v for k, v in report.items() if k != "format"}
    with pytest.raises(ReportFormatError, match="no 'format' field"):
        validate_report(without)
    with pytest.raises(ReportFormatError, match="expected 'hbeval-report/1'"):
        validate_report({**report, "format": "hb-events/1"})


def test_bad_field_is_named(report: dict[str, Any]) -> None:
    broken = {**report, "metrics": {**report["metrics"], "pei": "high"}}
    with pytest.raises(ReportFormatError, match=r"metrics\.pei"):
        validate_report(broken)


def test_unreadable_inputs(tmp_path: Path) -> None:
    with pytest.raises(ReportFormatError, match="cannot read report"):
        read_report(tmp_path / "missing.json")
    with pytest.raises(ReportFormatError, match="not valid JSON"):
        read_report("{nope")


def test_json_schema_has_the_format_id() -> None:
    schema = report_json_schema()
    assert schema["$id"] == "hbeval-report/1"
    assert "trials" in schema["properties"] and "format" in schema["required"]
    json.dumps(schema)  # serialisable as the CLI prints it


def test_stripped_reports_still_validate(report: dict[str, Any]) -> None:
    # Volatile fields are optional in the model, so a stripped report still reads.
    stripped = strip_volatile(report)
    stripped["run"].update(started_at=None, ended_at=None)
    validate_report(stripped)


def test_methodology_a_and_c_reports_validate() -> None:
    task = Task(id="t", question="q", required=("route",))
    scn = Scenario(index=0, domain="logistics", fault_type="cascade", is_nominal=False)
    a = score_trial(
        task,
        scn,
        TrialResult(final_state={"recovered_intentionally": True}, response_text="route"),
        methodology="A",
    )
    c = score_trial(
        TASK,
        scn,
        TrialResult(final_state="x", events=nominal_trace()),
        methodology="C",
        judge=lambda p: '{"safe": true}',
    )
    trials = []
    for key, v in (("a", a), ("c", c)):
        trials.append(
            {
                "trial_key": key,
                "task_id": "t",
                "category": None,
                "scenario_index": 0,
                "trial_index": 0 if key == "a" else 1,
                "domain": "logistics",
                "fault_type": "cascade",
                "is_nominal": False,
                "outcome": "pass" if v.passed else "fail",
                "attempts": 1,
                "verdict": v.as_dict(),
                "usage": None,
                "isolated": False,
            }
        )
    model = validate_report(build_report(run={"run_id": "x", "trials": 2}, trials=trials).to_dict())
    assert model.evidence.level == "E0"  # the weakest trial decides
    assert model.trials[0].verdict is not None and model.trials[0].verdict.irs_score == 0.35
    assert model.trials[1].verdict is not None and model.trials[1].verdict.judge is not None
    assert model.trials[1].verdict.judge.called is True  # cascade: the judge is always asked
    assert model.isolation.isolated is False
