"""Finding 9 of the second adversarial pass: "nothing stored" did not always hold.

A tau-bench ``trial`` of 2**63 gave "unexpected error OverflowError" and left a ``running`` run;
a full disk left the same; on PostgreSQL a NUL in a task id was refused "nothing was written"
while the run row stayed; ``store copy`` after kill -9 or a full disk left runs marked
``completed`` with trials missing. An import is now one transaction, and so is each run a copy
writes: refused, killed or out of space, the store holds the whole run or nothing of it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.store import RUN_COMPLETED, InMemoryStore, RunRecord, TrialRecord, open_store


def _records(n: int, size: int = 0, prefix: str = "task") -> list[dict[str, Any]]:
    """tau-bench records (task_id, trial, reward, traj, info), ``size`` filler bytes each."""
    out = []
    for i in range(n):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "get_order", "arguments": json.dumps({"order_id": f"A{i}"})},
        }
        traj = [
            {"role": "user", "content": "Where is my order? " + "x" * size},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "name": "get_order", "content": "shipped"},
            {"role": "assistant", "content": "It has shipped. " + "y" * size},
        ]
        out.append({"task_id": f"{prefix}-{i}", "trial": 0, "reward": 1.0, "traj": traj})
    return out


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def hb(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    assert "unexpected error" not in res.output, res.output
    return res


def _runs(db: Path) -> list[tuple[str, str, int]]:
    """(run id, status, trials stored) of every run, read with plain sqlite3."""
    conn = sqlite3.connect(db)
    try:
        return [
            (
                run_id,
                status,
                conn.execute("SELECT COUNT(*) FROM trials WHERE run_id = ?", (run_id,)).fetchone()[
                    0
                ],
            )
            for run_id, status in conn.execute("SELECT run_id, status FROM runs ORDER BY run_id")
        ]
    finally:
        conn.close()


@pytest.mark.parametrize("trial", [2**63, 10**30])
def test_a_trial_number_past_64_bits_is_refused_naming_it_and_nothing_is_stored(
    tmp_path: Path, trial: int
) -> None:
    records = _records(3)
    records[1]["trial"] = trial
    src = _write(tmp_path / "tau.json", records)
    db = tmp_path / "hb.db"
    res = hb(["import", "tau-bench", str(src), "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "nothing stored" in res.output and "[1].trial" in res.output, res.output
    assert "tau.json" in res.output and "2**63 - 1" in res.output
    assert not db.exists() or _runs(db) == []


def test_a_structural_error_late_in_a_file_leaves_no_run(tmp_path: Path) -> None:
    records = _records(5)
    records[4]["traj"][1]["tool_calls"] = 7  # not a list
    src = _write(tmp_path / "tau.json", records)
    db = tmp_path / "hb.db"
    res = hb(["import", "tau-bench", str(src), "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "[4].traj[1].tool_calls" in res.output, res.output
    assert not db.exists() or _runs(db) == []


def test_a_write_refused_by_the_store_midway_rolls_the_import_back(tmp_path: Path) -> None:
    """The store's own refusal comes after the run row and the first trials were written:
    one transaction takes all of them back. Two records with one (task, trial) pair are
    numbered on (trial 2**63 - 1, then 2**63), which only the store can refuse."""
    records = _records(4)
    records[2]["task_id"] = records[3]["task_id"] = "same"
    records[2]["trial"] = records[3]["trial"] = 2**63 - 1
    src = _write(tmp_path / "tau.json", records)
    db = tmp_path / "hb.db"
    res = hb(["import", "tau-bench", str(src), "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "nothing stored" in res.output and "trial_index" in res.output, res.output
    assert _runs(db) == []  # not even a `running` row


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_store_transaction_keeps_all_or_nothing(tmp_path: Path, kind: str) -> None:
    store: Any = open_store(str(tmp_path / "hb.db")) if kind == "sqlite" else InMemoryStore()
    run = RunRecord(
        run_id="r", agent_id="a", battery="b", measurement_fingerprint="m", created_at=1.0
    )

    def trial(key: str, index: int) -> TrialRecord:
        return TrialRecord(
            run_id="r",
            trial_key=key,
            task_id="t",
            scenario_index=0,
            trial_index=index,
            outcome="pass",
        )

    with pytest.raises(ValueError, match="trial_index"), store.transaction():
        store.start_run(run)
        store.record_trial(trial("s000-t0", 0))
        store.record_trial(trial("s000-t1", 2**63))
    assert store.get_run("r") is None
    with store.transaction():
        store.start_run(run)
        store.record_trial(trial("s000-t0", 0))
        with pytest.raises(ValueError):  # a refused write inside can be caught ...
            store.record_trial(trial("s000-t1", -1))
        store.finish_run("r", RUN_COMPLETED)
    assert store.get_run("r").status == RUN_COMPLETED  # ... and the rest is kept
    assert [t.trial_key for t in store.list_trials("r")] == ["s000-t0"]
    store.close()


def test_on_postgres_a_nul_in_a_task_id_leaves_no_run_row(
    tmp_path: Path, postgres_url: str
) -> None:
    records = _records(3)
    records[2]["task_id"] = "bad\x00id"
    src = _write(tmp_path / "tau.json", records)
    res = hb(["import", "tau-bench", str(src), "--db", postgres_url])
    assert res.exit_code == 2, res.output
    assert "nothing" in res.output, res.output
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 0


# ----------------------------------------------------------------- a full disk, kill -9
@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted for the test: a real file system that runs out of space."""
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError as exc:
        pytest.skip(f"cannot mount a small tmpfs to fill ({exc})")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False, timeout=30)


def test_a_full_disk_during_an_import_leaves_the_store_as_it_was(
    tmp_path: Path, small_disk: Path
) -> None:
    db = small_disk / "hb.db"
    first = _write(tmp_path / "first.json", _records(2, prefix="first"))
    assert (
        hb(["import", "tau-bench", str(first), "--db", str(db), "--run-id", "first"]).exit_code == 0
    )
    big = _write(tmp_path / "big.json", _records(120, size=20_000))  # ~5 MB of events
    res = hb(["import", "tau-bench", str(big), "--db", str(db), "--run-id", "big"])
    assert res.exit_code == 2, res.output
    assert "full" in res.output and "damaged" not in res.output, res.output
    assert _runs(db) == [("first", RUN_COMPLETED, 2)]


def _big_source(tmp_path: Path, n: int) -> Path:
    src = tmp_path / "src.db"
    data = _write(tmp_path / "big.json", _records(n, size=4000))
    assert hb(["import", "tau-bench", str(data), "--db", str(src), "--run-id", "r"]).exit_code == 0
    return src


def test_a_full_disk_during_store_copy_leaves_no_completed_run_with_trials_missing(
    tmp_path: Path, small_disk: Path
) -> None:
    src = _big_source(tmp_path, 300)
    dst = small_disk / "dst.db"
    res = hb(["store", "copy", str(src), str(dst)])
    assert res.exit_code == 2, res.output
    assert "full" in res.output, res.output
    assert _runs(dst) == []


def test_store_copy_killed_midway_leaves_no_completed_run_with_trials_missing(
    tmp_path: Path,
) -> None:
    src = _big_source(tmp_path, 400)
    dst = tmp_path / "dst.db"
    wal = Path(f"{dst}-wal")
    env = {**os.environ, "COVERAGE_PROCESS_START": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hbeval.cli", "store", "copy", str(src), str(dst)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if wal.exists() and wal.stat().st_size > 300_000:  # trials are being written
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the copy ended before it could be killed"
    for run_id, status, trials in _runs(dst):
        assert status != RUN_COMPLETED or trials == 400, (run_id, trials)
    assert _runs(dst) == []  # the run was one transaction: none of it was committed
    # Copying again completes it.
    res = hb(["store", "copy", str(src), str(dst)])
    assert res.exit_code == 0, res.output
    assert _runs(dst) == [("r", RUN_COMPLETED, 400)]


def _fill(disk: Path) -> None:
    """Fill the file system at ``disk`` until a write fails for lack of space."""
    with (disk / "filler").open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass


def test_report_and_passport_outputs_on_a_full_disk_keep_the_previous_file(
    tmp_path: Path, small_disk: Path
) -> None:
    src = _write(tmp_path / "tau.json", _records(3))
    db = tmp_path / "hb.db"
    assert hb(["import", "tau-bench", str(src), "--db", str(db), "--run-id", "r"]).exit_code == 0
    key = tmp_path / "key.pem"
    assert hb(["passport", "keygen", "--out", str(key)]).exit_code == 0
    report, passport = small_disk / "report.json", small_disk / "passport.json"
    assert hb(["report", "r", "--db", str(db), "--out", str(report)]).exit_code == 0
    signed = hb(["passport", "sign", str(report), "--db", str(db), "--key", str(key),
                 "--out", str(passport)])  # fmt: skip
    assert signed.exit_code == 0, signed.output
    before = {p: p.read_bytes() for p in (report, passport)}
    (tmp_path / "copy.json").write_bytes(before[report])  # the input, off the full disk
    _fill(small_disk)
    again = hb(["report", "r", "--db", str(db), "--out", str(report)])
    resigned = hb(["passport", "sign", str(tmp_path / "copy.json"), "--db", str(db),
                   "--key", str(key), "--out", str(passport)])  # fmt: skip
    assert again.exit_code == 2, again.output
    assert "No space" in again.output or "full" in again.output, again.output
    assert resigned.exit_code == 2, resigned.output
    assert "No space" in resigned.output or "full" in resigned.output, resigned.output
    for path, data in before.items():  # the previous good files, whole
        assert path.read_bytes() == data
    assert sorted(p.name for p in small_disk.iterdir()) == [
        "filler",
        "passport.json",
        "report.json",
    ]
