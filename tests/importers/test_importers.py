"""``hbeval import`` on real recordings (../shared/corpora): tau-bench, Pi and DSH.

Every expected figure is counted here with plain JSON parsing of the recordings, or taken from
the recording's own published table (tau-bench's pass^k), never from the importer's output.
"""

from __future__ import annotations

import glob
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT.parent / "shared" / "corpora"
TAU = CORPORA / "tau-bench" / "gpt-4o-airline.json"
PI_LARGE = CORPORA / "pi" / "large-session.jsonl"
PI_COMPACT = CORPORA / "pi" / "before-compaction.jsonl"
DSH = CORPORA / "dsh"

needs_corpora = pytest.mark.skipif(
    not CORPORA.is_dir(),
    reason=f"recordings folder {CORPORA} is absent (the shared corpora are not checked out)",
)
pytestmark = needs_corpora


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
    reports = json.loads(proc.stdout)["reports"]
    return next(iter(reports.values()))["report"]


# --------------------------------------------------------------------------- tau-bench
@pytest.fixture(scope="module")
def tau(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    db = tmp_path_factory.mktemp("tau") / "hb.db"
    return db, imported(db, "tau-bench", str(TAU))


def _tau_counts() -> dict[str, Any]:
    records = json.loads(TAU.read_text(encoding="utf-8"))
    tool_msgs = [m for r in records for m in r["traj"] if m["role"] == "tool"]
    by_task: dict[Any, list[bool]] = defaultdict(list)
    for r in records:
        by_task[r["task_id"]].append(r["reward"] == 1.0)
    return {
        "trials": len(records),
        "tasks": len(by_task),
        "tool_calls": len(tool_msgs),
        "tool_errors": sum(1 for m in tool_msgs if m["content"].startswith("Error: ")),
        "model_calls": sum(1 for r in records for m in r["traj"] if m["role"] == "assistant"),
        "by_task": by_task,
    }


def test_tau_bench_totals_match_an_independent_count(tau: tuple[Path, dict[str, Any]]) -> None:
    _, out = tau
    want = _tau_counts()
    assert (want["trials"], want["tasks"], want["tool_calls"], want["tool_errors"]) == (
        200,
        50,
        1164,
        73,
    )
    for key in ("trials", "tasks", "tool_calls", "tool_errors", "model_calls"):
        assert out[key] == want[key], key
    assert out["labelled"] is True
    assert out["files"][0]["sha256"].startswith("e9e6c029")
    assert out["files"][0]["sha256"].endswith("e37bfa")


def test_tau_bench_pass_hat_k_is_the_published_table(tau: tuple[Path, dict[str, Any]]) -> None:
    db, out = tau
    report = report_of(db, out["run_id"])
    got = [round(k["value"], 3) for k in report["pass_hat_k"]]
    assert got == [0.420, 0.273, 0.220, 0.200]  # tau-bench README, gpt-4o airline
    # The same figures by hand: C(c, k) / C(n, k) per task, averaged over tasks.
    by_task = _tau_counts()["by_task"]
    for k in range(1, 5):
        hand = sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in by_task.values()) / len(
            by_task
        )
        assert report["pass_hat_k"][k - 1]["value"] == pytest.approx(hand, abs=1e-12)
    # Wilson interval of 84/200 around the pass rate.
    assert report["pass_rate"]["passed"] == sum(sum(v) for v in by_task.values())
    low, high = report["pass_rate"]["interval"]
    assert low < 0.42 < high


def test_tau_bench_frr_pei_ti_come_from_the_imported_steps(
    tau: tuple[Path, dict[str, Any]],
) -> None:
    db, out = tau
    report = report_of(db, out["run_id"])
    records = json.loads(TAU.read_text(encoding="utf-8"))
    errored = [
        r
        for r in records
        if any(m["role"] == "tool" and m["content"].startswith("Error: ") for m in r["traj"])
    ]
    # Nothing was injected: FRR is not fault recovery here. Recovery from the recording's own
    # failing tool calls (the share of those trials that still passed) has its own name.
    assert report["metrics"]["frr"] is None
    assert report["undefined"]["frr"] == "no_injected_fault"
    recorded = report["recorded_errors"]
    assert recorded["rate"] == pytest.approx(
        sum(1 for r in errored if r["reward"] == 1.0) / len(errored)
    )
    assert recorded["trials"] == len(errored)
    assert report["metrics"]["pei"] is not None and report["metrics"]["ti"] is not None
    assert report["metrics"]["irs"] is None and report["undefined"]["irs"] == "no_judged_trial"
    assert report["fingerprints"]["measurement"] == out["measurement_fingerprint"]
    assert report["source"]["files"][0]["sha256"] == out["files"][0]["sha256"]


def test_gate_on_an_import_needs_skip_security_and_says_so(
    tau: tuple[Path, dict[str, Any]],
) -> None:
    db, out = tau
    plain = hb("gate", out["run_id"], "--db", str(db))
    assert "security gate not measured" in plain.stdout
    skipped = hb("gate", out["run_id"], "--db", str(db), "--skip-security", "--json")
    checks = json.loads(skipped.stdout)["checks"]
    security = [c for c in checks if c["kind"] == "security"]
    assert security and "not required: --skip-security" in security[0]["message"]


def test_reimport_is_idempotent_and_html_renders(
    tau: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db, out = tau
    again = imported(db, "auto", str(TAU))
    assert again["already_imported"] is True and again["run_id"] == out["run_id"]
    page = tmp_path / "r.html"
    proc = hb("report", out["run_id"], "--db", str(db), "--html", str(page))
    assert proc.exit_code == 0, proc.stderr
    assert "get_user_details" in page.read_text(encoding="utf-8")


def test_compare_pairs_imports_of_the_same_recording_only(
    tau: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db, out = tau
    second = imported(db, "tau-bench", str(TAU), "--run-id", "tau-again")
    proc = hb("compare", out["run_id"], second["run_id"], "--db", str(db), "--json")
    assert proc.exit_code in (0, 3), proc.stderr
    pi = imported(db, "pi", str(PI_LARGE))
    refused = hb("gate", out["run_id"], "--db", str(db), "--baseline", pi["run_id"])
    assert refused.exit_code == 2
    assert "measurement fingerprint" in refused.stderr


# --------------------------------------------------------------------------- Pi
def _pi_counts(path: Path) -> tuple[int, int, int]:
    results = errors = compactions = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["type"] == "compaction":
            compactions += 1
        if obj["type"] == "message" and obj["message"]["role"] == "toolResult":
            results += 1
            errors += bool(obj["message"].get("isError"))
    return results, errors, compactions


@pytest.mark.parametrize(
    ("path", "expected"),
    [(PI_LARGE, (373, 19, 0)), (PI_COMPACT, (448, 12, 2))],
    ids=["large-session", "before-compaction"],
)
def test_pi_sessions_import_with_their_tool_results_and_compactions(
    path: Path, expected: tuple[int, int, int], tmp_path: Path
) -> None:
    from hbeval.store import open_store

    assert _pi_counts(path) == expected
    db = tmp_path / "hb.db"
    out = imported(db, "pi", str(path))
    assert (out["tool_calls"], out["tool_errors"]) == expected[:2]
    # One run per prompt the agent answered (a model reply or a tool call before the next one).
    answered: list[bool] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        role = json.loads(line).get("message", {}).get("role")
        if role == "user":
            answered.append(False)
        elif role in ("assistant", "toolResult") and answered:
            answered[-1] = True
    assert out["trials"] == sum(answered) and out["labelled"] is False
    unanswered = len(answered) - sum(answered)
    empty = [s for s in out["skipped"] if s["what"] == "runs with no model or tool call"]
    assert (empty[0]["count"] if empty else 0) == unanswered
    store = open_store(str(db))
    try:
        spans = [e for e in store.iter_events(out["run_id"]) if e.kind == "span_start"]
    finally:
        store.close()
    assert sum(1 for e in spans if e.name == "compaction") == expected[2]
    report = report_of(db, out["run_id"])
    assert report["pass_rate"]["rate"] is None
    assert report["pass_rate"]["undefined"]["rate"] == "no_success_label"
    assert all(k["value"] is None for k in report["pass_hat_k"])
    assert report["metrics"]["frr"] is None
    assert report["undefined"]["frr"] == "no_success_label"
    assert report["metrics"]["pei"] is not None


def test_a_labels_file_turns_pass_figures_on(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    first = imported(db, "pi", str(PI_COMPACT), "--run-id", "probe")
    report = report_of(db, first["run_id"])
    ids = [t["task_id"] for t in report["trials"]]
    labels = {tid: i % 3 != 0 for i, tid in enumerate(ids)}
    lf = tmp_path / "labels.json"
    lf.write_text(json.dumps(labels), encoding="utf-8")
    out = imported(db, "pi", str(PI_COMPACT), "--labels", str(lf), "--run-id", "labelled")
    assert out["labelled"] is True
    labelled = report_of(db, out["run_id"])
    assert labelled["pass_rate"]["rate"] == pytest.approx(sum(labels.values()) / len(labels))
    assert labelled["pass_hat_k"][0]["value"] == pytest.approx(sum(labels.values()) / len(labels))
    bad = tmp_path / "bad-labels.json"
    bad.write_text(json.dumps({"no-such-run": True}), encoding="utf-8")
    proc = hb("import", "pi", str(PI_COMPACT), "--db", str(db), "--labels", str(bad))
    assert proc.exit_code == 2
    assert "no-such-run" in proc.stderr


def test_pi_version_3_tree_keeps_only_the_active_branch(tmp_path: Path) -> None:
    # A version-3 session with a branch: the user went back from b2 and prompted again.
    lines = [
        {"type": "session", "version": 3, "id": "s3", "timestamp": "2025-01-01T00:00:00Z"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "message": {"role": "user", "content": "first"},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"p": 1}}
                ],
            },
        },
        {
            "type": "message",
            "id": "r1",
            "parentId": "a1",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "read",
                "content": [{"type": "text", "text": "boom"}],
                "isError": True,
            },
        },
        {
            "type": "message",
            "id": "u2",
            "parentId": "r1",
            "message": {"role": "user", "content": "abandoned branch"},
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "u2",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {}}],
            },
        },
        {
            "type": "message",
            "id": "u3",
            "parentId": "r1",
            "message": {"role": "user", "content": "the branch kept"},
        },
        {
            "type": "message",
            "id": "a3",
            "parentId": "u3",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "done"}],
            },
        },
    ]
    path = tmp_path / "tree.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    from hbeval.importers import read_trials

    trials = read_trials("pi", [path])
    assert [t.source_id for t in trials] == ["s3/p1", "s3/p2"]
    assert trials[0].tool_errors == 1
    assert trials[1].tool_calls == 0  # c2 sits on the abandoned branch


def test_a_bad_line_refuses_the_import_and_stores_nothing(tmp_path: Path) -> None:
    from hbeval.store import open_store

    lines = PI_LARGE.read_text(encoding="utf-8").splitlines()[:10]
    lines[2] = lines[2][:40]  # cut the third line in half
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "hb.db"
    proc = hb("import", "pi", str(PI_COMPACT), str(bad), "--db", str(db))
    assert proc.exit_code == 2
    assert f"{bad}:3:" in proc.stderr and "nothing stored" in proc.stderr
    assert "Traceback" not in proc.stderr
    store = open_store(str(db))
    try:
        assert store.list_runs() == []
    finally:
        store.close()
    tau_bad = tmp_path / "tau.json"
    tau_bad.write_text(json.dumps([{"task_id": 1, "traj": []}]), encoding="utf-8")
    proc = hb("import", "tau-bench", str(tau_bad), "--db", str(db))
    assert proc.exit_code == 2 and "'[0].reward'" in proc.stderr


# --------------------------------------------------------------------------- DSH
def _dsh_files() -> list[str]:
    found = []
    for f in glob.glob(str(DSH / "**" / "session*.jsonl"), recursive=True):
        name = Path(f).name
        middle = name[len("session") : -len(".jsonl")]
        if middle == "" or middle[1:].isdigit():
            found.append(f)
    return found


def test_all_dsh_sessions_import_with_calls_matched_to_results(tmp_path: Path) -> None:
    from hbeval.store import open_store

    files = _dsh_files()
    assert len(files) == 139
    results = 0
    headers: dict[str, dict[str, Any]] = {}
    acted: dict[str, bool] = {}
    for f in files:
        lines = [json.loads(x) for x in Path(f).read_text(encoding="utf-8").splitlines()]
        kinds = {x["type"] for x in lines}
        results += sum(1 for x in lines if x["type"] == "tool/result")
        headers[f] = lines[0]
        acted[f] = bool({"assistant/message", "tool/call", "tool/result"} & kinds)
    # A sub-agent session nests in its parent's run when the parent (the session in the same
    # folder whose id its header names) is imported too.
    parent_of: dict[str, str] = {}
    for f, h in headers.items():
        for g, other in headers.items():
            if (
                h.get("parentSession") is not None
                and g != f
                and Path(g).parent == Path(f).parent
                and other["id"] == h["parentSession"]
            ):
                parent_of[f] = g
    tops = [f for f in files if f not in parent_of]

    def root(f: str) -> str:
        while f in parent_of:
            f = parent_of[f]
        return f

    busy = {root(f) for f in files if acted[f]}
    db = tmp_path / "hb.db"
    out = imported(db, "dsh", str(DSH))
    # Every log is read (and fingerprinted); a run in which no agent acted (slash commands, UI
    # snapshots) has nothing to score and is listed as skipped.
    assert len(out["files"]) == 139 and parent_of
    assert out["trials"] == len(busy) < len(tops)
    skipped = {s["what"]: s["count"] for s in out["skipped"]}
    assert skipped["sub-agent sessions"] == len(parent_of)
    assert skipped["runs with no model or tool call"] == len(tops) - len(busy)
    assert out["tool_calls"] == results
    assert not [s for s in out["skipped"] if s["reason"].endswith(("answered it", "issued it"))]
    store = open_store(str(db))
    try:
        issued: dict[str, set[str]] = defaultdict(set)
        started: dict[str, set[str]] = defaultdict(set)
        for e in store.iter_events(out["run_id"]):
            if e.kind == "model_end":
                issued[e.run_id].update(c.id for c in e.tool_calls)
            elif e.kind == "tool_start":
                started[e.run_id].add(e.call_id)
    finally:
        store.close()
    assert sum(len(v) for v in started.values()) == results
    assert all(started[r] <= issued[r] for r in started)


def test_dsh_zstd_concatenated_frames_read_like_the_plain_file(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    from hbeval.importers import read_trials
    from hbeval_core.events import dump_event

    plain = Path(next(f for f in _dsh_files() if "advanced" in f))
    data = plain.read_bytes()
    half = data.index(b"\n", len(data) // 2) + 1
    c = zstandard.ZstdCompressor()
    packed = tmp_path / "session.jsonl.zstd"
    packed.write_bytes(c.compress(data[:half]) + c.compress(data[half:]))
    a = read_trials("dsh", [plain], run_id="r")[0]
    b = read_trials("auto", [packed], run_id="r")[0]
    # The source id is the file's path; everything else is the same event for event.
    assert [dump_event(e).replace(str(plain), "F") for e in a.events] == [
        dump_event(e).replace(str(packed), "F") for e in b.events
    ]
    assert a.tool_calls > 0


def test_auto_on_a_folder_takes_only_recordings_and_names_a_bad_format(tmp_path: Path) -> None:
    out = imported(tmp_path / "auto.db", "auto", str(DSH))
    assert out["format"] == "dsh"
    assert sorted(f["path"] for f in out["files"]) == sorted(_dsh_files())  # no *.expected
    proc = hb("import", "nosuch", str(tmp_path / "missing"), "--db", str(tmp_path / "d.db"))
    assert proc.exit_code == 2 and "unknown format" in proc.stderr
    mixed = hb("import", "auto", str(TAU), str(PI_LARGE), "--db", str(tmp_path / "d.db"))
    assert mixed.exit_code == 2 and "different formats" in mixed.stderr
