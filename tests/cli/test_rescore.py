"""``hbeval rescore RUN_ID``: a stored run scored again from its raw events, as a new report
beside the old one; and comparisons across scoring versions refused, naming both versions and
the rescore command.

Two real runs of the plain careful agent share one battery, seed and SQLite store. The first
run's stored report is then marked as written under an older scoring version (its versions and
every verdict say ``hbeval-scoring/2``, its measurement fingerprint is the recipe's under that
version, and its IRS is not the one this hbeval computes), bound again as such a report would
be. Expected figures are the second run's, which this hbeval scored as it ran: the same agent,
battery and seed give the same trials.

The measurement fingerprint's recipe (docs/battery.md) is written out here: the first 16 hex of
SHA-256 over the sorted, compact JSON of the battery-spec fingerprint, build algorithm, plan
fingerprint, seed, trials, scoring version and derivation version.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hbeval import run_battery
from hbeval.runner._rescore import rescored_fingerprints
from hbeval.scoring import Report
from hbeval.scoring._binding import bind_report
from hbeval.store import open_store
from hbeval_core.vocab import DERIVE_VERSION, SCORING_VERSION
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


def recipe(report: dict[str, Any], scoring: str) -> str:
    """The measurement fingerprint of ``report``'s battery run under ``scoring`` (a battery
    file: build algorithm ``hbeval-user-battery/1``)."""
    body = {
        "battery_spec": report["fingerprints"]["battery_spec"],
        "build_algorithm": "hbeval-user-battery/1",
        "fault_plans": report["fingerprints"]["plan"],
        "seed": report["run"]["seed"],
        "trials": report["run"]["trials"],
        "scoring_version": scoring,
        "derive_version": DERIVE_VERSION,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _mark_older(db: Path, run_id: str) -> None:
    """Make ``run_id`` what an older scoring version would have stored: its run and its one
    report under the measurement fingerprint of that version."""
    store = open_store(db)
    try:
        data = store.get_report(run_id).to_dict()
        data["versions"]["scoring"] = OLD
        data["fingerprints"]["measurement"] = recipe(data, OLD)
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM reports WHERE run_id = ?", (run_id,))
            conn.execute(
                "UPDATE runs SET measurement_fingerprint = ? WHERE run_id = ?",
                (data["fingerprints"]["measurement"], run_id),
            )
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


def test_rescore_stores_a_new_measurement_beside_the_old(
    runs: tuple[Path, dict[str, Any]],
) -> None:
    db, reports = runs
    before = _bodies(db, "old-run")
    assert len(before) == 1
    old_fp = json.loads(before[0])["fingerprints"]["measurement"]
    expected = reports["new-run"]
    assert old_fp == recipe(expected, OLD) != expected["fingerprints"]["measurement"]
    proc = hb("rescore", "old-run", "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.output
    out = json.loads(proc.stdout)
    assert out["scoring"] == {"old": OLD, "new": SCORING_VERSION}
    # The rescored report carries the fingerprint of what it now is: the recipe's under the
    # current scoring version, the one the fresh run got; not the old report's.
    new_fp = recipe(expected, SCORING_VERSION)
    assert new_fp == expected["fingerprints"]["measurement"]
    assert out["fingerprint"] == {"old": old_fp, "new": new_fp}
    rescored = f"old-run-rescored-{new_fp}"
    assert out["run_id"] == rescored
    # The old run and its report are kept as they were; the new measurement is its own run.
    assert _bodies(db, "old-run") == before
    (body,) = _bodies(db, rescored)
    new = json.loads(body)
    assert new == out["report"]
    assert new["run"]["run_id"] == rescored
    assert new["fingerprints"]["measurement"] == new_fp
    assert new["fingerprints"]["battery_spec"] == expected["fingerprints"]["battery_spec"]
    assert new["versions"]["scoring"] == SCORING_VERSION
    assert {t["verdict"]["scoring_version"] for t in new["trials"]} == {SCORING_VERSION}
    store = open_store(db)
    try:
        run = store.get_run(rescored)
        assert run is not None and run.measurement_fingerprint == new_fp
        assert run.status == "completed" and run.config["rescored_from"] == "old-run"
        assert store.get_run("old-run").measurement_fingerprint == old_fp
        # The trials and their events came along: the new run is whole.
        keys = [t.trial_key for t in store.list_trials("old-run")]
        assert [t.trial_key for t in store.list_trials(rescored)] == keys
        for key in keys:
            assert list(store.iter_events(rescored, key)) == list(store.iter_events("old-run", key))
    finally:
        store.close()
    # Scored again from the events, it gives what this hbeval gave the identical run as it ran.
    # CSI combines other runs' reports: the rescore keeps the old report's (this run was first).
    assert new["metrics"]["csi"] is None and expected["metrics"]["csi"] is not None
    drop_csi = {k: v for k, v in expected["metrics"].items() if k != "csi"}
    assert {k: v for k, v in new["metrics"].items() if k != "csi"} == drop_csi
    assert new["pass_rate"]["rate"] == expected["pass_rate"]["rate"]
    assert out["moved"]["irs"] == {"old": 0.5, "new": expected["metrics"]["irs"]}
    for a, b in zip(new["trials"], expected["trials"], strict=True):
        assert a["verdict"]["signals"] == b["verdict"]["signals"]
        assert a["verdict"]["metrics"] == b["verdict"]["metrics"]
    # Same scoring version and measurement now: the rescored run compares with the fresh one.
    proc = hb("compare", rescored, "new-run", "--db", str(db), "--json")
    assert proc.exit_code in (0, 3), proc.output
    result = json.loads(proc.stdout)
    assert result["measurement_fingerprint"] == new_fp
    # The old run itself is still refused, naming both versions and the rescore command.
    for args in (
        ("compare", "old-run", rescored, "--db", str(db)),
        ("gate", rescored, "--baseline", "old-run", "--db", str(db)),
    ):
        proc = hb(*args)
        assert proc.exit_code == 2, proc.output
        message = " ".join(proc.output.split())
        assert OLD in message and SCORING_VERSION in message, message
        assert "hbeval rescore old-run" in message, message
    # Rescoring again gives the same run and an identical report beside the first.
    again = hb("rescore", "old-run", "--db", str(db), "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["run_id"] == rescored
    bodies = _bodies(db, rescored)
    assert len(bodies) == 2
    first, second = (json.loads(b) for b in bodies)
    assert first["trials"] == second["trials"] and first["metrics"] == second["metrics"]


def test_a_run_under_the_current_version_is_rescored_in_place(
    runs: tuple[Path, dict[str, Any]],
) -> None:
    db, reports = runs
    before = _bodies(db, "new-run")
    proc = hb("rescore", "new-run", "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.output
    out = json.loads(proc.stdout)
    fp = reports["new-run"]["fingerprints"]["measurement"]
    assert out["run_id"] == "new-run" and out["fingerprint"] == {"old": fp, "new": fp}
    after = _bodies(db, "new-run")
    assert after[: len(before)] == before and len(after) == len(before) + 1
    assert out["moved"] == {}


def test_a_fingerprint_of_another_recipe_is_kept() -> None:
    # An import's fingerprint covers no scoring version: nothing reproduces it, it stays.
    report = {
        "run": {"seed": 0, "trials": 1},
        "versions": {"scoring": OLD, "derive": DERIVE_VERSION},
        "fingerprints": {"battery_spec": None, "plan": None, "measurement": "0123456789abcdef"},
    }
    assert rescored_fingerprints(report) == report["fingerprints"]
    # A battery run's is recomputed only when its own parts reproduce it.
    battery_run = {
        "run": {"seed": 3, "trials": 2},
        "versions": {"scoring": OLD, "derive": DERIVE_VERSION},
        "fingerprints": {"battery_spec": "a" * 16, "plan": "b" * 16, "measurement": "c" * 16},
    }
    assert rescored_fingerprints(battery_run) == battery_run["fingerprints"]


def test_rescore_names_a_missing_run(runs: tuple[Path, dict[str, Any]]) -> None:
    db, _ = runs
    proc = hb("rescore", "no-such-run", "--db", str(db))
    assert proc.exit_code == 2 and "no run 'no-such-run'" in proc.output
    proc = hb("rescore", "old-run", "--db", str(db.parent / "missing.db"))
    assert proc.exit_code == 2 and "no store at" in proc.output
