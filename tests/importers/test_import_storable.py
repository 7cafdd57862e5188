"""A foreign recording is stored as a battery trial is: secrets redacted, results capped, and a
value no store can hold replaced, with a note, instead of refusing the whole import.

The hostile recording is the Pi corpus session (read in place; without the corpora, the
repository's Pi-layout OpenClaw fixture) with three things planted in it by this test: a lone surrogate and an AWS-shaped key in one tool call's arguments, an Anthropic
key in a secret-named argument, and a tool result of 200 KB. What the store must hold is
checked with plain ``sqlite3`` and ``json``, never through hbeval's own reader.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from .test_importers import PI_COMPACT, hb, imported

SESSION = (
    PI_COMPACT
    if PI_COMPACT.is_file()
    else Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "openclaw_session.jsonl"
)

AWS = "AKIAIOSFODNN7EXAMPLE"
ANTHROPIC = "sk-ant-api03-" + "Q" * 40
BIG = 200_000


def _hostile_copy(folder: Path) -> tuple[Path, str]:
    """The Pi session with the planted values; returns its path and the planted call's id."""
    lines = SESSION.read_text(encoding="utf-8").splitlines()
    planted_call = ""
    big_done = False
    out = []
    for line in lines:
        obj = json.loads(line)
        msg = obj.get("message") if obj.get("type") == "message" else None
        if isinstance(msg, dict) and msg.get("role") == "assistant" and not planted_call:
            for part in msg["content"]:
                if part.get("type") == "toolCall":
                    part["arguments"]["path"] = "bad\ud800byte"
                    part["arguments"]["note"] = f"key {AWS} in text"
                    part["arguments"]["api_key"] = ANTHROPIC
                    planted_call = part["id"]
                    break
        if isinstance(msg, dict) and msg.get("role") == "toolResult" and not big_done:
            msg["content"] = [{"type": "text", "text": "x" * BIG}]
            big_done = True
        out.append(json.dumps(obj))  # ensure_ascii: the surrogate travels as \\ud800
    assert planted_call and big_done
    path = folder / "hostile.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path, planted_call


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    folder = tmp_path_factory.mktemp("hostile")
    path, call = _hostile_copy(folder)
    db = folder / "hb.db"
    return db, imported(db, "pi", str(path)), call


def _all_text(db: Path) -> str:
    """Every text value of every table, as stored."""
    conn = sqlite3.connect(db)
    try:
        parts = []
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                parts += [v for v in row if isinstance(v, str)]
        return "\n".join(parts)
    finally:
        conn.close()


def _bodies(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    try:
        return [json.loads(b) for (b,) in conn.execute("SELECT body FROM event_rows")]
    finally:
        conn.close()


def test_one_bad_value_is_replaced_and_the_import_goes_on(
    hostile: tuple[Path, dict[str, Any], str], tmp_path: Path
) -> None:
    db, summary, call = hostile
    clean = imported(tmp_path / "clean.db", "pi", str(SESSION))
    for field in ("tasks", "trials", "tool_calls", "tool_errors", "model_calls"):
        assert summary[field] == clean[field], field
    starts = [b for b in _bodies(db) if b["kind"] == "tool_start" and b["call_id"] == call]
    assert len(starts) == 1
    (start,) = starts
    assert start["args"]["path"] == "bad\ufffdbyte"
    assert "args.path: lone surrogates replaced by U+FFFD" in start["attrs"]["sanitised"]


def test_no_secret_reaches_the_store(hostile: tuple[Path, dict[str, Any], str]) -> None:
    db, _, call = hostile
    text = _all_text(db)
    assert AWS not in text and ANTHROPIC not in text
    (start,) = [b for b in _bodies(db) if b["kind"] == "tool_start" and b["call_id"] == call]
    assert start["args"]["api_key"] == "[REDACTED]"
    assert AWS not in start["args"]["note"] and "[REDACTED" in start["args"]["note"]


def test_a_huge_tool_result_is_capped(hostile: tuple[Path, dict[str, Any], str]) -> None:
    db, _, _ = hostile
    ends = [b for b in _bodies(db) if b["kind"] in ("tool_end", "tool_error")]
    assert all(len(json.dumps(b)) < 70_000 for b in ends)
    notes = [n for b in ends for n in b["attrs"].get("sanitised", [])]
    assert [n for n in notes if "cut to the first" in n] == [
        f"result: {BIG} bytes, cut to the first 65536"
    ]


def test_the_changes_are_counted_in_the_summary_and_the_report(
    hostile: tuple[Path, dict[str, Any], str],
) -> None:
    db, summary, _ = hostile
    # Counted here from what was planted: the call's arguments appear twice (the model's
    # tool_calls and the tool_start), each with two secrets and one surrogate; the big result
    # appears twice too (its tool_end, and the next model call's input messages).
    assert summary["stored_changes"] == {"redacted": 4, "capped": 2, "replaced": 2}
    proc = hb("report", summary["run_id"], "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.stderr
    report = next(iter(json.loads(proc.stdout)["reports"].values()))["report"]
    assert report["source"]["stored_changes"] == summary["stored_changes"]
    again = imported(db, "pi", str(_hostile_copy(db.parent)[0]))
    assert again["already_imported"] and again["stored_changes"] == summary["stored_changes"]


def test_a_clean_recording_is_stored_unchanged(tmp_path: Path) -> None:
    summary = imported(tmp_path / "hb.db", "pi", str(SESSION))
    assert summary["stored_changes"] == {"redacted": 0, "capped": 0, "replaced": 0}
    assert not [b for b in _bodies(tmp_path / "hb.db") if "sanitised" in b.get("attrs", {})]


def test_the_users_own_redaction_rules_apply_and_are_in_the_manifest(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    summary = imported(db, "pi", str(SESSION), "--redact", "name:path")
    paths = [
        b["args"]["path"] for b in _bodies(db) if b["kind"] == "tool_start" and "path" in b["args"]
    ]
    assert paths and set(paths) == {"[REDACTED]"}
    assert summary["stored_changes"]["redacted"] >= len(paths)
    conn = sqlite3.connect(db)
    try:
        (config,) = conn.execute("SELECT config FROM runs").fetchone()
    finally:
        conn.close()
    assert json.loads(config)["import"]["redact"] == ["name:path"]
    plain = tmp_path / "plain.db"
    imported(plain, "pi", str(SESSION))
    conn = sqlite3.connect(plain)
    try:
        (config,) = conn.execute("SELECT config FROM runs").fetchone()
    finally:
        conn.close()
    assert "redact" not in json.loads(config)["import"]  # no rules: the manifest as before


def test_a_bad_redaction_rule_is_refused_before_the_store_is_touched(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    proc = hb("import", "pi", str(SESSION), "--db", str(db), "--redact", "(")
    assert proc.exit_code == 2 and "--redact" in proc.stderr and "not a valid regex" in proc.stderr
    assert not db.exists()
