"""Unbounded inputs: ``/dev/zero`` as ``--labels``, ``--invariants``, ``--battery``, a task file
or ``score -`` was read until MemoryError. Each is now refused at a documented size limit
(``hbeval._inputs``; ``hbeval_core.faults.userbattery.BATTERY_FILE_LIMIT``), exit 2, naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from tests.adversarial._agents import stored_careful_run

ZERO = Path("/dev/zero")
pytestmark = pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero on this system")


def hb(args: list[str], **kw: Any) -> Any:
    res = CliRunner().invoke(app, args, **kw)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output and "out of memory" not in res.output, res.output
    return res


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same limits, smaller, so the test reads 1 MiB of zeros rather than 64 or 512."""
    import hbeval._inputs as inputs

    monkeypatch.setattr(inputs, "INPUT_FILE_LIMIT", 1 << 20)
    monkeypatch.setattr(inputs, "STDIN_LIMIT", 1 << 20)
    monkeypatch.setattr(inputs.read_bounded, "__defaults__", (1 << 20,))


def test_labels_from_dev_zero_are_refused_at_the_limit(tmp_path: Path, small_limits: None) -> None:
    rec = [{"task_id": "t", "trial": 0, "reward": 1.0, "traj": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}]  # fmt: skip
    src = tmp_path / "tau.json"
    src.write_text(json.dumps(rec))
    res = hb(
        ["import", "tau-bench", str(src), "--db", str(tmp_path / "hb.db"), "--labels", str(ZERO)]
    )
    assert res.exit_code == 2 and "larger than 1 MiB" in res.output and "--labels" in res.output


def test_invariants_from_dev_zero_are_refused_at_the_limit(
    tmp_path: Path, small_limits: None
) -> None:
    db = stored_careful_run(tmp_path, "store.db")
    res = hb([
        "replay", "r1", "--target", "hbeval_plain.examples:careful", "--invariants", str(ZERO),
        "--db", str(db),
    ])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "larger than 1 MiB" in res.output and "--invariants" in res.output


def test_score_of_an_endless_stdin_is_refused_at_the_limit() -> None:
    """A real process reading /dev/zero on stdin (the limit set to 1 MiB in that process)."""
    import subprocess
    import sys

    code = (
        "import hbeval._inputs as inputs\n"
        "inputs.STDIN_LIMIT = 1 << 20\n"
        "import sys\n"
        "sys.argv = ['hbeval', 'score', '-']\n"
        "from hbeval.cli._app import main\n"
        "main()\n"
    )
    with ZERO.open("rb") as endless:
        done = subprocess.run(
            [sys.executable, "-c", code], stdin=endless, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "stdin is larger than 1 MiB" in done.stderr and "Traceback" not in done.stderr


def test_score_of_a_trace_on_stdin_still_works() -> None:
    from hbeval.cli._demo import demo_trace_path

    res = hb(["score", "-", "--json"], input=demo_trace_path().read_bytes())
    assert res.exit_code in (0, 1), res.output
    assert json.loads(res.output)["step_count"] > 0


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_battery_file_linked_to_dev_zero_is_refused_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    import hbeval_core.faults.userbattery as userbattery

    monkeypatch.setattr(userbattery, "BATTERY_FILE_LIMIT", 1 << 20)
    link = tmp_path / f"battery{suffix}"
    link.symlink_to(ZERO)
    res = hb(["battery", "build", "--battery", str(link)])
    assert res.exit_code == 2, res.output
    assert "larger than 1 MiB" in res.output and "--battery" in res.output
    assert str(link) in res.output


def test_the_battery_file_limit_is_16_mib_and_a_real_file_still_loads() -> None:
    from hbeval_core.faults.userbattery import BATTERY_FILE_LIMIT, BatteryFileError
    from hbeval_core.faults.userbattery import load_battery_file as load

    assert BATTERY_FILE_LIMIT == 16 * 1024 * 1024
    example = sorted((Path(__file__).parents[2] / "examples" / "batteries").glob("*.yaml"))[0]
    assert load(example, seed=0).scenarios
    with pytest.raises(BatteryFileError, match="larger than 16 MiB"):
        load(ZERO, seed=0)


def test_a_task_file_past_the_limit_is_refused(tmp_path: Path, small_limits: None) -> None:
    big = tmp_path / "tasks.yaml"
    with big.open("wb") as fh:
        fh.truncate((1 << 20) + 10)  # sparse: 1 MiB of zero bytes and a little more
    res = hb(["battery", "run", "hbeval_plain.examples:careful", "--tasks", str(big),
              "--db", str(tmp_path / "hb.db")])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "larger than 1 MiB" in res.output and "task file" in res.output


def test_a_task_file_linked_to_dev_zero_is_refused_as_not_a_file(tmp_path: Path) -> None:
    link = tmp_path / "tasks.yaml"
    link.symlink_to(ZERO)
    res = hb(["battery", "run", "hbeval_plain.examples:careful", "--tasks", str(link),
              "--db", str(tmp_path / "hb.db")])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "not a regular file" in res.output and str(link) in res.output
