"""The hbeval command: score, schema, version, exit codes, undefined shown with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hbeval.cli._demo import demo_trace_path


def hb(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hbeval.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
    )


def test_version() -> None:
    proc = hb("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("hbeval ")


def test_score_demo_prints_the_spec_table() -> None:
    proc = hb("score", str(demo_trace_path()))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "undefined (no_fault_observed)" in out
    assert "undefined (single_run)" in out
    assert "breaches: 16" in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 6}
    # step 8: PEI 1, FRR .25, IRS .25, TI 3.12 (reference rounding)
    assert "3.12" in rows["8"] and "0.25" in rows["8"]
    assert "0.8333" in rows["6"] and "2.5" in rows["6"]


def test_score_json_with_halt_policy() -> None:
    proc = hb("score", str(demo_trace_path()), "--json", "--halt-policy", "frr<0.5x3")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["metrics"] == {"pei": 1.0, "frr": 0.25, "irs": 0.25, "ti": 3.5, "csi": None}
    assert doc["undefined"] == {"csi": "single_run"}
    assert doc["halt_record"]["step_index"] == 5
    assert [r["metrics"]["ti"] for r in doc["steps"]] == [
        5.0,
        5.0,
        5.0,
        3.75,
        3.0,
        2.5,
        2.86,
        3.12,
        3.33,
        3.5,
    ]
    assert doc["steps"][0]["metrics"]["frr"] is None


def test_score_bad_line_exit_2_names_line_and_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(
        '{"format":"hb-events/1"}\n{"kind":"tool_end","run_id":"r","tool":"t"}\n', encoding="utf-8"
    )
    proc = hb("score", str(f))
    assert proc.returncode == 2
    assert "line 2" in proc.stderr and "call_id" in proc.stderr


def test_score_newer_version_refused(tmp_path: Path) -> None:
    f = tmp_path / "new.jsonl"
    f.write_text('{"format":"hb-events/9"}\n', encoding="utf-8")
    proc = hb("score", str(f))
    assert proc.returncode == 2
    assert "newer" in proc.stderr


def test_score_missing_file_and_bad_policy(tmp_path: Path) -> None:
    assert hb("score", str(tmp_path / "nope.jsonl")).returncode == 2
    proc = hb("score", str(demo_trace_path()), "--halt-policy", "frr below half")
    assert proc.returncode == 2 and "--halt-policy" in proc.stderr


def test_score_empty_trace_is_insufficient_data(tmp_path: Path) -> None:
    f = tmp_path / "empty.jsonl"
    f.write_text('{"format":"hb-events/1"}\n', encoding="utf-8")
    proc = hb("score", str(f), "--json")
    assert proc.returncode == 3
    doc = json.loads(proc.stdout)
    assert doc["metrics"]["pei"] is None and doc["undefined"]["pei"] == "no_steps"


def test_score_reads_stdin() -> None:
    proc = hb("score", "-", "--json", stdin=demo_trace_path().read_text(encoding="utf-8"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["step_count"] == 10


def test_schema_events() -> None:
    proc = hb("schema", "events")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["$id"] == "hb-events/1"


def test_demo_end_to_end_from_any_folder(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "careful" in out and "naive" in out
    assert "undefined (single_run)" in out  # CSI of a first run: never 0
    for name in ("hbeval-report.html", "hbeval-passport.json", "hbeval-report.json"):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / ".hbeval" / "hbeval.db").is_file()
    reports = json.loads((tmp_path / "hbeval-report.json").read_text(encoding="utf-8"))
    assert reports["careful"]["verdict"] == "SAFE"
    assert reports["naive"]["verdict"] == "UNSAFE"
    assert reports["careful"]["agentdojo"]["targeted_attack_success_rate"] == 0.0
    assert reports["naive"]["agentdojo"]["targeted_attack_success_rate"] == 1.0
    # The verify command the demo prints pins the demo's own key, so it exits 0 ...
    printed = " ".join(out.split("(verify: hbeval ", 1)[1].split(")", 1)[0].split()).split()
    assert printed[:2] == ["passport", "verify"] and "--key" in printed
    verify = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", *printed],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # ... while integrity alone says authenticity was not checked (exit 3).
    unpinned = hb("passport", "verify", str(tmp_path / "hbeval-passport.json"))
    assert unpinned.returncode == 3 and "NOT CHECKED" in unpinned.stdout


def test_runs_list_on_an_empty_and_a_filled_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    empty = hb("runs", "list", "--db", str(db), "--json")
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout) == {"runs": []}
    proc = hb(
        "battery",
        "run",
        "hbeval_plain.examples:careful",
        "--trials",
        "1",
        "--scenarios",
        "6",
        "--db",
        str(db),
        "--agent-id",
        "a1",
    )
    assert proc.returncode == 0, proc.stderr
    listed = hb("runs", "list", "--db", str(db))
    assert listed.returncode == 0
    assert "a1" in listed.stdout and "Z" in listed.stdout  # created_at rendered as a UTC time
    runs = json.loads(hb("runs", "list", "--db", str(db), "--json").stdout)["runs"]
    assert [r["agent_id"] for r in runs] == ["a1"]


def test_usage_errors_keep_clicks_own_message() -> None:
    # The top-level guard turns unexpected exceptions into one line; usage errors are click's
    # control flow (typer may carry its own copy of click) and keep their message.
    proc = hb("battery", "run", "--bogus")
    assert proc.returncode == 2
    assert "No such option: --bogus" in proc.stderr
    assert "unexpected error" not in proc.stderr


def test_a_reader_that_leaves_stops_the_command_quietly() -> None:
    """``hbeval schema report | head -1``: once the reader is gone, hbeval writes nothing to stderr
    and does not call it an error of its own (exit 2). The pipe's read end is closed before the
    command starts, so its first write fails."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hbeval.cli", "schema", "report"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
