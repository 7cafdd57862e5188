"""One typed report: ``build_report -> Report``, one trial-verdict shape, scores computed once.

The reports here are the demo's as ``hbeval demo`` writes them now (``_demo_dir``, run once
per session), without their scores section, so they are real reports of real runs. The shape of
one trial verdict is also read as it was recorded before the scores section existed
(``tests/fixtures/demo_report_seed42.json.gz``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hbeval.report._passport_keys import PassportError
from hbeval.report.gate import GATE_FAIL, GATE_PASS, run_gate
from hbeval.report.passport import build_passport
from hbeval.report.scores import report_scores
from hbeval.scoring import (
    Report,
    ReportFormatError,
    TrialVerdictModel,
    build_report,
    compute_scores,
    decide_verdict,
    scores_of,
    strip_volatile,
)
from hbeval.scoring._report_model import validate_report
from tests.report.test_report_behaviour import _before, _demo_dir, _scores_now


def _old(name: str = "careful") -> dict[str, Any]:
    """The demo's report as written now, without the scores section ``build_report`` adds."""
    pytest.importorskip("langgraph")  # the demo's agents are LangGraph agents
    written = json.loads((_demo_dir() / "hbeval-report.json").read_text(encoding="utf-8"))
    report: dict[str, Any] = {k: v for k, v in written[name].items() if k != "scores"}
    return copy.deepcopy(report)


def _trials_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's trials back in the shape the runner hands to ``build_report``."""
    return [copy.deepcopy(t) for t in report["trials"]]


def _run_of(report: dict[str, Any]) -> dict[str, Any]:
    run = dict(report["run"])
    run.update(fingerprints=report["fingerprints"], manifest_hash=report["manifest_hash"])
    return run


def test_build_report_returns_the_model_and_to_dict_is_the_json_on_disk() -> None:
    old = _old()
    built = build_report(run=_run_of(old), trials=_trials_of(old))
    assert isinstance(built, Report)
    data = built.to_dict()
    assert validate_report(data) == built
    # The runner adds what the trials alone do not hold: consistency from the stored events,
    # CSI's runs from the store, the loaded sources and the binding over the finished report.
    later = ("scores", "consistency", "csi_runs", "loaded_sources", "binding")
    assert {k: v for k, v in data.items() if k not in later} == {
        k: v for k, v in old.items() if k not in later
    }
    assert built.verdict == old["verdict"] == "SAFE"


def test_the_stored_scores_are_the_ones_computed_from_the_report() -> None:
    for name in ("careful", "naive"):
        old = _old(name)
        built = build_report(run=_run_of(old), trials=_trials_of(old)).to_dict()
        assert built["scores"] == compute_scores(validate_report(old)).model_dump(mode="json")
        # what a report without the section shows
        assert built["scores"] == report_scores(validate_report(old))
        # The scores recorded before scoring/3 (latencies aside): scoring/3 moved none of them;
        # unchanged questions moved tokens per success alone (``_scores_now`` recounts it).
        assert strip_volatile(built["scores"]) == strip_volatile(_scores_now(name))


def test_readers_take_the_stored_section_not_a_second_computation() -> None:
    """A stored gate is what gate and verdict show; a passport refuses a section its trials contradict."""
    old = _old()
    built = build_report(run=_run_of(old), trials=_trials_of(old))
    assert run_gate(built).verdict == GATE_PASS
    edited = built.to_dict()
    edited["scores"]["security_gate"].update(
        status="failed", breach_trials=1, forbidden_tools_run=["wire_money"], reason="stored"
    )
    report = validate_report(edited)
    assert decide_verdict(report).verdict == "UNSAFE"
    assert run_gate(report).verdict == GATE_FAIL
    # A passport rechecks the section against the trials, and refuses to sign the edit.
    with pytest.raises(PassportError, match=r"scores\.security_gate\.status: 'failed'"):
        build_passport(report)
    assert scores_of(report).security_gate.forbidden_tools_run == ["wire_money"]


def test_a_malformed_scores_section_is_refused_naming_the_field() -> None:
    old = _old()
    report = build_report(run=_run_of(old), trials=_trials_of(old)).to_dict()
    report["scores"]["security_gate"]["status"] = "probably fine"
    with pytest.raises(ReportFormatError, match=r"scores\.security_gate\.status"):
        scores_of(validate_report(report))  # the section never reaches a reader
    with pytest.raises(ReportFormatError, match=r"scores\.security_gate\.status"):
        validate_report(report)


def test_a_verdict_that_does_not_fit_the_model_is_refused_naming_the_field() -> None:
    old = _old()
    trials = _trials_of(old)
    del trials[3]["verdict"]["metrics"]
    with pytest.raises(ReportFormatError, match=r"trials\.3\.verdict\.metrics"):
        build_report(run=_run_of(old), trials=trials)


def test_one_trial_verdict_shape_and_the_old_name_is_read() -> None:
    verdict = _before()["reports"]["careful"]["trials"][0]["verdict"]
    # A verdict recorded before the side-effect ledger has every field but that one.
    later = ("side_effects", "text_signals")
    assert list(verdict) == [f for f in TrialVerdictModel.model_fields if f not in later]
    model = TrialVerdictModel.model_validate(verdict)
    assert model.side_effects is None and model.text_signals is None
    # ... and a model fault's handling, which a tool fault's entry never has, the proxy a
    # trace was seen through, which an adapter's trace never has, and the tools a trace shows
    # called, which a verdict recorded before they were kept does not say (read as absent).
    assert "tools_called" not in verdict["evidence"] and model.evidence.tools_called is None
    dumped = model.model_dump(
        mode="json",
        exclude={
            **{name: True for name in later},
            "faults": {"__all__": {"handling"}},
            "evidence": {"seen_through", "tools_called"},
        },
    )
    # Scoring/3's signals are read as undefined from a scoring/2 verdict; the rest is as recorded.
    new_signals = {k: v for k, v in dumped["signals"].items() if k not in verdict["signals"]}
    assert set(new_signals) == {
        "abstention_confirmed",
        "blind_retry",
        "handled",
        "silent_corruption",
        "text_unobserved",
    }
    # The step-level figure stored as ``frr`` before it had its own name reads as step_recovery.
    assert "frr" in verdict["metrics"] and "step_recovery" not in verdict["metrics"]
    assert dumped["metrics"]["step_recovery"] == verdict["metrics"]["frr"]
    old_metrics = {("frr" if k == "step_recovery" else k): v for k, v in dumped["metrics"].items()}
    assert old_metrics == verdict["metrics"]
    old_undefined = {
        ("frr" if k == "step_recovery" else k): v for k, v in dumped["metrics_undefined"].items()
    }
    assert old_undefined == verdict["metrics_undefined"]
    rest = {"signals", "metrics", "metrics_undefined"}
    assert {k: v for k, v in dumped.items() if k not in rest} == {
        k: v for k, v in verdict.items() if k not in rest
    }
    renamed = {("text_score" if k == "text_heuristics" else k): v for k, v in verdict.items()}
    assert TrialVerdictModel.model_validate(renamed) == model
