"""Finding 10 of the second adversarial pass: the read-only MCP server wrote.

``recall_memory`` and ``explain`` opened EDM read-write and created four ``edm_*`` tables (the
store's hash changed), and failed on an immutable store; ``reliability_trend`` served
hand-edited report figures that ``run_metrics`` refuses. The tools now read EDM through a
read-only connection and recheck every report they serve.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from hbeval.mcp_server._tools import StoreTools, ToolInputError
from tests.adversarial._agents import stored_careful_run


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tables(db: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One store without EDM tables, one whose careful run EDM admitted episodes from."""
    from hbeval.memory import EDM
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery
    from hbeval_plain.examples import careful, tasks

    plain = stored_careful_run(tmp_path_factory.mktemp("plain"), "store.db")
    with_edm = tmp_path_factory.mktemp("edm") / "store.db"
    with open_store(str(with_edm)) as store:
        edm = EDM(with_edm)
        try:
            run_battery(
                None, careful, tasks, Battery.hbeval(n_scenarios=6, seed=42), trials=1,
                store=store, run_id="r1", memory=edm,
            )  # fmt: skip
            admitted = edm.count()
        finally:
            edm.close()
    assert admitted > 0
    for db in (plain, with_edm):  # settle the WAL into the file, as a finished store is
        sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").connection.close()
    return {"plain": plain, "edm": with_edm}


def _question() -> str:
    from hbeval_plain.examples import tasks

    return str(tasks[0].question)


def test_recall_and_explain_create_no_tables_and_leave_the_store_unchanged(
    stores: dict[str, Path],
) -> None:
    db = stores["plain"]
    before, tables = _digest(db), _tables(db)
    tools = StoreTools(db)
    recalled = tools.recall_memory(_question(), "careful", 3)
    explained = tools.explain(_question(), "careful")
    assert recalled["count"] == 0 and explained
    assert _tables(db) == tables and not any(t.startswith("edm_") for t in tables)
    assert _digest(db) == before


def test_recall_reads_the_admitted_episodes_without_writing(stores: dict[str, Path]) -> None:
    db = stores["edm"]
    before = _digest(db)
    from hbeval.memory import EDM

    edm = EDM(db)  # the writer's own view, for the expected answer
    try:
        expected = [
            m.as_dict()["episode_id"]
            for m in edm.retrieve(_question(), edm.list_episodes()[0].agent_id, 2)
        ]
        agent = edm.list_episodes()[0].agent_id
    finally:
        edm.close()
    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").connection.close()
    before = _digest(db)
    got = StoreTools(db).recall_memory(_question(), agent, 2)
    assert [p["episode_id"] for p in got["precedents"]] == expected and expected
    assert _digest(db) == before


def test_memory_tools_work_on_a_store_in_a_read_only_folder(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes through read-only permissions; the immutable open is the same")
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "store.db"
    db.write_bytes(stores["edm"].read_bytes())
    db.chmod(stat.S_IRUSR)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        got = StoreTools(db).recall_memory(_question(), "careful", 2)
        assert got["count"] >= 0
    finally:
        folder.chmod(stat.S_IRWXU)


def test_memory_tools_work_on_an_immutable_store(stores: dict[str, Path], tmp_path: Path) -> None:
    import subprocess

    db = tmp_path / "store.db"
    db.write_bytes(stores["plain"].read_bytes())
    done = subprocess.run(["chattr", "+i", str(db)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot make the file immutable here: {done.stderr.strip() or 'chattr'}")
    try:
        before = _digest(db)
        assert StoreTools(db).recall_memory(_question(), "careful", 2)["count"] == 0
        assert StoreTools(db).explain(_question(), "careful")
        assert _digest(db) == before
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=False)


def test_reliability_trend_refuses_a_hand_edited_report(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(stores["plain"].read_bytes())
    conn = sqlite3.connect(db)
    try:
        ((report_id, body),) = conn.execute("SELECT report_id, body FROM reports").fetchall()
        doc = json.loads(body)
        doc["metrics"]["pei"] = 0.999  # 0.9028 from its trials
        conn.execute(
            "UPDATE reports SET body = ? WHERE report_id = ?", (json.dumps(doc), report_id)
        )
        conn.commit()
    finally:
        conn.close()
    tools = StoreTools(db)
    with pytest.raises(ToolInputError) as run_metrics:
        tools.run_metrics("r1")
    with pytest.raises(ToolInputError) as trend:
        tools.reliability_trend(doc["run"]["agent_id"])
    assert "does not follow from its own trials" in str(trend.value)
    assert "r1" in str(trend.value) and "does not follow" in str(run_metrics.value)


def test_reliability_trend_still_serves_genuine_reports(stores: dict[str, Path]) -> None:
    tools = StoreTools(stores["plain"])
    doc: Any = tools.run_metrics("r1")
    trend = tools.reliability_trend(doc["agent_id"] if "agent_id" in doc else "careful")
    assert trend["run_count"] >= 1
