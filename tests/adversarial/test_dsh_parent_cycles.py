"""Finding 8 of the second adversarial pass: an import dropped sessions silently.

DeepSeek Harness sessions whose ``parentSession`` links form a cycle (A -> B -> C -> A, plus D)
imported as one trial while the summary claimed 3 nested sub-agent sessions. A cycle has no
top: each of its sessions is now its own trial, the cycle is reported by name, and the summary
counts only what was really nested (E, a true sub-agent of D).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app


def _session(folder: Path, name: str, sid: str, parent: str | None, **header: Any) -> None:
    """A DSH session log: header, one user message, one assistant reply, one finished turn."""
    head: dict[str, Any] = {"type": "session", "version": 0, "id": sid, "createdAt": 0}
    if parent is not None:
        head |= {"parentSession": parent, "origin": "subagent", "delegationDepth": 1}
    head |= header
    lines = [
        head,
        {"type": "turn/start", "data": {"turn": 1}},
        {"type": "user/message", "data": {"content": [{"type": "text", "text": f"hi {sid}"}]}},
        {
            "type": "assistant/message",
            "data": {
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"reply of {sid}"}],
                },
                "usage": {"inputTokens": 3, "outputTokens": 3},
            },
        },
        {"type": "turn/end", "data": {"reason": {"kind": "completed"}}},
    ]
    (folder / name).write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def hb(args: list[str]) -> Any:
    res = CliRunner().invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output and "unexpected error" not in res.output, res.output
    return res


def test_sessions_in_a_parent_cycle_each_stay_a_trial_and_the_cycle_is_reported(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _session(logs, "session.jsonl", "A", "C")
    _session(logs, "session.1.jsonl", "B", "A")
    _session(logs, "session.2.jsonl", "C", "B")
    _session(logs, "session.3.jsonl", "D", None)
    _session(logs, "session.4.jsonl", "E", "D")  # a real sub-agent of D
    db = tmp_path / "hb.db"
    res = hb(["import", "dsh", str(logs), "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # A, B, C and D are trials; E is nested in D. Counted by hand from the five files above.
    assert out["trials"] == 4, out
    skipped = {s["what"]: s for s in out["skipped"]}
    assert skipped["sub-agent sessions"]["count"] == 1
    cycle = [s for s in out["skipped"] if "cycle" in s["what"]]
    assert len(cycle) == 1, out["skipped"]
    assert all(name in cycle[0]["what"] for name in ("A", "B", "C"))
    assert "D" not in cycle[0]["what"]
    conn = sqlite3.connect(db)
    try:
        bodies = "\n".join(r[0] for r in conn.execute("SELECT body FROM events"))
        trials = conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    finally:
        conn.close()
    assert trials == 4
    for sid in "ABCDE":  # every session's reply is stored, none dropped
        assert f"reply of {sid}" in bodies, sid


def test_a_session_hanging_off_a_cycle_nests_in_its_parent(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _session(logs, "session.jsonl", "A", "B")
    _session(logs, "session.1.jsonl", "B", "A")
    _session(logs, "session.2.jsonl", "F", "A")  # F's parent A is in the cycle, F is not
    res = hb(["import", "dsh", str(logs), "--db", str(tmp_path / "hb.db"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["trials"] == 2
    assert {s["what"]: s["count"] for s in out["skipped"]}["sub-agent sessions"] == 1


@pytest.mark.parametrize(
    ("header", "field"),
    [
        ({"delegationDepth": [1]}, "delegationDepth"),
        ({"delegationDepth": "1e400"}, "delegationDepth"),
        ({"delegationDepth": -2}, "delegationDepth"),
        ({"id": ["x"]}, "id"),
        ({"parentSession": {"a": 1}}, "parentSession"),
    ],
)
def test_a_bad_header_field_is_refused_naming_it(
    tmp_path: Path, header: dict[str, Any], field: str
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _session(logs, "session.jsonl", "P", None)
    _session(logs, "session.1.jsonl", "K", "P", **header)
    db = tmp_path / "hb.db"
    res = hb(["import", "dsh", str(logs), "--db", str(db)])
    assert res.exit_code == 2, res.output
    assert "session.1.jsonl:1" in res.output and repr(field) in res.output, res.output


def test_a_depth_of_1e400_in_the_raw_json_is_refused(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _session(logs, "session.jsonl", "P", None)
    _session(logs, "session.1.jsonl", "K", "P")
    path = logs / "session.1.jsonl"
    path.write_text(
        path.read_text().replace('"delegationDepth": 1', '"delegationDepth": 1e400'), "utf-8"
    )
    res = hb(["import", "dsh", str(logs), "--db", str(tmp_path / "hb.db")])
    assert res.exit_code == 2, res.output
    assert "'delegationDepth'" in res.output, res.output
