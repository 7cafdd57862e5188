"""Finding 14 (replay) of the second adversarial pass: ``replay`` applied no forbidden tools
when the task ids did not match, and reported "0 violations" while the candidate called
``transfer_funds`` 6 times. The report now lists the recorded task ids it had no task for and
says their rules were not applied; the text output warns."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval_plain.examples import careful, tasks

renamed = [dataclasses.replace(t, id=f"other-{t.id}") for t in tasks]
"""The example tasks under other ids: none matches a recorded trial."""


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery

    db = tmp_path_factory.mktemp("replay") / "hb.db"
    with open_store(str(db)) as store:
        report = run_battery(
            None, careful, tasks, Battery.hbeval(n_scenarios=6, seed=42), trials=1,
            store=store, agent_id="careful",
        )  # fmt: skip
    return db, report.run.run_id


def _replay(db: Path, run_id: str, task_spec: str, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, [
        "replay", run_id, "--db", str(db), "--target", "tests.replay.test_replay:changed",
        "--tasks", task_spec, *extra,
    ])  # fmt: skip
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.stdout


def test_unmatched_task_ids_are_reported_not_counted_as_no_violation(
    recording: tuple[Path, str],
) -> None:
    db, run_id = recording
    _, text = _replay(db, run_id, f"{__name__}:renamed", "--json")
    out = json.loads(text)
    recorded = sorted({c["task_id"] for c in out["cases"]})
    assert out["summary"]["tasks_unmatched"] == recorded and recorded
    assert out["summary"]["task_rules_applied"] is False
    _, text = _replay(db, run_id, f"{__name__}:renamed")
    assert "could not be applied" in text and "forbidden tools" in text


def test_matching_task_ids_apply_the_rules(recording: tuple[Path, str]) -> None:
    db, run_id = recording
    code, text = _replay(db, run_id, "hbeval_plain.examples:tasks", "--json")
    out = json.loads(text)
    assert out["summary"]["tasks_unmatched"] == []
    assert out["summary"]["task_rules_applied"] is True
    assert out["summary"]["violations"] > 0 and code == 1  # the planted transfer_funds calls
