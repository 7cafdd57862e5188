"""Finding 4 of the second adversarial pass: a relabelled report gated green and was signed.

Taking the careful agent's genuine report and giving it the naive agent's agent id, run id and
manifest hash passed ``gate`` (exit 0) and ``passport sign`` produced a passport that verified as
"agent demo-naive, SAFE": the recheck proves figures follow from trials, but nothing bound the
trials to their run. Each trial now names its run and the report carries a digest over its
identity and trials; every reader refuses a report whose identity does not match its trials,
and ``passport sign --db`` checks the digest against the store.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.scoring._binding import report_digest
from hbeval.store import open_store
from hbeval_core.faults import Battery
from tests.adversarial._agents import stored_careful_run


def hb(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from hbeval.runner.run import run_battery
    from hbeval_plain.examples import naive, tasks

    root = tmp_path_factory.mktemp("relabel")
    db = stored_careful_run(root, "store.db")
    with open_store(str(db)) as store:
        bad = run_battery(
            None, naive, tasks, Battery.hbeval(n_scenarios=6, seed=42),
            trials=1, store=store, run_id="n1", agent_id="demo-naive",
        )  # fmt: skip
    assert hb(["passport", "keygen", "--out", str(root / "k.pem")]).exit_code == 0
    careful = json.loads((root / "report.json").read_text(encoding="utf-8"))
    assert careful["verdict"] != bad.verdict or careful["metrics"] != bad.to_dict()["metrics"]
    relabelled = json.loads(json.dumps(careful))
    relabelled["run_id"] = relabelled["run"]["run_id"] = "n1"
    relabelled["run"]["agent_id"] = "demo-naive"
    relabelled["manifest_hash"] = bad.manifest_hash
    (root / "relabelled.json").write_text(json.dumps(relabelled), encoding="utf-8")
    # The fabrication made consistent: every trial renamed, the digest computed again.
    whole = json.loads(json.dumps(relabelled))
    for trial in whole["trials"]:
        trial["run_id"] = "n1"
    whole["binding"]["digest"] = report_digest(whole)
    (root / "consistent.json").write_text(json.dumps(whole), encoding="utf-8")
    return {"root": root, "db": db, "careful": careful}


def test_the_genuine_report_names_its_run_in_every_trial(world: dict[str, Any]) -> None:
    careful = world["careful"]
    assert {t["run_id"] for t in careful["trials"]} == {"r1"}
    assert careful["binding"]["digest"] == report_digest(careful)
    ok = hb(["gate", str(world["root"] / "report.json"), "--skip-security"])
    assert ok.exit_code in (0, 1, 3), ok.output  # judged, not refused


def test_a_relabelled_report_is_refused_by_gate_and_passport_sign(world: dict[str, Any]) -> None:
    root = world["root"]
    gate = hb(["gate", str(root / "relabelled.json")])
    assert gate.exit_code == 2, gate.output
    assert "trials[0].run_id" in gate.output and "'r1'" in gate.output
    signed = hb([
        "passport", "sign", str(root / "relabelled.json"), "--key", str(root / "k.pem"),
        "--out", str(root / "p-relabelled.json"),
    ])  # fmt: skip
    assert signed.exit_code == 2, signed.output
    assert not (root / "p-relabelled.json").exists()
    report = hb(["report", str(root / "relabelled.json")])
    assert report.exit_code == 2, report.output


def test_a_consistent_fabrication_is_caught_by_the_store(world: dict[str, Any]) -> None:
    root, db = world["root"], world["db"]
    against_store = hb([
        "passport", "sign", str(root / "consistent.json"), "--key", str(root / "k.pem"),
        "--db", str(db), "--out", str(root / "p-store.json"),
    ])  # fmt: skip
    assert against_store.exit_code == 2, against_store.output
    assert "not the report the store" in against_store.output
    assert not (root / "p-store.json").exists()

    # Without the store it signs, and the passport says that its provenance was not checked.
    alone = hb([
        "passport", "sign", str(root / "consistent.json"), "--key", str(root / "k.pem"),
        "--out", str(root / "p-alone.json"),
    ])  # fmt: skip
    assert alone.exit_code == 0, alone.output
    passport = json.loads((root / "p-alone.json").read_text(encoding="utf-8"))
    assert passport["provenance"]["checked"] is False
    shown = hb([
        "passport", "verify", str(root / "p-alone.json"), "--key", str(root / "k.pem.pub"),
    ])  # fmt: skip
    assert "provenance: NOT CHECKED" in shown.output, shown.output


def test_the_genuine_run_signed_from_its_store_records_the_check(world: dict[str, Any]) -> None:
    root, db = world["root"], world["db"]
    for source, out in (("r1", "p-run.json"), (str(root / "report.json"), "p-file.json")):
        signed = hb([
            "passport", "sign", source, "--key", str(root / "k.pem"), "--db", str(db),
            "--out", str(root / out),
        ])  # fmt: skip
        assert signed.exit_code == 0, signed.output
        passport = json.loads((root / out).read_text(encoding="utf-8"))
        assert passport["provenance"]["checked"] is True
        assert passport["provenance"]["report_digest"] == world["careful"]["binding"]["digest"]
        shown = hb(["passport", "verify", str(root / out), "--key", str(root / "k.pem.pub")])
        assert shown.exit_code == 0 and "checked against the store" in shown.output
