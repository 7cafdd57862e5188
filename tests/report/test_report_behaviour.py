"""The typed report changes nothing but adding ``scores``: the demo's reports before and after.

``tests/fixtures/demo_report_seed42.json.gz`` holds what ``hbeval demo`` (seed 42, embedded
default store) wrote before the report became one typed model, the scores ``hbeval report
--json`` computed for those reports then, and the demo's side-by-side table. Both sides are
compared without their volatile fields (timestamps, latencies: ``strip_volatile``) and without
``manifest_hash``, an id that covers the installed packages and the agents' source files, so it
changes with the environment, not with scoring; nothing else in a demo report varies. The demo here runs end to end through the command line, as a user runs it.
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
from hbeval_core.vocab import DERIVE_VERSION

FIXTURE = Path(__file__).parents[1] / "fixtures" / "demo_report_seed42.json.gz"


def _before() -> dict[str, Any]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


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


def _comparable(report: dict[str, Any]) -> str:
    """The report as JSON text without volatile fields, ``manifest_hash`` and ``scores``.

    The side-effect ledger's blocks (the run's and each verdict's ``side_effects``) came after
    the fixture was recorded; they are left out here and checked on their own below.
    """
    rest = strip_volatile(
        {
            k: v
            for k, v in report.items()
            if k not in ("scores", "manifest_hash", "side_effects", "binding")
        }
    )
    for trial in rest.get("trials", []):
        trial.pop("run_id", None)  # each trial names its run since reports are bound to it
        if isinstance(trial.get("verdict"), dict):
            trial["verdict"].pop("side_effects", None)
    return json.dumps(rest, allow_nan=False)


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
        assert _comparable(report) == _comparable(_as_current_derivation(before[name])), name
        new = ("scores", "side_effects", "loaded_sources", "binding")
        assert [k for k in report if k not in new] == list(before[name])
        # Neither demo agent repeats a refund: the ledger counts every trial, and no duplicate.
        assert report["side_effects"]["duplicate_side_effects"] == 0
        assert report["side_effects"]["trials_counted"] == len(report["trials"])


def test_the_scores_section_holds_what_report_json_computed(after: dict[str, Any]) -> None:
    scores = _before()["scores"]
    for name, report in after.items():
        assert strip_volatile(report["scores"]) == strip_volatile(scores[name]), name


def test_the_demo_table_is_unchanged(after: dict[str, Any]) -> None:
    reports = {name: validate_report(report) for name, report in after.items()}
    table = [[label, cells] for label, cells in side_by_side_rows(reports)]
    assert table == _before()["table"]


@pytest.mark.parametrize("form", ["new", "old"])
def test_report_json_gate_and_passport_agree_on_new_and_old_reports(
    after: dict[str, Any], form: str, tmp_path: Path
) -> None:
    """A report written before the scores section existed still scores, gates and signs."""
    reports = after if form == "new" else _before()["reports"]
    expected = _before()["scores"]
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
