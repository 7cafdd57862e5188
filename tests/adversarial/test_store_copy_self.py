"""Finding 14 (last item) of the second adversarial pass: ``store copy S sqlite:///S`` was not
refused. A store named two ways (a path, an ``sqlite:///`` URL, a symlink, a relative path) is
one store: copying it onto itself is refused, exit 2, and the store is left as it was."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from tests.adversarial._agents import stored_careful_run


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stored_careful_run(tmp_path_factory.mktemp("copyself"), "store.db")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hb(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


def test_a_store_copied_onto_itself_under_another_name_is_refused(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = store.parent / "link.db"
    if not link.is_symlink():
        link.symlink_to(store)
    monkeypatch.chdir(store.parent)
    before = _digest(store)
    for dst in (f"sqlite:///{store}", str(link), "store.db", f"sqlite:///{os.path.relpath(store)}"):
        res = hb(["store", "copy", str(store), dst])
        assert res.exit_code == 2, (dst, res.output)
        assert "same store" in res.output, res.output
    assert _digest(store) == before


def test_a_copy_to_another_store_still_works(store: Path, tmp_path: Path) -> None:
    res = hb(["store", "copy", str(store), f"sqlite:///{tmp_path / 'other.db'}"])
    assert res.exit_code == 0, res.output
    assert "copied 1 run(s)" in res.output
