"""Finding 1 of the second adversarial pass: outputs overwrote the store and exited 0.

``report RUN --db S --html S`` printed "HTML report written" over the SQLite store; so did
``--out S``, an output that is a symlink to the store, ``battery run --db S --out S``,
``passport sign --out S`` and ``passport keygen --out S --force``. Every output path is now
resolved (symlinks followed) and refused with exit 2 when it is the store, its -wal/-shm files,
an input of the same command, a folder or any SQLite database; and every file is written whole
or not at all (a failed write leaves the previous file as it was).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.store import open_store
from tests.adversarial._agents import stored_careful_run

AGENT = "hbeval_plain.examples:careful"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("outputs")
    db = stored_careful_run(root, "store.db")
    hb(["passport", "keygen", "--out", str(root / "k.pem")])
    return {"root": root, "db": db}


def hb(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _attacks(root: Path, db: Path) -> list[tuple[str, list[str]]]:
    link = root / "link-to-store.html"
    if not link.is_symlink():
        link.symlink_to(db)
    wal = Path(f"{db}-wal")
    rep, key = str(root / "report.json"), str(root / "k.pem")
    sign = ["passport", "sign", rep, "--key", key]
    return [
        ("report --html store", ["report", "r1", "--db", str(db), "--html", str(db)]),
        ("report --out store", ["report", "r1", "--db", str(db), "--out", str(db)]),
        ("report --html symlink", ["report", "r1", "--db", str(db), "--html", str(link)]),
        ("report --out wal", ["report", "r1", "--db", str(db), "--out", str(wal)]),
        ("report --out sqlite:/// store", ["report", "r1", "--db", f"sqlite:///{db}", "--out", str(db)]),
        ("report --out its input", ["report", rep, "--out", rep]),
        ("report --out a folder", ["report", rep, "--out", str(root)]),
        ("report --html = --out", ["report", rep, "--out", str(root / "a"), "--html", str(root / "a")]),
        ("battery run --out store", ["battery", "run", AGENT, "--scenarios", "6", "--trials", "1",
                                     "--db", str(db), "--out", str(db)]),
        ("passport sign --out store", [*sign, "--db", str(db), "--out", str(db)]),
        ("passport sign --out store, no --db", [*sign, "--out", str(db)]),
        ("passport sign --out its report", [*sign, "--out", rep]),
        ("passport sign --out its key", [*sign, "--out", key]),
        ("passport keygen --out store --force", ["passport", "keygen", "--out", str(db), "--force"]),
    ]  # fmt: skip


def test_no_output_overwrites_the_store_or_an_input(world: dict[str, Any]) -> None:
    root, db = world["root"], world["db"]
    before = {p: _digest(p) for p in (db, root / "report.json", root / "k.pem")}
    for label, args in _attacks(root, db):
        res = hb(args)
        assert res.exit_code == 2, (label, res.output)
        assert "--out" in res.stderr or "--html" in res.stderr, (label, res.stderr)
        for path, digest in before.items():
            assert _digest(path) == digest, (label, path)
    assert not (root / "a").exists()
    with open_store(str(db), read_only=True) as store:
        assert store.get_report("r1") is not None


def test_a_good_output_is_still_written(world: dict[str, Any]) -> None:
    root, db = world["root"], world["db"]
    out = root / "fine" / "r1.json"
    res = hb(["report", "r1", "--db", str(db), "--out", str(out), "--html", str(root / "r1.html")])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["run_id"] == "r1"
    assert (root / "r1.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_a_failed_write_leaves_the_previous_file(tmp_path: Path) -> None:
    from hbeval.store._atomic import write_atomic

    target = tmp_path / "report.json"
    target.write_text("previous good file")

    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    os.fsync = failing_fsync  # type: ignore[assignment]
    try:
        with pytest.raises(OSError, match="No space"):
            write_atomic(target, "new content that never lands")
    finally:
        os.fsync = real_fsync
    assert target.read_text() == "previous good file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temp file left


def test_write_atomic_follows_a_symlink_and_keeps_the_mode(tmp_path: Path) -> None:
    from hbeval.store._atomic import write_atomic

    real = tmp_path / "real.pem"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "link.pem"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert real.stat().st_mode & 0o777 == 0o600


def test_init_never_writes_through_a_symlink(tmp_path: Path) -> None:
    """Finding 14: ``hbeval init --force`` followed a dangling symlink out of its folder."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "agent.py").write_text("def make_agent():\n    return None\n")
    (project / "tasks.yaml").symlink_to(outside / "planted.yaml")  # dangling
    for extra in ([], ["--force"]):
        res = hb(["init", str(project / "agent.py"), *extra])
        assert res.exit_code == 2, res.output
        assert "symlink" in res.stderr
    assert list(outside.iterdir()) == []
    assert not (project / "verifiers.py").exists()
