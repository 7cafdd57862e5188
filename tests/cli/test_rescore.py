"""``hbeval rescore RUN_ID``: a stored run scored again from its raw events, as a new report
beside the old one; and comparisons across scoring versions refused, naming both versions and
the rescore command.

Two real runs of the plain careful agent share one battery, seed and SQLite store. The first
run's stored report is then marked as written under an older scoring version (its versions and
every verdict say ``hbeval-scoring/2``, and its IRS is not the one this hbeval computes), bound
again as such a report would be. Expected figures are the second run's, which this hbeval
scored as it ran: the same agent, battery and seed give the same trials.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hbeval import run_battery
from hbeval.scoring import Report
from hbeval.scoring._binding import bind_report
from hbeval.store import open_store
from hbeval_core.vocab import SCORING_VERSION
from hbeval_plain.examples import careful, tasks

OLD = "hbeval-scoring/2"
BATTERY = """\
format: hbeval-battery-file/1
name: small
scenarios:
  - name: baseline
    mode: none
  - name: outage
    mode: error_5xx
    params: {http_status: 503}
    when: {attempts: [0]}
"""


def hb(*args: str) -> Any:
    from typer.testing import CliRunner

    from hbeval.cli import app

    return CliRunner().invoke(app, list(args))


def _bodies(db: Path, run_id: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT body FROM reports WHERE run_id = ? ORDER BY report_id", (run_id,)
        ).fetchall()
    return [str(r[0]) for r in rows]


def _mark_older(db: Path, run_id: str) -> None:
    """Store a report of ``run_id`` as an older scoring version would have written it."""
    store = open_store(db)
    try:
        data = store.get_report(run_id).to_dict()
        data["versions"]["scoring"] = OLD
        for t in data["trials"]:
            if t.get("verdict"):
                t["verdict"]["scoring_version"] = OLD
        data["metrics"]["irs"] = data["aggregate_metrics"]["irs"] = 0.5  # the old rules' IRS
        store.save_report(run_id, bind_report(Report.model_validate(data)))
    finally:
        store.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("rescore")
    battery = root / "small.yaml"
    battery.write_text(BATTERY, encoding="utf-8")
    db = root / "h.db"
    reports = {}
    for run_id in ("old-run", "new-run"):
        reports[run_id] = run_battery(
            careful, tasks=tasks[:2], battery=str(battery), trials=2, db=db, run_id=run_id
        ).to_dict()
    _mark_older(db, "old-run")
    return db, reports


def test_compare_and_baseline_across_scoring_versions_are_refused(
    runs: tuple[Path, dict[str, Any]],
) -> None:
    db, _ = runs
    for args in (
        ("compare", "old-run", "new-run", "--db", str(db)),
        ("gate", "new-run", "--baseline", "old-run", "--db", str(db)),
    ):
        proc = hb(*args)
        assert proc.exit_code == 2, proc.output
        message = " ".join(proc.output.split())
        assert OLD in message and SCORING_VERSION in message, message
        assert "hbeval rescore old-run" in message, message
        assert "Traceback" not in proc.output


def test_rescore_stores_a_new_report_beside_the_old(runs: tuple[Path, dict[str, Any]]) -> None:
    db, reports = runs
    before = _bodies(db, "old-run")
    proc = hb("rescore", "old-run", "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.output
    out = json.loads(proc.stdout)
    assert out["scoring"] == {"old": OLD, "new": SCORING_VERSION}
    # The old report is kept as it was; the new one is stored after it.
    after = _bodies(db, "old-run")
    assert after[: len(before)] == before and len(after) == len(before) + 1
    assert json.loads(after[-2])["versions"]["scoring"] == OLD
    new = json.loads(after[-1])
    assert new["versions"]["scoring"] == SCORING_VERSION
    assert {t["verdict"]["scoring_version"] for t in new["trials"]} == {SCORING_VERSION}
    # Scored again from the events, it gives what this hbeval gave the identical run as it ran.
    expected = reports["new-run"]
    # CSI combines other runs' reports: the rescore keeps the old report's (this run was first).
    assert new["metrics"]["csi"] is None and expected["metrics"]["csi"] is not None
    drop_csi = {k: v for k, v in expected["metrics"].items() if k != "csi"}
    assert {k: v for k, v in new["metrics"].items() if k != "csi"} == drop_csi
    assert new["pass_rate"]["rate"] == expected["pass_rate"]["rate"]
    assert out["moved"]["irs"] == {"old": 0.5, "new": expected["metrics"]["irs"]}
    for a, b in zip(new["trials"], expected["trials"], strict=True):
        assert a["verdict"]["signals"] == b["verdict"]["signals"]
        assert a["verdict"]["metrics"] == b["verdict"]["metrics"]
    # Same scoring version now: the runs compare.
    proc = hb("compare", "old-run", "new-run", "--db", str(db), "--json")
    assert proc.exit_code in (0, 3), proc.output
    result = json.loads(proc.stdout)
    assert result["measurement_fingerprint"] == expected["fingerprints"]["measurement"]


def test_rescore_names_a_missing_run(runs: tuple[Path, dict[str, Any]]) -> None:
    db, _ = runs
    proc = hb("rescore", "no-such-run", "--db", str(db))
    assert proc.exit_code == 2 and "no run 'no-such-run'" in proc.output
    proc = hb("rescore", "old-run", "--db", str(db.parent / "missing.db"))
    assert proc.exit_code == 2 and "no store at" in proc.output
