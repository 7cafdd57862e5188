"""Ids inside events (a model reply's tool-call ids, the tool-call ids its next messages answer,
``attrs.source_call_id``) passed the body redaction, ``leak_[REDACTED:github_token]_0``, while
the tool call's own ``call_id`` got the keyed digest: the reply no longer named the call it
issued, and two different secrets read alike. They now pass the same redaction as ids."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from hbeval.cli import app

# Built from pieces so the file itself holds no key a scanner would flag.
TOKENS = [
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "ghp_" + "z9Y8x7W6v5U4t3S2r1Q0p9O8n7M6l5K4j3I2",
]


def test_ids_inside_events_match_the_calls_they_name(tmp_path: Path) -> None:
    ids = [f"leak_{t}_0" for t in TOKENS]
    calls = [
        {"id": i, "type": "function", "function": {"name": "get_order", "arguments": "{}"}}
        for i in (*ids, ids[0])  # the first id twice: the second call becomes "...#2"
    ]
    traj = [
        {"role": "user", "content": "Where are my orders?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": c["id"], "name": "get_order", "content": "shipped"}
          for c in calls),
        {"role": "assistant", "content": "Both shipped."},
    ]  # fmt: skip
    src = tmp_path / "tau.json"
    src.write_text(json.dumps([{"task_id": "t1", "trial": 0, "reward": 1.0, "traj": traj}]))
    db = tmp_path / "hb.db"
    res = CliRunner().invoke(app, ["import", "tau-bench", str(src), "--db", str(db)])
    assert res.exit_code == 0, res.output
    conn = sqlite3.connect(db)
    try:
        bodies = [json.loads(b) for (b,) in conn.execute("SELECT body FROM events ORDER BY seq")]
    finally:
        conn.close()
    text = json.dumps(bodies)
    assert not any(t in text or t[4:] in text for t in TOKENS)
    issued = [c["id"] for b in bodies if b["kind"] == "model_end" for c in b.get("tool_calls", [])]
    started = [b["call_id"] for b in bodies if b["kind"] == "tool_start"]
    answered = [
        m["tool_call_id"]
        for b in bodies
        if b["kind"] == "model_start"
        for m in b.get("messages", [])
        if m.get("tool_call_id")
    ]
    assert len(issued) == 3 and issued == started == answered
    assert len(set(issued)) == 3  # two secrets, one repeated id: three distinct ids
    sources = [
        b["attrs"]["source_call_id"] for b in bodies if "source_call_id" in b.get("attrs", {})
    ]
    assert sources and all(s in issued for s in sources)
