"""Finding 14 (smaller items) of the second adversarial pass: ``floors={"frr": "off"}`` raised a
raw TypeError; a read-only store read "not an SQLite database" and a full disk "damaged store".
Each now says what is wrong in plain words."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from tests.adversarial._agents import stored_careful_run


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stored_careful_run(tmp_path_factory.mktemp("small"), "store.db")


def _report(store: Path) -> Any:
    from hbeval.store import open_store

    with open_store(str(store), read_only=True) as st:
        return st.get_report("r1")


@pytest.mark.parametrize("value", ["off", [0.5], {"min": 0.5}, True])
def test_a_floor_that_is_not_a_number_is_refused_naming_it(store: Path, value: Any) -> None:
    from hbeval.scoring import decide_verdict
    from hbeval.testing import assert_gate

    report = _report(store)
    with pytest.raises(ValueError, match=r"floors\['frr'\] must be a number .* or None"):
        decide_verdict(report, floors={"frr": value})
    with pytest.raises(ValueError, match=r"floors\['frr'\] must be a number"):
        assert_gate(report, floors={"frr": value})
    with pytest.raises(ValueError, match=r"ceilings\['duplicate_side_effects'\] must be a number"):
        decide_verdict(report, ceilings={"duplicate_side_effects": value})


def test_numbers_and_none_still_set_and_remove_floors(store: Path) -> None:
    from hbeval.scoring import decide_verdict

    report = _report(store)
    assert decide_verdict(report, floors={"frr": None, "pei": 0.1}).verdict


def test_an_immutable_store_reads_as_not_writable(store: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(store.read_bytes())
    done = subprocess.run(["chattr", "+i", str(db)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot make the file immutable here: {done.stderr.strip() or 'chattr'}")
    try:
        src = tmp_path / "tau.json"
        src.write_text(json.dumps([{"task_id": "t", "trial": 0, "reward": 1.0, "traj": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}]))  # fmt: skip
        res = CliRunner().invoke(app, ["import", "tau-bench", str(src), "--db", str(db)])
        assert res.exit_code == 2, res.output
        assert "cannot be written" in res.output and "read-only" in res.output, res.output
        assert "not an SQLite database" not in res.output and "damaged" not in res.output
        listed = CliRunner().invoke(app, ["runs", "list", "--db", str(db)])
        assert listed.exit_code == 0 and "r1" in listed.output  # reads still work
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=False)
