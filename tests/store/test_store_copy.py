"""``hbeval store copy``: a demo run goes SQLite -> PostgreSQL -> SQLite and comes back equal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.demo import run_demo
from hbeval.store import (
    DuplicateRecordError,
    InMemoryStore,
    RunRecord,
    SQLiteStore,
    copy_store,
    open_store,
)
from hbeval_core.events import dump_event


def everything(store: Any) -> dict[str, Any]:
    """All a store holds, run by run, as plain data (event bodies as dump_event writes them)."""
    out: dict[str, Any] = {}
    for run in store.list_runs():
        rid = run.run_id
        keys = {t.trial_key for t in store.list_trials(rid)}
        out[rid] = {
            "run": run,
            "trials": store.list_trials(rid),
            "attempts": store.list_attempts(rid),
            "events": [(k, a, dump_event(e)) for k, a, e in store.export_events(rid)],
            "metrics": {k: store.get_metrics(rid, k) for k in sorted(keys)},
            "run_metrics": store.get_metrics(rid),
            "reports": store.export_reports(rid),
            "report": store.get_report(rid),
        }
    return out


def copy(src: str, dst: str) -> dict[str, int]:
    res = CliRunner().invoke(app, ["store", "copy", src, dst, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def test_a_demo_run_round_trips_through_postgres(tmp_path: Path, postgres_url: str) -> None:
    first, back = tmp_path / "first.db", tmp_path / "back.db"
    reports = run_demo(tmp_path, str(first), n_scenarios=18, trials=3, agents="plain")
    with SQLiteStore(first) as store:
        before = everything(store)
    assert len(before) == 2 and all(len(r["trials"]) == 54 for r in before.values())
    assert sum(len(r["events"]) for r in before.values()) > 0

    summary = copy(str(first), postgres_url)
    assert summary["runs"] == 2 and summary["trials_copied"] == 108
    assert summary["trials_present"] == 0 and summary["reports_copied"] == 2
    copy(postgres_url, str(back))

    with open_store(postgres_url, read_only=True) as pg, SQLiteStore(back) as again:
        assert everything(pg) == before
        assert everything(again) == before
    by_agent = {r["run"].agent_id: r["report"] for r in before.values()}
    assert by_agent == {f"demo-{name}": report for name, report in reports.items()}

    # Copying again writes nothing and finds everything in place.
    again_summary = copy(str(first), postgres_url)
    assert again_summary == {
        "runs": 2,
        "trials_copied": 0,
        "trials_present": 108,
        "events_copied": 0,
        "reports_copied": 0,
    }


def test_copy_refuses_a_different_run_under_the_same_id(tmp_path: Path) -> None:
    src, dst = InMemoryStore(), InMemoryStore()
    record = RunRecord(
        run_id="r", agent_id="a", battery="hbeval", measurement_fingerprint="fp", created_at=1.0
    )
    src.start_run(record)
    dst.start_run(RunRecord(**{**record.__dict__, "measurement_fingerprint": "other"}))
    with pytest.raises(ValueError, match="measurement_fingerprint"):
        copy_store(src, dst)
    src.record_metrics("r", None, {"pei": 0.5})
    dst2 = InMemoryStore()
    dst2.start_run(record)
    dst2.record_metrics("r", None, {"pei": 0.25})
    with pytest.raises(DuplicateRecordError, match="never overwritten"):
        copy_store(src, dst2)
    assert dst2.get_metrics("r").values == {"pei": 0.25}


def test_cli_names_a_missing_source(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["store", "copy", str(tmp_path / "nope.db"), "x.db"])
    assert res.exit_code == 2
    assert "SRC: no store at" in res.output
