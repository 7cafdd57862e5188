"""Finding 9: no command ever ends in a traceback.

On main, 100k-deep JSON, binary input, a damaged SQLite page, a stored report that is not an
object, a dropped table, a bad ``runs.config`` and an output path that is a directory or cannot
be written all ended in tracebacks (exit 1, the code ``gate`` uses for "check failed"), the last
only after every trial had run; a read-only store refused even reads. Every one of them is now
exit 2 with one line naming the problem.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.store import StoreDamagedError, StoreError, open_store
from tests.adversarial._agents import stored_careful_run

AGENT = "hbeval_plain.examples:careful"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store with one completed run, its report, and damaged copies of the store."""
    root = tmp_path_factory.mktemp("hostile")
    good = stored_careful_run(root, "good.db")
    (root / "deep.json").write_text(DEEP)
    (root / "deep.jsonl").write_text('{"format":"hb-events/1"}\n' + DEEP + "\n")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 8)

    def damaged(name: str, sql: str | None = None, *, smash: bool = False) -> str:
        path = root / f"{name}.db"
        shutil.copy(good, path)
        if sql is not None:
            conn = sqlite3.connect(path)
            conn.executescript(sql)
            conn.close()
        if smash:  # overwrite whole pages in the middle of the file
            data = bytearray(path.read_bytes())
            data[8192 : min(len(data), 24576)] = b"\xa5" * (min(len(data), 24576) - 8192)
            path.write_bytes(bytes(data))
        return str(path)

    stores = {
        "damaged_page": damaged("page", smash=True),
        "report_not_object": damaged("notobj", "UPDATE reports SET body = '[1, 2]'"),
        "dropped_trials": damaged("notrials", "DROP TABLE trials"),
        "dropped_runs": damaged("noruns", "PRAGMA foreign_keys = OFF; DROP TABLE runs"),
        "config_not_json": damaged("cfg", "UPDATE runs SET config = 'not json'"),
        "config_not_object": damaged("cfg2", "UPDATE runs SET config = '[1]'"),
        "event_not_json": damaged("ev", "UPDATE event_rows SET body = '{not json'"),
        "not_sqlite": str(root / "binary.bin"),
        "a_directory": str(root),
    }
    return {"root": root, "stores": stores, "good": str(good)}


def _invoke(args: list[str], stdin: bytes | None = None) -> Any:
    return CliRunner().invoke(app, args, input=stdin)


def _no_traceback(res: Any) -> bool:
    return res.exception is None or isinstance(res.exception, SystemExit)


def _one_line_error(res: Any) -> str:
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("hbeval", "error:"))]
    assert len(errors) == 1, res.stderr
    assert "Traceback" not in res.output
    return errors[0]


def _hostile_commands(world: dict[str, Any]) -> Iterator[tuple[str, list[str], bytes | None]]:
    root: Path = world["root"]
    for name in ("deep.json", "binary.bin"):
        f = str(root / name)
        yield f"gate {name}", ["gate", f], None
        yield f"report {name}", ["report", f], None
        yield f"compare {name}", ["compare", f, f], None
        yield f"passport sign {name}", ["passport", "sign", f, "--out", str(root / "p.json")], None
    yield "passport verify deep", ["passport", "verify", str(root / "deep.json")], None
    yield "score deep", ["score", str(root / "deep.jsonl")], None
    yield "score binary file", ["score", str(root / "binary.bin")], None
    yield "score binary stdin", ["score", "-"], bytes(range(256)) * 4
    yield "score a directory", ["score", str(root)], None
    for label, db in world["stores"].items():
        yield f"runs list {label}", ["runs", "list", "--db", db], None
        yield f"report {label}", ["report", "r1", "--db", db], None
        html = str(root / f"{label}.html")
        yield f"report --html {label}", ["report", "r1", "--db", db, "--html", html], None
        yield f"compare {label}", ["compare", "r1", "r1", "--db", db], None
        yield f"gate {label}", ["gate", "r1", "--db", db], None
        yield f"memory list {label}", ["memory", "list", "--db", db], None
        run = ["battery", "run", AGENT, "--scenarios", "6", "--trials", "1", "--db", db]
        yield f"battery run {label}", [*run, "--run-id", "r1"], None
    report = str(root / "report.json")
    yield "report --html dir", ["report", report, "--html", str(root)], None
    yield "report --html unwritable", ["report", report, "--html", "/proc/no/r.html"], None
    yield "report --out dir", ["report", report, "--out", str(root)], None
    for label, out in (("dir", str(root)), ("unwritable", "/proc/no/r.json")):
        run = ["battery", "run", AGENT, "--scenarios", "6", "--trials", "1"]
        db = str(root / f"out-{label}.db")
        yield f"battery run --out {label}", [*run, "--db", db, "--out", out], None
    for flag in ("--manifest", "--tasks"):
        for name in ("deep.json", "binary.bin"):
            yield (
                f"battery run {flag} {name}",
                ["battery", "run", AGENT, flag, str(root / name)],
                None,
            )


def test_every_command_on_hostile_input_exits_2_without_a_traceback(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HBEVAL_DEBUG", raising=False)
    tracebacks: list[str] = []
    outcomes: dict[str, int] = {}
    for label, args, stdin in _hostile_commands(world):
        res = _invoke(args, stdin)
        if not _no_traceback(res):
            tracebacks.append(f"{label}: {type(res.exception).__name__}: {res.exception}")
            continue
        outcomes[label] = res.exit_code
    assert tracebacks == []
    assert len(outcomes) >= 80
    # Damage that the command does not touch may leave it working (exit 0 or 3); never exit 1
    # (gate's "check failed") and never a crash.
    assert all(code in (0, 2, 3) for code in outcomes.values()), outcomes
    # (EDM keeps its own tables: a damaged page elsewhere may leave ``memory list`` working.)
    must_refuse = [
        label
        for label in outcomes
        if (
            not label.startswith("memory list damaged")
            and any(
                key in label
                for key in (
                    "deep",
                    "binary",
                    "a directory",
                    "damaged_page",
                    "not_sqlite",
                    "a_directory",
                    "--out",
                    "--html dir",
                    "--html unwritable",
                )
            )
        )
        or ("report_not_object" in label and label.split()[0] in ("report", "compare", "gate"))
        or (label.startswith("runs list config_not"))
    ]
    assert len(must_refuse) >= 40
    assert {label: outcomes[label] for label in must_refuse if outcomes[label] != 2} == {}


@pytest.mark.parametrize(
    ("args_of", "says"),
    [
        (lambda w: ["gate", str(w["root"] / "deep.json")], "nested too deeply"),
        (lambda w: ["score", str(w["root"] / "deep.jsonl")], "line 2: nested too deeply"),
        (lambda w: ["runs", "list", "--db", w["stores"]["damaged_page"]], "malformed"),
        (lambda w: ["report", "r1", "--db", w["stores"]["report_not_object"]], "not a JSON object"),
        (lambda w: ["runs", "list", "--db", w["stores"]["config_not_json"]], "config of run 'r1'"),
        (
            lambda w: [
                "battery",
                "run",
                AGENT,
                "--run-id",
                "r1",
                "--db",
                w["stores"]["dropped_runs"],
            ],
            "no such table: runs",
        ),
        (lambda w: ["report", str(w["root"] / "report.json"), "--html", str(w["root"])], "--html"),
    ],
    ids=[
        "deep-json",
        "deep-jsonl",
        "damaged-page",
        "report-list",
        "bad-config",
        "no-runs",
        "html-dir",
    ],
)
def test_each_message_is_one_line_naming_the_problem(
    world: dict[str, Any], args_of: Any, says: str
) -> None:
    res = _invoke(args_of(world))
    assert _no_traceback(res) and res.exit_code == 2
    assert says in _one_line_error(res)


def test_out_is_checked_before_the_first_trial(world: dict[str, Any]) -> None:
    db = world["root"] / "never.db"
    res = _invoke(["battery", "run", AGENT, "--db", str(db), "--out", str(world["root"])])
    assert res.exit_code == 2 and "--out" in _one_line_error(res)
    assert not db.exists()  # nothing ran, not even the store was created


def test_damaged_store_raises_store_damaged_error(world: dict[str, Any]) -> None:
    with open_store(world["stores"]["report_not_object"], read_only=True) as store:
        with pytest.raises(StoreDamagedError, match="not a JSON object"):
            store.get_report("r1")
    with open_store(world["stores"]["event_not_json"], read_only=True) as store:
        with pytest.raises(StoreDamagedError, match="not a readable hb-events/1 event"):
            list(store.iter_events("r1"))


def _chattr(flag: str, *paths: Path) -> bool:
    try:
        done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, check=False)
    except OSError:
        return False
    return done.returncode == 0


def test_read_commands_work_on_a_store_that_cannot_be_written(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A store in a folder nobody may write (immutable, so even root cannot) is still read."""
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "hb.db"
    shutil.copy(world["good"], db)
    before = db.read_bytes()
    if not _chattr("+i", db, folder):
        pytest.skip("chattr +i is not available here")
    try:
        for args in (["runs", "list"], ["report", "r1"], ["gate", "r1"], ["compare", "r1", "r1"]):
            res = _invoke([*args, "--db", str(db)])
            assert _no_traceback(res) and res.exit_code in (0, 3), res.output
            assert "not an SQLite database" not in res.output
        listed = _invoke(["runs", "list", "--db", str(db), "--json"])
        assert [r["run_id"] for r in json.loads(listed.stdout)["runs"]] == ["r1"]
    finally:
        _chattr("-i", db, folder)
    assert db.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["hb.db"]


def test_read_only_open_never_creates_or_writes(world: dict[str, Any], tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    res = _invoke(["runs", "list", "--db", str(missing)])
    assert res.exit_code == 0 and not missing.exists()
    copy = tmp_path / "copy.db"
    shutil.copy(world["good"], copy)
    before = copy.read_bytes()
    with open_store(str(copy), read_only=True) as store:
        assert store.get_run("r1") is not None
        with pytest.raises(StoreError, match="read-only"):
            store.finish_run("r1", "completed")
    assert copy.read_bytes() == before


def test_the_entry_point_prints_one_line_and_debug_shows_the_traceback(
    world: dict[str, Any],
) -> None:
    args = [sys.executable, "-c", "from hbeval.cli import main; main()"]
    db = world["stores"]["damaged_page"]
    env = {k: v for k, v in os.environ.items() if k != "HBEVAL_DEBUG"}
    quiet = subprocess.run(
        [*args, "runs", "list", "--db", db], capture_output=True, text=True, env=env
    )
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr
    assert len(quiet.stderr.strip().splitlines()) == 1
    loud = subprocess.run(
        [*args, "battery", "run", AGENT, "--db", world["stores"]["dropped_runs"], "--run-id", "r1"],
        capture_output=True,
        text=True,
        env={**env, "HBEVAL_DEBUG": "1"},
    )
    assert "Traceback" in loud.stderr
