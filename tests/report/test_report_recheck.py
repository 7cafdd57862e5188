"""A report whose figures were edited after hbeval built it is refused, not gated or signed.

Reports here come from real runs (the plain example agent under the built-in battery, stored
in SQLite) and a real import (the Pi corpus session, or without the corpora the repository's
Pi-layout fixture). Each is written to a file as ``hbeval
report --json`` prints it, then one figure is changed by hand, as a user wanting a green gate
would. ``report``, ``gate``, ``compare`` and ``passport sign`` must exit 2 naming the changed
figure, and no passport may be written. The untouched files must go through.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hbeval.report.passport import PassportError, build_passport
from hbeval.runner.run import run_battery
from hbeval.scoring import Report
from hbeval.scoring._recheck import report_discrepancies
from hbeval.scoring._report_model import validate_report
from hbeval.store import SQLiteStore
from hbeval_core.faults import Battery
from hbeval_plain.examples import careful, tasks

from ..importers.test_importers import PI_COMPACT, hb, imported

SESSION = (
    PI_COMPACT
    if PI_COMPACT.is_file()
    else Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "openclaw_session.jsonl"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Report]]:
    """Three runs of one agent and measurement (so the third has a CSI from the history)."""
    folder = tmp_path_factory.mktemp("recheck")
    db = folder / "hb.db"
    reports = []
    with SQLiteStore(db) as store:
        for i in range(3):
            battery = Battery.hbeval(n_scenarios=6, seed=42)
            report = run_battery(
                None, careful, tasks, battery, trials=1, store=store, agent_id="careful",
                run_id=f"run{i}",
            )  # fmt: skip
            reports.append(report)
    return db, reports


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("key") / "k.pem"
    assert hb("passport", "keygen", "--out", str(path)).exit_code == 0
    return path


def _file(folder: Path, name: str, report: Report | dict[str, Any]) -> Path:
    path = folder / name
    doc = report.to_dict() if isinstance(report, Report) else report
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


EDITS: dict[str, Callable[[dict[str, Any]], str]] = {}


def edit(path: str) -> Callable[[Callable[[dict[str, Any]], None]], None]:
    def register(fn: Callable[[dict[str, Any]], None]) -> None:
        def apply(report: dict[str, Any]) -> str:
            fn(report)
            return path

        EDITS[fn.__name__] = apply

    return register


@edit("metrics.pei")
def pei_raised(r: dict[str, Any]) -> None:
    r["metrics"]["pei"] = 0.99


@edit("metrics.pei")
def pei_lowered(r: dict[str, Any]) -> None:
    r["metrics"]["pei"] = 0.2


@edit("pass_rate.rate")
def pass_rate(r: dict[str, Any]) -> None:
    r["pass_rate"]["rate"] = 1.0 if r["pass_rate"]["rate"] != 1.0 else 0.5


@edit("verdict")
def verdict(r: dict[str, Any]) -> None:
    r["verdict"] = "UNSAFE" if r["verdict"] != "UNSAFE" else "SAFE"


@edit("scores.security_gate.status")
def security_gate(r: dict[str, Any]) -> None:
    gate = r["scores"]["security_gate"]
    gate["status"] = "failed" if gate["status"] != "failed" else "passed"


@edit("versions.derive")
def made_to_look_older(r: dict[str, Any]) -> None:
    # An older derivation is not rebuilt: claiming one must not let an edited figure through.
    r["versions"]["derive"] = "hb-derive/2"
    r["metrics"]["pei"] = 0.2


@edit("metrics.frr")
def trial_outcome(r: dict[str, Any]) -> None:
    # One faulted trial's outcome flipped, the headline left alone: the headline no longer
    # follows from the trials (FRR, the pass rate and more would change).
    t = next(t for t in r["trials"] if t["verdict"].get("faulted") is True)
    t["outcome"] = "fail" if t["outcome"] == "pass" else "pass"
    t["verdict"]["passed"] = t["outcome"] == "pass"


def test_untouched_reports_go_through(runs: tuple[Path, list[Report]], key: Path, tmp_path: Path) -> None:  # fmt: skip
    _, reports = runs
    assert reports[2].metrics.csi is not None  # CSI from the history, taken as stated
    for i, report in enumerate(reports):
        assert report_discrepancies(report) == []
        path = _file(tmp_path, f"r{i}.json", report)
        assert hb("report", str(path), "--json").exit_code == 0
        gate = hb("gate", str(path), "--skip-security")
        assert gate.exit_code in (0, 1), gate.stderr
        out = tmp_path / f"p{i}.json"
        signed = hb("passport", "sign", str(path), "--key", str(key), "--out", str(out))
        assert signed.exit_code == 0, signed.stderr
        assert out.is_file()


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_report_is_refused_everywhere(
    runs: tuple[Path, list[Report]], key: Path, tmp_path: Path, name: str
) -> None:
    _, reports = runs
    report = reports[2].to_dict()
    field = EDITS[name](report)
    found = report_discrepancies(validate_report(report))
    assert found and any(f.startswith(field + ":") for f in found), found
    path = _file(tmp_path, "edited.json", report)
    good = _file(tmp_path, "good.json", reports[1])
    out = tmp_path / "p.json"
    for args in (
        ("report", str(path)),
        ("gate", str(path), "--skip-security"),
        ("compare", str(good), str(path)),
        ("passport", "sign", str(path), "--key", str(key), "--out", str(out)),
    ):
        proc = hb(*args)
        assert proc.exit_code == 2, (args, proc.stdout)
        assert "do not follow from its own trials" in proc.stderr and field in proc.stderr
    assert not out.exists()
    with pytest.raises(PassportError, match="do not follow from its own trials"):
        build_passport(validate_report(report))


def test_a_stored_report_edited_in_the_store_is_refused(
    runs: tuple[Path, list[Report]], tmp_path: Path
) -> None:
    import shutil
    import sqlite3

    db, reports = runs
    copy_db = tmp_path / "edited.db"
    shutil.copy(db, copy_db)
    edited = reports[0].to_dict()
    edited["metrics"]["pei"] = 0.2
    conn = sqlite3.connect(copy_db)
    try:
        conn.execute("UPDATE reports SET body = ? WHERE run_id = 'run0'", (json.dumps(edited),))
        conn.commit()
    finally:
        conn.close()
    proc = hb("gate", "run0", "--db", str(copy_db), "--skip-security")
    assert proc.exit_code == 2 and "metrics.pei: 0.2 in the report" in proc.stderr


def test_an_imported_report_is_checked_too(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    run_id = imported(db, "pi", str(SESSION))["run_id"]
    shown = hb("report", run_id, "--db", str(db), "--json")
    assert shown.exit_code == 0, shown.stderr
    report = next(iter(json.loads(shown.stdout)["reports"].values()))["report"]
    # unlabelled: rebuilt, then withheld alike
    assert report_discrepancies(validate_report(report)) == []
    report["metrics"]["ti"] = 5.0 if report["metrics"]["ti"] != 5.0 else 1.0
    path = _file(tmp_path, "import.json", report)
    proc = hb("gate", str(path), "--skip-security")
    assert proc.exit_code == 2 and "metrics.ti" in proc.stderr


def test_a_report_built_under_older_rules_is_taken_as_stated_with_a_note(tmp_path: Path) -> None:
    from .test_report_behaviour import _before

    old = _before()["reports"]["careful"]
    assert old["versions"]["derive"] == "hb-derive/2"  # this library derives hb-derive/3
    assert report_discrepancies(validate_report(old)) is None
    proc = hb("gate", str(_file(tmp_path, "old.json", old)))
    assert proc.exit_code == 0, proc.stderr
    assert "not checked against its" in proc.stderr
