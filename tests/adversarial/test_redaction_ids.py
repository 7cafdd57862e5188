"""Finding 5 (and 7) of the second adversarial pass: secrets in imported identifiers were stored.

Task ids, trace ids and tool-call ids were not redacted (``sk-proj-...``, ``ghp_...``,
``AKIA...`` in ``trials.task_id``, in ``reports.body`` and on stdout); the key shapes'
look-behind missed ``task-sk-...`` and ``leak_ghp_...``; the built-in ``authorization`` pattern
was quadratic and user patterns such as ``(a+)+$`` had no time limit. Identifiers now pass the
same redaction as bodies, each secret replaced by a stable keyed digest.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.store import Redactor

# Built from pieces so the file itself holds no key a scanner would flag.
OPENAI = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
OTHER_OPENAI = "sk-" + "proj-" + "Zz3dEf6hIj9kLm2nOp5qRs8tUv1wXy4q"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"


def _records() -> list[dict[str, Any]]:
    """Tau-bench records whose task ids and tool-call ids hold keys (its layout: task_id,
    trial, reward, traj of chat messages, info)."""
    out = []
    for n, task in enumerate((f"task-{OPENAI}", f"task-{OTHER_OPENAI}", f"plain-{AWS}")):
        call_id = f"leak_{GITHUB}_{n}"
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "get_order", "arguments": "{}"},
        }
        traj = [
            {"role": "system", "content": "You are an airline agent."},
            {"role": "user", "content": "Where is my order?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "name": "get_order", "content": "shipped"},
            {"role": "assistant", "content": "It has shipped."},
        ]
        out.append({"task_id": task, "trial": 0, "reward": 1.0, "traj": traj, "info": {}})
    return out


def _store_text(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(
            repr(row) for table in tables for row in conn.execute(f'SELECT * FROM "{table}"')
        )
    finally:
        conn.close()


def test_secrets_in_imported_identifiers_are_never_stored_nor_printed(tmp_path: Path) -> None:
    path = tmp_path / "tau.json"
    path.write_text(json.dumps(_records()), encoding="utf-8")
    db = tmp_path / "hb.db"
    res = CliRunner().invoke(app, ["import", "tau-bench", str(path), "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    text = _store_text(db) + res.output
    for secret in (OPENAI, OTHER_OPENAI, GITHUB, AWS, GITHUB[4:], AWS[4:]):
        assert secret not in text
    conn = sqlite3.connect(db)
    try:
        task_ids = sorted(r[0] for r in conn.execute("SELECT DISTINCT task_id FROM trials"))
    finally:
        conn.close()
    # Three different ids stay three; each keeps what was not secret around its digest.
    assert len(task_ids) == 3, task_ids
    assert all("[REDACTED:" in t for t in task_ids)
    assert sum(t.startswith("task-[REDACTED:openai_key:") for t in task_ids) == 2
    assert any(t.startswith("plain-[REDACTED:aws_access_key:") for t in task_ids)

    # The digest is stable: the same recording imported again names the same task ids.
    again = tmp_path / "again.db"
    res = CliRunner().invoke(app, ["import", "tau-bench", str(path), "--db", str(again)])
    assert res.exit_code == 0, res.output
    conn = sqlite3.connect(again)
    try:
        assert sorted(r[0] for r in conn.execute("SELECT DISTINCT task_id FROM trials")) == task_ids
    finally:
        conn.close()


def test_key_shapes_after_a_dash_or_an_underscore_are_found() -> None:
    redactor = Redactor()
    for text, kind in ((f"task-{OPENAI}", "openai_key"), (f"leak_{GITHUB}", "github_token")):
        clean, kinds = redactor.redact_text(text)
        assert kinds == [kind] and OPENAI not in clean and GITHUB not in clean
    # Words that merely contain the letters stay intact.
    for text in ("task-analysis-for-quarterly-report-2024", "risk-assessment-2024-Q3-summary"):
        assert redactor.redact_text(text) == (text, [])


def test_redacted_ids_are_distinct_and_stable() -> None:
    redactor = Redactor()
    one, two = redactor.redact_id(f"t-{OPENAI}"), redactor.redact_id(f"t-{OTHER_OPENAI}")
    assert one != two and one == redactor.redact_id(f"t-{OPENAI}")
    assert OPENAI not in one and redactor.redact_id("order-42") == "order-42"


def test_a_catastrophic_user_pattern_is_cut_off_on_any_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hbeval.store._redact as redact

    monkeypatch.setattr(redact, "USER_PATTERN_SECONDS", 0.2)
    redactor = Redactor.from_rules(["(a|aa)+$"])
    hostile = "a" * 60 + "!"
    results: list[tuple[str, list[str]]] = []

    def work() -> None:
        results.append(redactor.redact_text(hostile))

    started = time.perf_counter()
    worker = threading.Thread(target=work)
    worker.start()
    worker.join(30)
    assert not worker.is_alive() and time.perf_counter() - started < 15
    assert results == [("[REDACTED:pattern_timed_out]", ["pattern_timed_out"])]
    assert redactor.redact_text("xx aaaa") == ("xx [REDACTED:custom]", ["custom"])


@pytest.mark.parametrize("size", [20_000, 80_000])
def test_the_authorization_shape_is_fast_on_long_runs_of_spaces(size: int) -> None:
    # Quadratic before: 1.25 s at 8k spaces, 6.4 s at 16k. Linear now: well under a second.
    redactor = Redactor()
    for text in (
        "Authorization: " + " " * size + "x",
        'Authorization="' + " " * size + "Bearer",
        "-----BEGIN PRIVATE KEY-----" * (size // 27),
    ):
        started = time.perf_counter()
        redactor.redact_text(text)
        assert time.perf_counter() - started < 2.0
