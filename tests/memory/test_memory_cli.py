"""`hbeval memory`: list, show, delete, explain; absent store defers with exit 0; bad input exit 2.

The commands run on both stores EDM lives in (``backend``: a SQLite file and a PostgreSQL
database), with the same output.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli._memory import memory_app
from hbeval.memory import EDM
from tests.memory_traces import handled, trace

from .conftest import Backend

REFUND = "Refund the duplicate charge on order 4411"
QUERY = "Order 4411 was charged twice; issue a refund for the extra charge"


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2 always keeps stderr apart
        return CliRunner()


def run(*args: str) -> Any:
    return runner().invoke(memory_app, list(args))


@pytest.fixture
def db(backend: Backend) -> str:
    path = backend.db
    with EDM(path) as edm:
        edm.admit(
            {
                "agent_id": "default",
                "run_id": "run-1",
                "trial_key": "s0-t0",
                "context": REFUND,
                "summary": "lookup_order -> refund -> verified",
                "events": trace(3),  # PEI 1.0, TI 5.0, FRR and IRS undefined (no fault)
                "metrics": {"pei": 0.8333, "frr": None, "irs": None, "ti": 4.5},
                "metrics_undefined": {"frr": "no_fault_observed", "irs": "no_fault_observed"},
                "evidence": "E2",
                "passed": True,
            }
        )
        edm.admit(
            {
                "agent_id": "ops",
                "run_id": "run-2",
                "trial_key": "s0-t0",
                "context": "Restart the payment service",
                "events": handled(3),  # PEI 0.5, IRS 1.0, TI 5.0: the handling route
                "metrics": {"pei": 0.1, "irs": 0.9, "ti": 2.0},
                "evidence": "E1",
                "passed": True,
            }
        )
    return path


def test_list_default_agent_and_json(db: str, backend: Backend) -> None:
    res = run("list", "--db", str(db))
    assert res.exit_code == 0, res.output
    assert "route=elaborate" in res.stdout and "FRR undefined (no_fault_observed)" in res.stdout
    assert "agent=ops" not in res.stdout
    res = run("list", "--db", backend.url, "--agent-id", "ops", "--json")
    doc = json.loads(res.stdout)
    assert doc["count"] == 1 and doc["episodes"][0]["route"] == "handling"
    # handled(3): one delivered fault, failed, then handled through another tool
    assert doc["episodes"][0]["metrics"] == {"pei": 0.5, "frr": 0.0, "irs": 1.0, "ti": 5.0}
    assert doc["episodes"][0]["undefined"] == {}
    res = run("list", "--db", str(db), "--all-agents", "--json")
    assert json.loads(res.stdout)["count"] == 2


def test_show_and_delete(db: str) -> None:
    (eid,) = [
        e["episode_id"]
        for e in json.loads(run("list", "--db", str(db), "--json").stdout)["episodes"]
    ]
    res = run("show", eid, "--db", str(db))
    assert (
        res.exit_code == 0
        and "pei: 1.0" in res.stdout
        and "frr: undefined (no_fault_observed)" in res.stdout
    )
    assert json.loads(run("show", eid, "--db", str(db), "--json").stdout)["run_id"] == "run-1"
    # another agent cannot see or delete it
    res = run("show", eid, "--db", str(db), "--agent-id", "ops")
    assert res.exit_code == 2 and "EPISODE_ID" in res.stderr
    assert run("delete", eid, "--db", str(db), "--agent-id", "ops").exit_code == 2
    res = run("delete", eid, "--db", str(db))
    assert res.exit_code == 0 and f"deleted {eid}" in res.stdout
    assert run("show", eid, "--db", str(db)).exit_code == 2
    out = json.loads(run("explain", QUERY, "--db", str(db), "--json").stdout)
    assert out["grounded"] is False


def test_explain_grounded_and_deferral(db: str) -> None:
    res = run("explain", QUERY, "--db", str(db), "--json")
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    assert (
        out["grounded"] is True
        and "PEI 1.0" in out["explanation"]
        and "TI 5.0" in out["explanation"]
    )
    res = run("explain", QUERY, "--db", str(db), "--agent-id", "ops")
    assert res.exit_code == 0 and res.stdout.startswith("Uncertain — human review advised")


def test_absent_store_defers_with_exit_zero_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "hbeval.db"
    res = run("explain", QUERY, "--db", str(missing), "--json")
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    assert (
        out["grounded"] is False and out["deferred_to_human"] is True and out["similarity"] is None
    )
    assert run("list", "--db", str(missing)).exit_code == 0
    assert not missing.exists() and not missing.parent.exists()


def test_empty_store_file_defers(tmp_path: Path) -> None:
    path = tmp_path / "hbeval.db"
    sqlite3.connect(path).close()
    res = run("explain", QUERY, "--db", str(path), "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["grounded"] is False


def test_a_database_without_edm_tables_reads_as_empty_and_stays_so(postgres_url: str) -> None:
    from hbeval.store import open_store

    open_store(postgres_url).close()  # a store's tables, no EDM's
    pg = Backend("postgres", postgres_url)
    before = pg.tables()
    res = run("explain", QUERY, "--db", postgres_url, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["grounded"] is False
    res = run("list", "--db", postgres_url, "--all-agents", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["count"] == 0
    assert run("delete", "ep-0", "--db", postgres_url).exit_code == 2
    assert pg.tables() == before  # reading created nothing


def test_an_unreachable_server_exits_2_naming_the_option() -> None:
    res = run("list", "--db", "postgresql://nobody:secret@127.0.0.1:1/hb")
    assert res.exit_code == 2
    assert "--db: cannot connect to postgresql://nobody:***@127.0.0.1:1/hb" in res.stderr
    assert "secret" not in res.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["explain", "   "], "TEXT"),
        (["explain", QUERY, "--agent-id", " "], "--agent-id"),
        (["list", "--db", "mysql://db/hb"], "--db"),
        (["explain", QUERY, "--embedder", "gpt"], "--embedder"),
        (["show", "ep-unknown"], "EPISODE_ID"),
    ],
)
def test_bad_input_exit_2_names_the_field(db: str, args: list[str], field: str) -> None:
    res = run(*args, "--db", db) if "--db" not in args else run(*args)
    assert res.exit_code == 2
    assert field in res.stderr


def test_not_a_database_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    res = run("list", "--db", str(junk))
    assert res.exit_code == 2 and "--db" in res.stderr


def test_newer_schema_exit_2(db: str, backend: Backend) -> None:
    backend.sql("UPDATE edm_meta SET value = '7' WHERE key = 'schema_version'")
    res = run("list", "--db", db)
    assert res.exit_code == 2 and "newer than this hbeval" in res.stderr
    assert backend.sql("SELECT COUNT(*) FROM edm_episodes") == [(2,)]


def test_runs_as_a_module_from_any_folder(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hbeval.cli._memory", "explain", QUERY, "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["grounded"] is False
    assert not (tmp_path / ".hbeval").exists()


def test_mcp_explain_answers_as_the_command_on_both_stores(db: str) -> None:
    from hbeval.mcp_server._tools import StoreTools

    cli = json.loads(run("explain", QUERY, "--db", db, "--json").stdout)
    assert cli["grounded"] is True
    assert StoreTools(db).explain(QUERY) == cli
