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
from typing import Any

import pytest

from .test_importers import PI_COMPACT, TAU, hb

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
BAD = ["NaN", "Infinity", "-Infinity", "1e400"]
SESSION = PI_COMPACT if PI_COMPACT.is_file() else FIXTURES / "openclaw_session.jsonl"


def tau_records() -> list[dict[str, Any]]:
    """Three tau-bench records: the corpus's first three, or (without the corpora) three
    written here in its layout (task_id, trial, reward, traj of chat messages, info)."""
    if TAU.is_file():
        records: list[dict[str, Any]] = json.loads(TAU.read_text(encoding="utf-8"))[:3]
        return records
    call = {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}
    traj = [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": "Where is my order?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_order", "content": "shipped"},
        {"role": "assistant", "content": "It has shipped."},
    ]
    return [{"task_id": i, "trial": 0, "reward": 1.0, "traj": traj, "info": {}} for i in range(3)]


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


@pytest.mark.parametrize("bad", BAD)
def test_tau_bench(tmp_path: Path, bad: str) -> None:
    records = tau_records()
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


@pytest.mark.parametrize("bad", BAD)
def test_labels_file(tmp_path: Path, bad: str) -> None:
    from hbeval.importers import read_trials

    source_id = read_trials("pi", [SESSION])[0].source_id
    labels = tmp_path / "labels.json"
    labels.write_text("{" + json.dumps(source_id) + ": " + bad + "}", encoding="utf-8")
    err = refused(tmp_path / "hb.db", "pi", str(SESSION), "--labels", str(labels))
    assert source_id in err and "finite reward" in err


def test_a_finite_reward_still_decides(tmp_path: Path) -> None:
    records = tau_records()[:2]
    records[0]["reward"], records[1]["reward"] = 1, 0.5  # an int pass, a partial reward
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    proc = hb("import", "tau-bench", str(path), "--db", str(tmp_path / "hb.db"), "--json")
    assert proc.exit_code == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["trials"] == 2 and report["labelled"] is True
