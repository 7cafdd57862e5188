"""The typed report changes nothing but adding ``scores``: the demo's reports before and after.

``tests/fixtures/demo_report_seed42.json.gz`` holds what ``hbeval demo`` (seed 42, embedded
default store) wrote before the report became one typed model, the scores ``hbeval report
--json`` computed for those reports then, and the demo's side-by-side table. Both sides are
compared without their volatile fields (timestamps, latencies: ``strip_volatile``) and without
``manifest_hash``, an id that covers the installed packages and the agents' source files, so it
changes with the environment, not with scoring; nothing else in a demo report varies. The demo here runs end to end through the command line, as a user runs it.

The fixture was recorded when the hbeval battery appended the reference's context sentence to
every faulted question. The questions now reach the agent unchanged, which moves two things and
nothing else (the demo agents never read the sentence): the battery-spec fingerprint (and the
measurement fingerprint built on it), and the input tokens. The demo's scripted model counts
every word of every message it is handed as an input token, so each trial's ``input_tokens``
drop by the sentence's word count times the trial's model calls, and ``tokens_per_success``
with them. ``_as_unchanged_questions`` makes that conversion by hand.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from hbeval.cli._demo import side_by_side_rows
from hbeval.scoring import strip_volatile
from hbeval.scoring._report_model import validate_report
from hbeval_core.faults.battery import measurement_fingerprint
from hbeval_core.faults.compat import FAULT_CONTEXTS
from hbeval_core.vocab import DERIVE_VERSION, NO_REQUIRED_KEYWORDS
from tests.intervals import by_scenario, clustered_wilson, effective_n, faulted_groups

FIXTURE = Path(__file__).parents[1] / "fixtures" / "demo_report_seed42.json.gz"
SPEC_APPENDING = "5d7848ba211dd4b0"
"""The hbeval battery-spec fingerprint when it appended the context sentences (the fixture's)."""
SPEC_UNCHANGED = "beea5f268182b59d"
"""The hbeval battery-spec fingerprint now (tests/faults/test_battery_golden.py recounts it)."""


def _before() -> dict[str, Any]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _sentence_words(trial: dict[str, Any]) -> int:
    return len(FAULT_CONTEXTS[trial["fault_type"]].split())


def _tokens_per_success(report: dict[str, Any]) -> float:
    scored = [t for t in report["trials"] if t["outcome"] in ("pass", "fail", "timeout")]
    tokens = sum(t["usage"]["input_tokens"] + t["usage"]["output_tokens"] for t in scored)
    return tokens / sum(1 for t in scored if t["outcome"] == "pass")


def _as_unchanged_questions(report: dict[str, Any]) -> dict[str, Any]:
    """A fixture report as the run gives it now that questions reach the agent unchanged."""
    out: dict[str, Any] = json.loads(json.dumps(report))
    assert out["fingerprints"]["battery_spec"] == SPEC_APPENDING
    for trial in out["trials"]:
        cut = _sentence_words(trial) * trial["usage"]["model_calls"]
        for usage in (trial["usage"], trial["verdict"]["usage"]):
            usage["input_tokens"] -= cut
    out["efficiency"]["tokens_per_success"] = _tokens_per_success(out)
    old_fp = out["fingerprints"]["measurement"]
    new_fp = measurement_fingerprint(
        SPEC_UNCHANGED,
        "hbeval-battery/1",
        out["fingerprints"]["plan"],
        out["run"]["seed"],
        out["run"]["trials"],
        out["versions"]["scoring"],
        out["versions"]["derive"],
    )
    text = json.dumps(out, allow_nan=False).replace(old_fp, new_fp)
    converted: dict[str, Any] = json.loads(text.replace(SPEC_APPENDING, SPEC_UNCHANGED))
    return converted


def _scores_now(name: str) -> dict[str, Any]:
    """The fixture's scores for ``name`` with tokens per success recounted as above."""
    scores: dict[str, Any] = json.loads(json.dumps(_before()["scores"][name]))
    report = _as_unchanged_questions(_before()["reports"][name])
    scores["efficiency"]["figures"]["tokens_per_success"] = _tokens_per_success(report)
    return scores


def _hb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
    }
    return subprocess.run(
        [sys.executable, "-m", "hbeval.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


# What hbeval-scoring/3 decides differently from scoring/2 (docs/validity.md): the signals and
# the deliberate-handling verdict of each trial, the IRS figures built from them, the silent
# corruption count, and the texts and ids that name them (the scoring version is part of the
# measurement fingerprint, which the run ids carry). Everything else is compared byte for byte.
_TRIAL_SCORED = ("signals",)
_VERDICT_SCORED = ("signals", "scoring_version", "deliberate", "irs_score", "abstained")
_REPORT_SCORED = ("silent_corruption", "summary", "verdict_reasons", "run_id", "fingerprints")
# Intervals are clustered by scenario now (the independent-trials one is kept as
# ``interval_independent``); they are checked against a by-hand computation below.
_INTERVAL_KEYS = frozenset(("interval", "c_nom_interval", "r_op_interval", "z", "p", "significant"))
_NEW_INTERVAL_KEYS = frozenset(
    ("interval_independent", "interval_method", "clusters", "effective_n", "design_effect")
)


def _without_intervals(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_intervals(v)
            for k, v in value.items()
            if k not in _INTERVAL_KEYS and k not in _NEW_INTERVAL_KEYS
        }
    if isinstance(value, list):
        return [_without_intervals(v) for v in value]
    return value


def _comparable(report: dict[str, Any]) -> str:
    """The report as JSON text without volatile fields, ``manifest_hash``, ``scores`` and what
    scoring/3 decides (checked figure by figure in ``test_scoring3_moved_only_...``).

    The side-effect ledger's blocks (the run's and each verdict's ``side_effects``) came after
    the fixture was recorded; they are left out here and checked on their own below, as are
    each trial's ``fault_targets`` and each verdict's ``evidence.tools_called``.
    """
    drop = (
        "text_signals",
        "scores",
        "manifest_hash",
        "side_effects",
        "uncertainty",
        "consistency",
        "csi_runs",
        "binding",
        "loaded_sources",
        *_REPORT_SCORED,
    )
    rest = _without_intervals(strip_volatile({k: v for k, v in report.items() if k not in drop}))
    rest["run"] = {k: v for k, v in rest["run"].items() if k != "run_id"}
    rest["versions"] = {k: v for k, v in rest["versions"].items() if k != "scoring"}
    for block in ("metrics", "aggregate_metrics"):
        rest[block] = {k: v for k, v in rest[block].items() if k != "irs"}
    for scenario in rest.get("scenarios", []):
        scenario["metrics"] = {k: v for k, v in scenario["metrics"].items() if k != "irs"}
    for trial in rest.get("trials", []):
        for key in _TRIAL_SCORED:
            trial.pop(key, None)
        trial.pop("run_id", None)  # each trial names its run since reports are bound to it
        trial.pop("fault_targets", None)
        if isinstance(trial.get("verdict"), dict):
            for key in ("side_effects", "text_signals", *_VERDICT_SCORED):
                trial["verdict"].pop(key, None)
            if isinstance(trial["verdict"].get("evidence"), dict):
                trial["verdict"]["evidence"].pop("tools_called", None)
            _as_named_before(trial["verdict"])
    # Added blocks of scoring/3, checked in ``test_scoring3_unobserved_and_text_means``.
    for key in ("not_judged", "unreceipted_trials"):
        rest["fault_delivery"].pop(key, None)
    rest["methodology"].pop("text_heuristics_mean", None)
    rest["methodology"]["undefined"] = {
        k: v
        for k, v in rest["methodology"]["undefined"].items()
        if not k.startswith("text_heuristics_mean.")
    }
    return json.dumps(rest, allow_nan=False)


def _as_named_before(verdict: dict[str, Any]) -> None:
    """A scoring/3 verdict under the names the fixture has: the step-level recovery was
    stored as ``frr``, and text FRR and PEI without required keywords were not marked."""
    for block in ("metrics", "metrics_undefined"):
        verdict[block] = {
            ("frr" if k == "step_recovery" else k): v for k, v in verdict[block].items()
        }
    th = verdict.get("text_heuristics")
    if isinstance(th, dict):
        th["undefined"] = {k: v for k, v in th["undefined"].items() if v != NO_REQUIRED_KEYWORDS}


@cache
def _demo_dir() -> Path:
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="hbeval-demo-"))
    proc = _hb("demo", cwd=out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def after() -> dict[str, Any]:
    pytest.importorskip("langgraph")  # the fixture was recorded with the LangGraph demo agents
    data: dict[str, Any] = json.loads(
        (_demo_dir() / "hbeval-report.json").read_text(encoding="utf-8")
    )
    return data


def _as_current_derivation(report: dict[str, Any]) -> dict[str, Any]:
    """A report recorded under hb-derive/2 as the current derivation names it.

    The fixture was recorded under hb-derive/2. hb-derive/3 changed no figure of these runs
    (their agents record model events), but the version is named in the report and is part of
    the measurement fingerprint, which the run ids carry. The new fingerprint is computed here
    from the recorded inputs, so every other byte must still be equal.
    """
    fps = report["fingerprints"]
    old_fp = fps["measurement"]
    assert report["versions"]["derive"] == "hb-derive/2"
    assert old_fp == measurement_fingerprint(
        fps["battery_spec"],
        "hbeval-battery/1",
        fps["plan"],
        report["run"]["seed"],
        report["run"]["trials"],
        report["versions"]["scoring"],
        "hb-derive/2",
    )
    new_fp = measurement_fingerprint(
        fps["battery_spec"],
        "hbeval-battery/1",
        fps["plan"],
        report["run"]["seed"],
        report["run"]["trials"],
        report["versions"]["scoring"],
        DERIVE_VERSION,
    )
    text = json.dumps(report, allow_nan=False)
    assert text.count('"hb-derive/2"') == 1 + len(report["trials"])  # versions and each trial
    text = text.replace('"hb-derive/2"', json.dumps(DERIVE_VERSION)).replace(old_fp, new_fp)
    converted: dict[str, Any] = json.loads(text)
    return converted


def test_demo_reports_equal_the_recorded_ones_but_for_the_scores_section(
    after: dict[str, Any],
) -> None:
    before = _before()["reports"]
    assert list(after) == list(before) == ["careful", "naive"]
    for name, report in after.items():
        assert "scores" in report, name
        # Compared as JSON text: the same keys, in the same order, with the same numbers.
        expected = _as_unchanged_questions(_as_current_derivation(before[name]))
        assert _comparable(report) == _comparable(expected), name
        new_blocks = (
            "text_signals",
            "scores",
            "side_effects",
            "silent_corruption",
            "uncertainty",
            "consistency",
            "csi_runs",
            "loaded_sources",
            "binding",
        )
        assert [k for k in report if k not in new_blocks] == list(before[name])
        # Each trial names the tools its faults target and the tools its trace shows called.
        for trial in report["trials"]:
            targets = trial.get("fault_targets")
            assert (targets is None) is trial["is_nominal"], trial["trial_key"]
            assert targets is None or (targets and targets == sorted(set(targets)))
            called = trial["verdict"]["evidence"]["tools_called"]
            assert called == sorted(set(called)), trial["trial_key"]
        assert any(t["verdict"]["evidence"]["tools_called"] for t in report["trials"])
        # The consistency block is there; every demo scenario ran 3 trials.
        assert report["consistency"]["k"] == 3 and "c_out" in report["consistency"]
        # Neither demo agent repeats a refund: the ledger counts every trial, and no duplicate.
        assert report["side_effects"]["duplicate_side_effects"] == 0
        assert report["side_effects"]["trials_counted"] == len(report["trials"])


def test_the_scores_section_holds_what_report_json_computed(after: dict[str, Any]) -> None:
    for name, report in after.items():
        assert strip_volatile(report["scores"]) == strip_volatile(_scores_now(name)), name


def test_unchanged_questions_moved_the_tokens_by_the_sentences_alone(
    after: dict[str, Any],
) -> None:
    before = _before()["reports"]
    # Input words before -> now, counted by hand from the two runs' trials.
    moved = {"careful": (15214, 13480), "naive": (10358, 8740)}
    for name, report in after.items():
        old = sum(t["usage"]["input_tokens"] for t in before[name]["trials"])
        new = sum(t["usage"]["input_tokens"] for t in report["trials"])
        assert (old, new) == moved[name]
        assert report["fingerprints"]["battery_spec"] == SPEC_UNCHANGED
        # Nominal trials were never given a sentence: their tokens are as recorded.
        for b, a in zip(before[name]["trials"], report["trials"], strict=True):
            if b["fault_type"] == "none":
                assert a["usage"] == b["usage"]


def test_the_demo_table_is_unchanged_but_for_irs_and_clustered_intervals(
    after: dict[str, Any],
) -> None:
    reports = {name: validate_report(report) for name, report in after.items()}
    table = [[label, cells] for label, cells in side_by_side_rows(reports)]
    before = _before()["table"]

    def points(rows: list[list[Any]]) -> list[list[Any]]:
        return [
            [label, [c.split(" [")[0] for c in cells]] for label, cells in rows if label != "IRS"
        ]

    assert points(table) == points(before)
    (irs,) = (cells for label, cells in table if label == "IRS")
    # 36 of 37 careful faulted trials handled deliberately; none of the naive's.
    assert [cell.split(" [")[0] for cell in irs] == [f"{36 / 37:.3f}", "0.000"]
    # FRR's interval is clustered by scenario, computed by hand from the trials.
    (frr,) = (cells for label, cells in table if label == "FRR")
    for cell, name in zip(frr, ("careful", "naive"), strict=True):
        low, high = clustered_wilson(faulted_groups(after[name]))
        assert cell.endswith(f"[{low:.2f}, {high:.2f}]"), (name, cell)
    assert frr[1] == "0.308 [0.12, 0.59]"  # 0.308 [0.19, 0.46] with trials as independent


def test_the_independent_interval_is_kept_beside_the_clustered_one(after: dict[str, Any]) -> None:
    before = _before()["reports"]
    for name, report in after.items():
        rate = report["pass_rate"]
        assert rate["interval_independent"] == pytest.approx(before[name]["pass_rate"]["interval"])
        passed = by_scenario(
            report["trials"], lambda t: True, lambda t: int(t["outcome"] == "pass")
        )
        assert rate["interval"] == pytest.approx(list(clustered_wilson(passed)))
        entry = report["uncertainty"]["rates"]["frr"]
        assert entry["effective_n"] == pytest.approx(effective_n(faulted_groups(report)))
        assert entry["clusters"] == len(faulted_groups(report))


def _changed_irs(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [
        (i, a["task_id"], a["fault_type"])
        for i, (b, a) in enumerate(zip(before["trials"], after["trials"], strict=True))
        if b["verdict"].get("irs_score") != a["verdict"].get("irs_score")
    ]


def test_scoring3_moved_only_the_irs_of_the_trials_docs_validity_names(
    after: dict[str, Any],
) -> None:
    """Scoring/3 against the recorded scoring/2 reports, trial by trial.

    Careful: one trial stops counting as deliberate, the stochastic fault on
    ``refund_request``, where the agent escalated after re-planning failed; the run has no
    nominal trial of that task, so the abstention cannot be confirmed. IRS 37/37 -> 36/37.
    Naive: its three credited trials (one scenario) only moved on to the plan's next tool
    after an altered result, which the lineage rule does not count as a change. IRS
    1/13 of its maximum -> 0. Both runs now carry scoring/3 in every verdict.
    """
    before = _before()["reports"]
    careful, naive = after["careful"], after["naive"]
    assert before["careful"]["metrics"]["irs"] == 1.0
    assert _changed_irs(before["careful"], careful) == [(45, "refund_request", "stochastic")]
    assert careful["metrics"]["irs"] == pytest.approx(36 / 37)
    moved = _changed_irs(before["naive"], naive)
    assert [i for i, _, _ in moved] == [6, 7, 8]
    assert len({(task, fault) for _, task, fault in moved}) == 1  # one scenario, three trials
    assert before["naive"]["metrics"]["irs"] == pytest.approx(1 / 13)
    assert naive["metrics"]["irs"] == 0.0
    assert naive["verdict_reasons"][1] == "IRS 0 is below its floor 0.6"
    for report in (careful, naive):
        assert report["versions"]["scoring"] == "hbeval-scoring/3"
        assert {t["verdict"]["scoring_version"] for t in report["trials"]} == {"hbeval-scoring/3"}
    # The naive agent repeats the planted values of one malformed result in its answer.
    assert naive["silent_corruption"]["count"] == 3
    assert careful["silent_corruption"]["count"] == 0


def test_scoring3_unobserved_and_text_means(after: dict[str, Any]) -> None:
    """The demo tasks list no required keywords: methodology A's text FRR and PEI grade
    nothing, so their means are undefined, not the 0.0 the fixture recorded. The LangGraph
    demo agents' replies are observed: every faulted trial is judged."""
    before = _before()["reports"]
    for name, report in after.items():
        assert before[name]["methodology"]["text_heuristics_mean"]["frr"] == 0.0
        means = report["methodology"]["text_heuristics_mean"]
        undefined = report["methodology"]["undefined"]
        assert means["frr"] is None, name
        assert undefined["text_heuristics_mean.frr"] == NO_REQUIRED_KEYWORDS
        # Text PEI grades a JSON answer without keywords (the reference's quality factor): the
        # naive agent's few bare-number answers parse as JSON, and only they are averaged.
        json_answers = [
            t["verdict"]["text_heuristics"]["pei"]
            for t in report["trials"]
            if t["outcome"] in ("pass", "fail", "timeout")
            and "pei" not in t["verdict"]["text_heuristics"]["undefined"]
        ]
        assert len(json_answers) == {"careful": 0, "naive": 3}[name]
        if json_answers:
            assert means["pei"] == pytest.approx(sum(json_answers) / len(json_answers))
        else:
            assert means["pei"] is None
            assert undefined["text_heuristics_mean.pei"] == NO_REQUIRED_KEYWORDS
        assert means["ti"] == before[name]["methodology"]["text_heuristics_mean"]["ti"]
        assert report["fault_delivery"]["not_judged"] == {}
        assert report["fault_delivery"]["unreceipted_trials"] == 0
        # No judge: the default text signals decided every text question.
        assert report["text_signals"]["decided_by"] == ["hbeval-text/1"]
        for t in report["trials"]:
            assert (
                "frr" not in t["verdict"]["metrics"] and "step_recovery" in t["verdict"]["metrics"]
            )


@pytest.mark.parametrize("form", ["new", "old"])
def test_report_json_gate_and_passport_agree_on_new_and_old_reports(
    after: dict[str, Any], form: str, tmp_path: Path
) -> None:
    """A report written before the scores section existed still scores, gates and signs."""
    reports = after if form == "new" else _before()["reports"]
    # Old reports score as recorded; the new ones with their recounted tokens per success.
    expected = {n: _scores_now(n) if form == "new" else _before()["scores"][n] for n in reports}
    keygen = _hb("passport", "keygen", "--out", str(tmp_path / "k.pem"), cwd=tmp_path)
    assert keygen.returncode == 0, keygen.stderr
    for name, report in reports.items():
        assert ("scores" in report) is (form == "new")
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        shown = _hb("report", str(path), "--json", cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        (entry,) = json.loads(shown.stdout)["reports"].values()
        assert strip_volatile(entry["scores"]) == strip_volatile(expected[name]), (form, name)
        gate = _hb("gate", str(path), cwd=tmp_path)
        assert gate.returncode == {"careful": 0, "naive": 1}[name], gate.stdout + gate.stderr
        signed = _hb(
            "passport",
            "sign",
            str(path),
            "--key",
            str(tmp_path / "k.pem"),
            "--out",
            str(tmp_path / f"{name}.passport.json"),
            cwd=tmp_path,
        )
        assert signed.returncode == 0, signed.stderr
        passport = json.loads((tmp_path / f"{name}.passport.json").read_text(encoding="utf-8"))
        assert passport["capability"] == expected[name]["capability"]
        assert passport["security_gate"] == expected[name]["security_gate"]
