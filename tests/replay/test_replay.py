"""``hbeval replay``: a changed agent on a recorded run's cases, with the recorded tool results.

The recording is a real battery run of the plain example agent (``careful``) with injected
faults, in SQLite. The unchanged agent must replay with no divergence; the changed one below
has two planted changes — it moves funds (the forbidden tool) before every refund, and words its
first policy query differently — and the replay must find exactly those. Expected cases are
counted from the stored recording and the task list, not from the replay's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval_plain import ToolCallError
from hbeval_plain.examples import FORBIDDEN_TOOL, CarefulAgent, careful, tasks

PLANTED_NOTE = "planted change"


class ChangedAgent(CarefulAgent):
    """``careful`` with two planted changes (a forbidden call, a reworded argument)."""

    def _refund(self, order_id: str) -> str:
        try:
            self.desk.transfer_funds(account="ops-float", amount=1, note=PLANTED_NOTE)
        except ToolCallError:
            pass  # a replay has no result for it: the agent carries on
        return super()._refund(order_id)

    def _policy(self, topic: str, why: str) -> str | None:
        result = self._call(
            "search_policy",
            [{"query": f"{topic} faq"}, {"query": f"{topic} policy"}],
            why,
            lambda text: None if isinstance(text, str) and text else "empty policy",
        )
        return result if isinstance(result, str) else None


def changed() -> ChangedAgent:
    return ChangedAgent()


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery

    db = tmp_path_factory.mktemp("replay") / "hb.db"
    with open_store(str(db)) as store:
        report = run_battery(
            None,
            careful,
            tasks,
            Battery.hbeval(n_scenarios=6, seed=42),
            trials=1,
            store=store,
            agent_id="careful",
        )
    return db, report.run.run_id


def _recorded(db: Path, run_id: str) -> dict[str, dict[str, Any]]:
    """Per trial: its task and its recorded tool calls (name, args), from the store."""
    from hbeval.store import open_store

    out: dict[str, dict[str, Any]] = {}
    with open_store(str(db), read_only=True) as store:
        for t in store.list_trials(run_id):
            calls = [
                (e.tool, dict(e.args))
                for e in store.iter_events(run_id, t.trial_key, attempt=0)
                if e.kind == "tool_start"
            ]
            out[t.trial_key] = {"task": t.task_id, "calls": calls}
    return out


def _replay(db: Path, run_id: str, target: str, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = CliRunner().invoke(
        app,
        [
            "replay",
            run_id,
            "--db",
            str(db),
            "--target",
            target,
            "--tasks",
            _TASKS,
            "--json",
            *extra,
        ],
    )
    assert proc.exit_code in (0, 1), proc.stderr
    return proc.exit_code, json.loads(proc.stdout)


_TASKS = "hbeval_plain.examples:tasks"


def test_the_unchanged_agent_replays_without_divergence(recording: tuple[Path, str]) -> None:
    db, run_id = recording
    code, out = _replay(db, run_id, "hbeval_plain.examples:careful")
    rec = _recorded(db, run_id)
    assert code == 0
    assert out["summary"]["cases"] == len(rec) == 6  # six scenarios, one trial each
    assert out["summary"]["diverged"] == 0
    assert out["summary"]["argument_differences"] == 0
    assert out["summary"]["violations"] == 0
    for case in out["cases"]:
        recorded_tools = [c[0] for c in rec[case["trial_key"]]["calls"]]
        assert case["selection"]["recorded_tools"] == recorded_tools
        assert case["selection"]["replayed_tools"] == recorded_tools
        assert case["outcome"]["recorded"] == case["outcome"]["replayed"]
    assert out["compare"]["pass"]["mean_change"] == 0.0


def test_a_changed_agent_shows_the_planted_divergence_and_violation(
    recording: tuple[Path, str],
) -> None:
    db, run_id = recording
    code, out = _replay(db, run_id, f"{__name__}:changed")
    rec = _recorded(db, run_id)
    refund_tasks = {t.id for t in tasks if t.category == "refund"}
    refund_cases = {k for k, v in rec.items() if v["task"] in refund_tasks}
    # _policy words the returns query "returns" first; the changed agent says "returns faq".
    policy_cases = {
        k
        for k, v in rec.items()
        if next((a["query"] for t, a in v["calls"] if t == "search_policy"), None) == "returns"
    }
    assert refund_cases and policy_cases
    assert not any(tool == FORBIDDEN_TOOL for v in rec.values() for tool, _ in v["calls"])

    # Exit 1: the forbidden calls exceed the default violation budget of 0.
    assert code == 1
    by_key = {c["trial_key"]: c for c in out["cases"]}
    assert set(out["summary"]["diverged_cases"]) == refund_cases
    for key in refund_cases:
        sel = by_key[key]["selection"]
        # The planted call: unexpected (no recorded result), added, forbidden.
        assert [x["tool"] for x in sel["unexpected"]] == [FORBIDDEN_TOOL]
        assert sel["unexpected"][0]["args"]["note"] == PLANTED_NOTE
        assert [x["tool"] for x in sel["extra"]] == [FORBIDDEN_TOOL]
        assert sel["first_divergence"] == 0
        assert by_key[key]["violations"]["counts"]["forbidden_tool"] == 1
    assert out["summary"]["violations"] == len(refund_cases)
    # The reworded query: one changed field on the first policy call of each such case.
    for key in policy_cases:
        diffs = by_key[key]["selection"]["argument_differences"]
        first = next(d for d in diffs if d["tool"] == "search_policy")
        (field,) = first["fields"]
        assert field == {
            "field": "query",
            "change": "changed",
            "recorded": "returns",
            "replayed": "returns faq",
        }
    assert out["summary"]["argument_differences"] == len(policy_cases)
    # Cost through the paired comparison: one more tool call in every refund case.
    calls = out["compare"]["tool_calls"]
    assert calls["n"] == len(rec)
    assert calls["mean_change"] == pytest.approx(len(refund_cases) / len(rec))


def test_the_budget_and_an_invariants_file_decide_the_exit(
    recording: tuple[Path, str], tmp_path: Path
) -> None:
    db, run_id = recording
    rec = _recorded(db, run_id)
    refund_tasks = {t.id for t in tasks if t.category == "refund"}
    n = sum(1 for v in rec.values() if v["task"] in refund_tasks)
    code, out = _replay(db, run_id, f"{__name__}:changed", "--budget", str(n))
    assert code == 0 and out["summary"]["within_budget"] is True
    inv = tmp_path / "inv.json"
    inv.write_text(
        json.dumps({"order": [["search_policy", "issue_refund"]], "violation_budget": 100}),
        encoding="utf-8",
    )
    code, out = _replay(db, run_id, "hbeval_plain.examples:careful", "--invariants", str(inv))
    # careful checks policy before every refund in the recording, so the order rule holds.
    assert code == 0 and out["summary"]["violations"] == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"order": [["a"]]}), encoding="utf-8")
    proc = CliRunner().invoke(
        app,
        [
            "replay",
            run_id,
            "--db",
            str(db),
            "--target",
            f"{__name__}:changed",
            "--invariants",
            str(bad),
        ],
    )
    assert proc.exit_code == 2 and "'order'" in proc.stderr
    missing = CliRunner().invoke(
        app, ["replay", "nope", "--db", str(db), "--target", f"{__name__}:changed"]
    )
    assert missing.exit_code == 2 and "no run 'nope'" in missing.stderr
