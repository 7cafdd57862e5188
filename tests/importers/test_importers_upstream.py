"""``hbeval import`` on tau2, OpenClaw and Hermes recordings.

No recording of these formats is in the shared corpora yet: the fixtures in
``tests/fixtures/imports`` follow the upstream writers named in that folder's README. Every
expected figure is counted here with plain JSON parsing of the fixture (or computed by hand),
never taken from the importer's output.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "imports"
TAU2 = FIX / "tau2_results.json"
OPENCLAW = FIX / "openclaw_session.jsonl"
HERMES_SESSION = FIX / "hermes_session.json"
HERMES_TRAJ = FIX / "hermes_trajectories.jsonl"
HERMES_SAMPLES = FIX / "hermes_samples.jsonl"
PI_COMPACT = ROOT.parent / "shared" / "corpora" / "pi" / "before-compaction.jsonl"

# The transcript table of OpenClaw's per-agent database, as its schema source declares it.
OPENCLAW_SCHEMA = """
CREATE TABLE sessions (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE transcript_events (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, seq),
  FOREIGN KEY (session_id) REFERENCES sessions(session_id) ON DELETE CASCADE
);
"""


def hb(*args: str) -> Any:
    from typer.testing import CliRunner

    from hbeval.cli import app

    return CliRunner().invoke(app, list(args))


def imported(db: Path, *args: str) -> dict[str, Any]:
    proc = hb("import", *args, "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.stderr
    return json.loads(proc.stdout)


def report_of(db: Path, run_id: str) -> dict[str, Any]:
    proc = hb("report", run_id, "--db", str(db), "--json")
    assert proc.exit_code == 0, proc.stderr
    return next(iter(json.loads(proc.stdout)["reports"].values()))["report"]


def refused(db: Path, *args: str) -> str:
    proc = hb("import", *args, "--db", str(db), "--json")
    assert proc.exit_code == 2, proc.stdout
    return str(proc.stderr)


def stored_runs(db: Path) -> list[Any]:
    if not db.exists():
        return []
    from hbeval.store import open_store

    store = open_store(str(db))
    try:
        return list(store.list_runs())
    finally:
        store.close()


# --------------------------------------------------------------------------- tau2
def _tau2_counts() -> dict[str, Any]:
    doc = json.loads(TAU2.read_text(encoding="utf-8"))
    agent_calls = 0
    errors = 0
    replies = 0
    by_task: dict[str, list[bool]] = defaultdict(list)
    for sim in doc["simulations"]:
        by_task[sim["task_id"]].append(sim["reward_info"]["reward"] == 1.0)
        for m in sim["messages"]:
            if m["role"] == "assistant":
                replies += 1
            if m["role"] == "tool" and m["requestor"] == "assistant":
                agent_calls += 1
                errors += m["error"] is True
    return {
        "trials": len(doc["simulations"]),
        "tasks": len(by_task),
        "tool_calls": agent_calls,
        "tool_errors": errors,
        "model_calls": replies,
        "by_task": by_task,
    }


def test_tau2_results_import_with_agent_calls_only_and_reward_labels(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    out = imported(db, "tau2", str(TAU2))
    want = _tau2_counts()
    assert (want["trials"], want["tasks"], want["tool_calls"], want["tool_errors"]) == (4, 2, 7, 2)
    for key in ("trials", "tasks", "tool_calls", "tool_errors", "model_calls"):
        assert out[key] == want[key], key
    assert out["format"] == "tau2" and out["labelled"] is True
    user_calls = [s for s in out["skipped"] if s["what"] == "tool calls of the simulated user"]
    assert user_calls and user_calls[0]["count"] == 1
    import hashlib

    assert out["files"][0]["sha256"] == hashlib.sha256(TAU2.read_bytes()).hexdigest()

    report = report_of(db, out["run_id"])
    # pass^k by hand: C(c, k) / C(n, k) per task, averaged over tasks.
    for k in (1, 2):
        hand = sum(
            math.comb(sum(v), k) / math.comb(len(v), k) for v in want["by_task"].values()
        ) / len(want["by_task"])
        assert report["pass_hat_k"][k - 1]["value"] == pytest.approx(hand)
    assert report["pass_hat_k"][1]["value"] == pytest.approx(0.5)
    # Both trials with a failing tool call: sim-1-0 passed, sim-1-1 failed -> 1/2 recovered.
    # Nothing was injected, so this is recorded-error recovery, not FRR.
    assert report["recorded_errors"]["rate"] == pytest.approx(0.5)
    assert report["metrics"]["frr"] is None and report["undefined"]["frr"] == "no_injected_fault"
    # tau2 flags errors itself, so FRR and the links rest on nothing inferred. The recording
    # marks no re-plan, so PEI's re-plans are inferred: sim-1-0's failed get_customer_by_phone
    # is followed by a reply and the same tool with other arguments, sim-1-1's failed
    # get_data_usage by a reply and transfer_to_human_agents: 2.
    inferred = report["source"]["inferred_figures"]
    assert set(inferred) == {"pei"} and inferred["pei"].startswith("2 re-plan(s) inferred")
    assert report["source"]["derivation"]["outcome"] == {"observed_error": 2, "absence_of_error": 5}


def test_auto_detects_tau2_openclaw_databases_and_hermes(tmp_path: Path) -> None:
    from hbeval.importers import detect_format
    from hbeval.importers._ingest import read_source

    database = tmp_path / "agent.sqlite"
    _openclaw_db(database, {"oc-sess-1": OPENCLAW.read_text(encoding="utf-8").splitlines()})
    expect = {
        TAU2: "tau2",
        database: "openclaw",
        OPENCLAW: "pi",  # OpenClaw writes Pi's session layout: auto cannot tell them apart
        HERMES_SESSION: "hermes",
        HERMES_TRAJ: "hermes",
        HERMES_SAMPLES: "hermes",
    }
    for path, fmt in expect.items():
        assert detect_format(read_source(path)) == fmt, path


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (
            lambda d: d["simulations"][2]["reward_info"].pop("reward"),
            "simulations[2].reward_info.reward",
        ),
        (
            lambda d: d["simulations"][1]["messages"][3].update(error="yes"),
            "simulations[1].messages[3].error",
        ),
        (lambda d: d["simulations"][3].update(trial=-1), "simulations[3].trial"),
    ],
)
def test_a_bad_tau2_simulation_refuses_the_file_naming_the_field(
    tmp_path: Path, mutate: Any, field: str
) -> None:
    doc = json.loads(TAU2.read_text(encoding="utf-8"))
    mutate(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    db = tmp_path / "hb.db"
    err = refused(db, "tau2", str(TAU2), str(bad))
    assert str(bad) in err and field in err and "nothing stored" in err
    assert stored_runs(db) == []


# --------------------------------------------------------------------------- OpenClaw
def _openclaw_db(path: Path, sessions: dict[str, list[str]]) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(OPENCLAW_SCHEMA)
    for sid, lines in sessions.items():
        conn.execute("INSERT INTO sessions VALUES (?, ?, 0, 0)", (sid, f"agent:main:{sid}"))
        for seq, line in enumerate(lines):
            conn.execute(
                "INSERT INTO transcript_events VALUES (?, ?, ?, ?)", (sid, seq, line, 1000 + seq)
            )
    conn.commit()
    conn.close()


def _pi_counts(lines: list[str]) -> tuple[int, int, int]:
    results = errors = prompts = 0
    for line in lines:
        e = json.loads(line)
        msg = e.get("message") or {}
        if e.get("type") == "message" and msg.get("role") == "toolResult":
            results += 1
            errors += msg.get("isError") is True
        if e.get("type") == "message" and msg.get("role") == "user":
            prompts += 1
    return results, errors, prompts


def test_openclaw_transcript_file_and_database_give_the_same_runs(tmp_path: Path) -> None:
    lines = OPENCLAW.read_text(encoding="utf-8").splitlines()
    results, errors, prompts = _pi_counts(lines)
    assert (results, errors, prompts) == (4, 1, 2)
    database = tmp_path / "agent.sqlite"
    _openclaw_db(database, {"oc-sess-1": lines})

    from_file = imported(tmp_path / "a.db", "openclaw", str(OPENCLAW))
    from_db = imported(tmp_path / "b.db", "openclaw", str(database))
    for out in (from_file, from_db):
        assert (out["trials"], out["tool_calls"], out["tool_errors"]) == (prompts, results, errors)
        assert out["labelled"] is False
    import hashlib

    assert from_db["files"][0]["sha256"] == hashlib.sha256(database.read_bytes()).hexdigest()

    from hbeval.importers import read_trials

    def shape(fmt: str, path: Path) -> list[Any]:
        return [
            (t.source_id, [(e.kind, getattr(e, "tool", None)) for e in t.events])
            for t in read_trials(fmt, [path])
        ]

    assert shape("openclaw", database) == shape("openclaw", OPENCLAW)
    compactions = [
        e for t in read_trials("openclaw", [database]) for e in t.events if e.kind == "span_start"
    ]
    assert [e.name for e in compactions] == ["compaction"]


@pytest.mark.skipif(not PI_COMPACT.is_file(), reason="the shared Pi recording is absent")
def test_a_real_pi_recording_in_the_openclaw_table_imports_like_the_file(tmp_path: Path) -> None:
    lines = PI_COMPACT.read_text(encoding="utf-8").splitlines()
    database = tmp_path / "agent.sqlite"
    _openclaw_db(database, {"s-real": lines, "s-small": OPENCLAW.read_text().splitlines()})
    out = imported(tmp_path / "hb.db", "openclaw", str(database))
    real = _pi_counts(lines)
    small = _pi_counts(OPENCLAW.read_text().splitlines())
    assert real[:2] == (448, 12)
    assert (out["tool_calls"], out["tool_errors"]) == (real[0] + small[0], real[1] + small[1])


def test_a_bad_openclaw_row_is_named_by_session_and_seq(tmp_path: Path) -> None:
    lines = OPENCLAW.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[5])
    bad["message"]["isError"] = "maybe"
    lines[5] = json.dumps(bad)
    database = tmp_path / "agent.sqlite"
    _openclaw_db(database, {"oc-sess-1": lines})
    db = tmp_path / "hb.db"
    err = refused(db, "openclaw", str(database))
    assert "transcript_events[session_id=oc-sess-1, seq=5].event_json.message.isError" in err
    assert stored_runs(db) == []
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).executescript("CREATE TABLE other (x INTEGER);")
    assert "no transcript_events table" in refused(db, "openclaw", str(empty))


# --------------------------------------------------------------------------- Hermes
def _failed(content: str) -> bool:
    """Hermes's failure convention, restated: a JSON object with ``error`` set or success false."""
    try:
        obj = json.loads(content)
    except ValueError:
        return False
    return isinstance(obj, dict) and (bool(obj.get("error")) or obj.get("success") is False)


def test_hermes_session_log_imports_one_run_per_prompt_with_inferred_errors(
    tmp_path: Path,
) -> None:
    doc = json.loads(HERMES_SESSION.read_text(encoding="utf-8"))
    tools = [m for m in doc["messages"] if m["role"] == "tool"]
    prompts = sum(1 for m in doc["messages"] if m["role"] == "user")
    errors = sum(_failed(m["content"]) for m in tools)
    db = tmp_path / "hb.db"
    out = imported(db, "hermes", str(HERMES_SESSION))
    assert (out["trials"], out["tool_calls"], out["tool_errors"]) == (prompts, len(tools), errors)
    assert (prompts, len(tools), errors) == (2, 3, 1)
    assert out["labelled"] is False
    report = report_of(db, out["run_id"])
    inferred = report["source"]["inferred_figures"]
    assert set(inferred) >= {"frr", "reliability_gap", "tool_errors"}
    assert "ti" not in inferred  # the session log ties results to calls by id
    assert report["isolation"]["isolated"] is False  # its prompts share one session
    assert any("inferred" in n for n in report["source"]["notes"])
    page = tmp_path / "r.html"
    assert hb("report", out["run_id"], "--db", str(db), "--html", str(page)).exit_code == 0
    assert "Rests on inferred fields" in page.read_text(encoding="utf-8")
    text = hb("report", out["run_id"], "--db", str(db))
    assert text.exit_code == 0
    assert "rests on inferred fields: faulted_trials, frr, reliability_gap" in text.stdout


def test_hermes_trajectories_match_responses_by_name_and_say_so(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in HERMES_TRAJ.read_text(encoding="utf-8").splitlines()]
    calls = errors = 0
    for r in rows:
        for turn in r["conversations"]:
            if turn["from"] == "tool":
                for chunk in turn["value"].split("</tool_response>")[:-1]:
                    body = json.loads(chunk.split("<tool_response>")[1])
                    calls += 1
                    errors += _failed(json.dumps(body["content"]))
    out = imported(tmp_path / "hb.db", "hermes", str(HERMES_TRAJ))
    assert (out["trials"], out["tool_calls"], out["tool_errors"]) == (len(rows), calls, errors)
    assert (calls, errors) == (4, 2)

    from hbeval.importers import read_trials

    trials = read_trials("hermes", [HERMES_TRAJ])
    assert [t.status for t in trials] == ["ok" if r["completed"] else "error" for r in rows]
    links = {
        e.attrs["derivation"]["link"] for t in trials for e in t.events if e.kind == "tool_start"
    }
    assert links == {"by_name"}
    report = report_of(tmp_path / "hb.db", out["run_id"])
    assert "ti" in report["source"]["inferred_figures"]


def test_hermes_benchmark_samples_carry_pass_labels(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in HERMES_SAMPLES.read_text(encoding="utf-8").splitlines()]
    db = tmp_path / "hb.db"
    out = imported(db, "hermes", str(HERMES_SAMPLES))
    assert out["labelled"] is True and out["trials"] == len(rows)
    report = report_of(db, out["run_id"])
    assert report["pass_rate"]["passed"] == sum(r["passed"] for r in rows) == 2
    assert report["pass_rate"]["rate"] == pytest.approx(2 / 3)


def test_a_bad_hermes_line_refuses_naming_line_and_field(tmp_path: Path) -> None:
    lines = HERMES_SAMPLES.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[1])
    row["passed"] = "yes"
    lines[1] = json.dumps(row)
    bad = tmp_path / "samples.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "hb.db"
    err = refused(db, "hermes", str(bad))
    assert f"{bad}:2" in err and "'passed'" in err
    assert stored_runs(db) == []


def test_a_hermes_session_with_a_long_tools_list_is_still_recognised(tmp_path: Path) -> None:
    doc = json.loads(HERMES_SESSION.read_text(encoding="utf-8"))
    doc["tools"] = [
        {"type": "function", "function": {"name": f"tool_{i}", "description": "x" * 500}}
        for i in range(200)
    ]
    big = tmp_path / "session_big.json"
    big.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    assert big.read_bytes().index(b'"messages"') > 65536
    out = imported(tmp_path / "hb.db", "auto", str(big))
    assert out["format"] == "hermes" and out["trials"] == 2


def test_tau2_calls_without_ids_are_answered_in_the_order_issued(tmp_path: Path) -> None:
    """tau2's ToolCall.id defaults to "": results then pair with calls in order."""
    from hbeval.importers import read_trials

    doc = json.loads(TAU2.read_text(encoding="utf-8"))
    sim = doc["simulations"][1]  # two calls in one reply, the second one fails
    for m in sim["messages"]:
        for tc in m.get("tool_calls") or ():
            tc["id"] = ""
        if m["role"] == "tool":
            m["id"] = ""
    doc["simulations"] = [sim]
    path = tmp_path / "noids.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (trial,) = read_trials("tau2", [path])
    ends = [(e.tool, e.kind) for e in trial.events if e.kind in ("tool_end", "tool_error")]
    assert ends == [
        ("get_customer_by_phone", "tool_end"),
        ("get_data_usage", "tool_error"),
        ("transfer_to_human_agents", "tool_end"),
    ]
    starts = [e for e in trial.events if e.kind == "tool_start"]
    # Pairing by position is an inference: TI rests on it.
    assert all(e.attrs["derivation"]["link"] == "by_order" for e in starts)
    from hbeval.importers._common import inferred_figures

    assert set(inferred_figures(trial.derivations())) == {"ti"}
