"""A reward that is not a finite number decides no success label: the import is refused.

Python's JSON reader accepts ``NaN``, ``Infinity`` and ``-Infinity`` and reads ``1e400`` as an
infinity. Taken as they are, NaN would count as a failed task (``NaN >= 1.0`` is false) and an
infinity as a passed one: a figure from nothing. Each format that reads a reward (tau-bench,
tau2, Hermes samples, a labels file) must refuse them, name the field, and store nothing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .test_importers import PI_COMPACT, TAU, hb, needs_corpora

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
BAD = ["NaN", "Infinity", "-Infinity", "1e400"]


def refused(db: Path, *args: str) -> str:
    proc = hb("import", *args, "--db", str(db))
    assert proc.exit_code == 2, proc.stdout
    if db.exists():
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
        finally:
            conn.close()
    return proc.stderr


@needs_corpora
@pytest.mark.parametrize("bad", BAD)
def test_tau_bench(tmp_path: Path, bad: str) -> None:
    records = json.loads(TAU.read_text(encoding="utf-8"))[:3]
    records[1]["reward"] = "@BAD@"
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(records).replace('"@BAD@"', bad), encoding="utf-8")
    err = refused(tmp_path / "hb.db", "tau-bench", str(path))
    assert "'[1].reward'" in err and "finite number" in err


@pytest.mark.parametrize("bad", BAD)
def test_tau2(tmp_path: Path, bad: str) -> None:
    text = (FIXTURES / "tau2_results.json").read_text(encoding="utf-8")
    assert '"reward": 1.0' in text
    path = tmp_path / "tau2.json"
    path.write_text(text.replace('"reward": 1.0', f'"reward": {bad}', 1), encoding="utf-8")
    err = refused(tmp_path / "hb.db", "tau2", str(path))
    assert ".reward_info.reward'" in err and "finite number" in err


@pytest.mark.parametrize("bad", BAD)
def test_hermes_samples(tmp_path: Path, bad: str) -> None:
    lines = (FIXTURES / "hermes_samples.jsonl").read_text(encoding="utf-8").splitlines()
    second = json.loads(lines[1])  # the first line names the format: it keeps its label
    del second["passed"]  # the label then comes from the reward
    second["reward"] = "@BAD@"
    lines[1] = json.dumps(second).replace('"@BAD@"', bad)
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = refused(tmp_path / "hb.db", "hermes", str(path))
    assert "samples.jsonl:2: field 'reward'" in err and "finite number" in err


@needs_corpora
@pytest.mark.parametrize("bad", BAD)
def test_labels_file(tmp_path: Path, bad: str) -> None:
    labels = tmp_path / "labels.json"
    labels.write_text('{"ffae836b-9420-4060-ac13-7745215f90ff/p1": ' + bad + "}", encoding="utf-8")
    err = refused(tmp_path / "hb.db", "pi", str(PI_COMPACT), "--labels", str(labels))
    assert "p1" in err and "finite reward" in err


@needs_corpora
def test_a_finite_reward_still_decides(tmp_path: Path) -> None:
    records = json.loads(TAU.read_text(encoding="utf-8"))[:2]
    records[0]["reward"], records[1]["reward"] = 1, 0.5  # an int pass, a partial reward
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    proc = hb("import", "tau-bench", str(path), "--db", str(tmp_path / "hb.db"), "--json")
    assert proc.exit_code == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["trials"] == 2 and report["labelled"] is True
