"""Which runs CSI combines: same agent sources, same tasks, same judge, not the same events;
and the band word withheld when the run's own repeated trials contradict it.

Battery runs use real plain agents loaded from files (so their sources are digested as a user's
would be), a real SQLite store and the real runner; imports use the real tau-bench recording.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TAU = ROOT.parent / "shared" / "corpora" / "tau-bench" / "gpt-4o-airline.json"

AGENT = """
from collections import Counter
from hbeval_plain import think, tool

_calls = Counter()


@tool
def lookup(order_id: str) -> dict:
    return {{"order_id": order_id, "status": "shipped"}}


def agent(question: str) -> str:
    think("I need the order first", tool_calls=[("lookup", {{"order_id": "A1"}})])
    try:
        order = lookup(order_id="A1")
    except Exception as exc:
        think(f"The lookup failed ({{exc}}); one retry", tool_calls=[("lookup", {{"order_id": "A1"}})])
        try:
            order = lookup(order_id="A1")
        except Exception:
            return "I could not reach the order system; please try later"
    think(f"It is {{order.get('status') if isinstance(order, dict) else order}}")
    _calls[question] += 1
    # Every {period}th answer to a question is wrong: noise within a run, the same in each run
    # (9 trials of each task per run).
    return "I do not know" if _calls[question] % {period} == 0 else "A1 is shipped"
"""


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Path]:
    """A folder with two agents in two files: a noisy one and a steady one."""
    (tmp_path / "noisy.py").write_text(textwrap.dedent(AGENT.format(period=3)))
    (tmp_path / "steady.py").write_text(textwrap.dedent(AGENT.format(period=10**6)))
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(here)


def _tasks(question: str = "where is A1") -> list[Any]:
    from hbeval_core.contract import Task

    return [
        Task(id="t1", question=question, required=("shipped",)),
        Task(id="t2", question="status of A1", required=("shipped",)),
    ]


def _run(target: str, store: Any, tasks: list[Any] | None = None) -> Any:
    import hbeval

    return hbeval.run_battery(
        target, tasks=tasks or _tasks(), trials=3, scenarios=6, store=store, concurrency=1
    )


def test_runs_of_one_agent_combine_and_another_agent_under_the_same_id_does_not(
    agents: Path,
) -> None:
    from hbeval.store import open_store

    store = open_store(agents / "hb.db")
    first = _run("steady.py:agent", store)
    second = _run("steady.py:agent", store)
    assert second.csi_runs is not None
    assert second.csi_runs.combined == [first.run_id]
    assert second.csi_info.runs_total == 2 and second.metrics.csi is not None
    # The same agent id ("default") and measurement fingerprint, but another agent's code.
    other = _run("noisy.py:agent", store)
    assert other.run.agent_id == first.run.agent_id == "default"
    assert other.csi_runs is not None
    assert other.csi_runs.combined == []
    assert other.csi_runs.excluded == {"other_agent_sources": 2}
    assert other.metrics.csi is None and other.undefined["csi"] == "single_run"
    assert "2 other_agent_sources" in other.csi_info.note
    # Changed tasks (one question differs) are another measurement too.
    changed = _run("steady.py:agent", store, _tasks("where is order A1"))
    assert changed.csi_runs is not None
    assert changed.csi_runs.excluded == {"other_tasks": 2, "other_agent_sources": 1}
    assert changed.metrics.csi is None
    store.close()


def test_a_noisy_agent_gets_no_band_word_its_own_trials_contradict(agents: Path) -> None:
    from rich.console import Console

    from hbeval.report.terminal import summary_table
    from hbeval.store import open_store

    store = open_store(agents / "hb.db")
    _run("noisy.py:agent", store)
    report = _run("noisy.py:agent", store)
    store.close()
    block, runs = report.consistency, report.csi_runs
    assert block is not None and runs is not None
    assert report.metrics.csi is not None and report.metrics.csi >= 0.80  # CSI alone: "STABLE"
    assert block.c_out is not None and block.flip_rate is not None
    # The band is withheld exactly when C_out < 0.80 or the flip rate > 0.20 (STABLE's floor).
    assert block.c_out < 0.80 or block.flip_rate > 0.20
    assert report.csi_info.band is None
    assert runs.band_withheld is not None and "STABLE" in runs.band_withheld
    console = Console(width=220, record=True)
    console.print(summary_table(report))
    text = console.export_text()
    assert "STABLE" not in text.replace("STABLE's", "")
    assert "CSI band" in text and "withheld" in text


def test_a_steady_agent_keeps_its_band_with_c_out_beside_it(agents: Path) -> None:
    from rich.console import Console

    from hbeval.report.terminal import summary_table
    from hbeval.store import open_store

    store = open_store(agents / "hb.db")
    _run("steady.py:agent", store)
    report = _run("steady.py:agent", store)
    store.close()
    assert report.consistency is not None and report.consistency.flip_rate == 0.0
    assert report.csi_info.band == "STABLE"
    assert report.csi_runs is not None and report.csi_runs.band_withheld is None
    console = Console(width=220, record=True)
    console.print(summary_table(report))
    text = " ".join(console.export_text().split())
    assert "CSI band │ STABLE" in text
    assert "beside C_out 1.000, flip rate 0.000" in text


def test_the_identity_leaves_out_package_versions_and_keeps_the_judge() -> None:
    from hbeval.scoring._csi_runs import identity_of, task_digest

    run = {
        "judge": None,
        "task_digest": task_digest(_tasks()),
        "manifest": {"sources": {"agent": "aa11"}, "versions": {"langgraph": "0.2.0"}},
    }
    upgraded = {**run, "manifest": {"sources": {"agent": "aa11"}, "versions": {"langgraph": "1.0"}}}
    assert identity_of(run, "e") == identity_of(upgraded, "e")
    judged = identity_of({**run, "judge": "independent:gpt-4o"}, "e")
    assert judged.judge == "independent:gpt-4o" and judged != identity_of(run, "e")
    edited = {**run, "manifest": {"sources": {"agent": "bb22"}}}
    assert identity_of(edited, "e").agent_sources != identity_of(run, "e").agent_sources


def test_the_task_digest_covers_every_field_and_the_verifier_source() -> None:
    from hbeval.scoring._csi_runs import task_digest
    from hbeval_core.contract import Task

    def verify_a(outcome: Any, trace: Any) -> bool:
        return True

    def verify_b(outcome: Any, trace: Any) -> bool:
        return False

    base = Task(id="t", question="q", verify=verify_a)
    assert task_digest([base]) == task_digest([Task(id="t", question="q", verify=verify_a)])
    assert task_digest([base]) != task_digest([Task(id="t", question="q", verify=verify_b)])
    assert task_digest([base]) != task_digest(
        [Task(id="t", question="q", verify=verify_a, category="c")]
    )
    assert task_digest([base]) != task_digest(
        [Task(id="t", question="q", verify=verify_a, metadata={"k": 1})]
    )


@pytest.mark.skipif(not TAU.is_file(), reason=f"recording {TAU} is absent")
def test_a_second_import_of_one_recording_is_not_another_run(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hbeval.cli import app

    db = str(tmp_path / "hb.db")
    reports = []
    for run_id in ("first", "again"):
        proc = CliRunner().invoke(
            app, ["import", "tau-bench", str(TAU), "--db", db, "--run-id", run_id, "--json"]
        )
        assert proc.exit_code == 0, proc.stderr
        shown = CliRunner().invoke(app, ["report", run_id, "--db", db, "--json"])
        reports.append(next(iter(json.loads(shown.stdout)["reports"].values()))["report"])
    second = reports[1]
    assert second["metrics"]["csi"] is None and second["undefined"]["csi"] == "single_run"
    assert second["csi_runs"]["excluded"] == {"same_events": 1}
    assert second["csi_runs"]["identity"]["events"] == reports[0]["csi_runs"]["identity"]["events"]
