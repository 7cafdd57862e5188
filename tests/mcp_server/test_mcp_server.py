"""``hbeval mcp``: a real MCP client session against a real server subprocess over a demo store.

The store holds the demo's two runs and a second run of the careful agent with EDM attached (so
there are precedents to recall and a trend of two runs). One stdio session lists the tools and
calls each one, including malformed calls between good ones; every figure is checked against
the command line's ``--json`` output, and the intervals against the Wilson formula written out
here.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytest.importorskip("mcp")

from hbeval.cli import app
from hbeval.cli._demo import demo_trace_path
from tests.intervals import by_scenario, clustered_wilson, effective_n, faulted_groups, frr_success

TOOLS = {
    "list_runs",
    "run_metrics",
    "score_trace",
    "compare_runs",
    "recall_memory",
    "explain",
    "reliability_trend",
}
QUESTION = "Where is my order A1001? It has not arrived yet."


def cli_json(*args: str) -> Any:
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2 always keeps stderr apart
        runner = CliRunner()
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code in (0, 3), (args, result.exit_code, result.output)
    return json.loads(result.stdout)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval, from its textbook formula (z = 1.96, the reference's table)."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo's runs, then the careful agent again with EDM admitting its qualified trials."""
    from hbeval.demo import demo_agents, run_demo
    from hbeval.memory import EDM
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery

    folder = tmp_path_factory.mktemp("mcp")
    db = folder / "hbeval.db"
    reports = run_demo(folder, str(db))
    adapter, careful, _naive, tasks, _ = demo_agents()
    st, edm = open_store(db), EDM(db)
    try:
        again = run_battery(
            adapter,
            careful,
            tasks,
            Battery.hbeval(n_scenarios=18, seed=42),
            store=st,
            agent_id="demo-careful",
            memory=edm,
        )
    finally:
        st.close()
        edm.close()
    return {
        "db": str(db),
        "folder": folder,
        "reports": {name: report.to_dict() for name, report in reports.items()},
        "again": again.to_dict(),
    }


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _session(db: str, cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hbeval.cli", "mcp", "--db", db],
        env=dict(os.environ),
        cwd=str(cwd),
    )
    out: dict[str, Any] = {"calls": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        out["server"] = (init.serverInfo.name, init.serverInfo.version)
        listed = await session.list_tools()
        out["tools"] = {t.name: t for t in listed.tools}
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            text = "".join(getattr(c, "text", "") for c in result.content)
            out["calls"].append((name, result.isError, result.structuredContent, text))
    return out


@pytest.fixture(scope="module")
def session(store: dict[str, Any]) -> dict[str, Any]:
    """One client session: every tool, with malformed calls in between (the server must live on)."""
    careful = store["reports"]["careful"]["run_id"]
    naive = store["reports"]["naive"]["run_id"]
    again = store["again"]["run_id"]
    trace = demo_trace_path().read_text(encoding="utf-8")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_runs", {}),
        ("run_metrics", {"run_id": 5}),  # malformed: not a string
        ("run_metrics", {"run_id": naive}),
        ("run_metrics", {"run_id": careful}),
        ("run_metrics", {"run_id": "no-such-run"}),
        ("score_trace", {"events": trace}),
        ("score_trace", {"events": '{"kind": "tool_end"'}),  # malformed JSONL
        ("compare_runs", {"run_a": careful, "run_b": naive}),
        ("recall_memory", {"context": QUESTION, "agent_id": "demo-careful", "k": 2}),
        ("recall_memory", {"context": QUESTION, "agent_id": "demo-careful", "k": 0}),
        ("explain", {"text": QUESTION, "agent_id": "demo-careful"}),
        ("explain", {"text": QUESTION, "agent_id": "demo-naive"}),
        ("reliability_trend", {"agent_id": "demo-careful"}),
        ("list_runs", {"agent_id": "demo-naive"}),
        ("compare_runs", {"run_a": careful}),  # malformed: run_b missing
        ("list_runs", {}),
    ]
    out = asyncio.run(_session(store["db"], store["folder"], calls))
    out["by_call"] = out["calls"]
    out["ids"] = {"careful": careful, "naive": naive, "again": again}
    return out


def answer(session: dict[str, Any], index: int) -> dict[str, Any]:
    name, is_error, structured, text = session["calls"][index]
    assert not is_error, (name, text)
    assert structured == json.loads(text), "structured content and text content differ"
    return structured


def error(session: dict[str, Any], index: int) -> str:
    name, is_error, _structured, text = session["calls"][index]
    assert is_error, (name, text)
    return text


def test_the_server_lists_the_seven_read_only_tools_with_typed_inputs(session: dict) -> None:
    from hbeval_core import __version__

    assert session["server"] == ("hbeval", __version__)
    tools = session["tools"]
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.readOnlyHint is True
        assert tool.description
    assert tools["run_metrics"].inputSchema["required"] == ["run_id"]
    assert tools["recall_memory"].inputSchema["properties"]["k"]["type"] == "integer"


def test_list_runs_is_runs_list_json(session: dict, store: dict) -> None:
    assert answer(session, 0) == cli_json("runs", "list", "--db", store["db"])
    assert len(answer(session, 0)["runs"]) == 3
    assert answer(session, 13) == cli_json(
        "runs", "list", "--db", store["db"], "--agent-id", "demo-naive"
    )


def test_run_metrics_are_the_reports_figures_with_wilson_intervals(
    session: dict, store: dict
) -> None:
    for index, name in ((2, "naive"), (3, "careful")):
        got = answer(session, index)
        run_id = session["ids"][name]
        cli = cli_json("report", run_id, "--db", store["db"])
        (entry,) = cli["reports"].values()
        report = entry["report"]
        assert got["run_id"] == run_id and got["verdict"] == report["verdict"]
        assert got["metrics"] == report["metrics"]
        assert got["undefined"] == report["undefined"] == {"csi": "single_run"}
        assert got["metrics"]["csi"] is None  # undefined, never zero
        assert got["scores"] == entry["scores"]
        assert got["pass_rate"] == report["pass_rate"]
        assert got["reliability_gap"] == report["reliability_gap"]

        # Counts taken from the report's trials by hand; the interval is clustered by scenario
        # (tests/intervals.py, written out by hand), the independent Wilson one beside it.
        scored = [t for t in report["trials"] if t["outcome"] in ("pass", "fail", "timeout")]
        faulted = [t for t in scored if t["verdict"]["faulted"]]
        frr = (sum(frr_success(t) for t in faulted), len(faulted))
        judged = [t for t in scored if t["verdict"]["judged"]]
        irs = (sum(t["verdict"]["irs_score"] == 1.0 for t in judged), len(judged))
        groups = {
            "frr": faulted_groups(report),
            "irs": by_scenario(judged, lambda t: True, lambda t: int(t["verdict"]["irs_score"])),
        }
        for metric, (s, n) in (("frr", frr), ("irs", irs)):
            ci = got["intervals"][metric]
            assert (ci["successes"], ci["n"]) == (s, n)
            assert (ci["low"], ci["high"]) == pytest.approx(clustered_wilson(groups[metric]))
            assert ci["independent"] == pytest.approx(list(wilson(s, n)), abs=1e-12)
            assert ci["effective_n"] == pytest.approx(effective_n(groups[metric]))
        assert got["interval_undefined"]["pei"] == "mean_not_proportion"
        assert got["interval_undefined"]["ti"] == "mean_not_proportion"
        assert got["interval_undefined"]["csi"] == "single_run"
    # The demo's naive figures (README): FRR 0.308 [0.12, 0.59] over 13 scenarios, IRS 0.000.
    naive = answer(session, 2)["intervals"]
    assert round(naive["frr"]["low"], 2) == 0.12 and round(naive["frr"]["high"], 2) == 0.59
    assert naive["irs"]["low"] == 0.0


def test_score_trace_is_score_json(session: dict) -> None:
    got = dict(answer(session, 5))
    cli = cli_json("score", str(demo_trace_path()))
    assert got.pop("source") == "events" and cli.pop("source") == str(demo_trace_path())
    assert got == cli
    assert got["step_count"] == 10


def test_compare_runs_is_compare_json(session: dict, store: dict) -> None:
    ids = session["ids"]
    cli = cli_json("compare", ids["careful"], ids["naive"], "--db", store["db"])
    assert answer(session, 7) == cli
    assert cli["a"]["label"] == "demo-careful" and cli["b"]["label"] == "demo-naive"


def test_recall_memory_returns_qualified_precedents_of_that_agent_only(
    session: dict, store: dict
) -> None:
    got = answer(session, 8)
    assert 1 <= got["count"] <= 2 and len(got["precedents"]) == got["count"]
    stored = cli_json("memory", "list", "--db", store["db"], "--agent-id", "demo-careful")
    by_id = {ep["episode_id"]: ep for ep in stored["episodes"]}
    assert stored["count"] > 0
    sims = [p["similarity"] for p in got["precedents"]]
    assert sims == sorted(sims, reverse=True) and sims[-1] >= got["threshold"]
    for shown in got["precedents"]:
        precedent = dict(shown)
        similarity = precedent.pop("similarity")
        assert 0 < similarity <= 1
        assert precedent == by_id[precedent["episode_id"]]  # the stored episode, verbatim
        assert precedent["agent_id"] == "demo-careful"
        assert precedent["run_id"] == session["ids"]["again"]
    assert all(line.startswith("Precedent ep-") for line in got["rendered"])


def test_explain_is_memory_explain_json_grounded_or_deferred(session: dict, store: dict) -> None:
    grounded = answer(session, 10)
    cli = cli_json("memory", "explain", QUESTION, "--agent-id", "demo-careful", "--db", store["db"])
    assert grounded == cli and grounded["grounded"] is True
    # Explain cites the closest precedent recall found (several episodes may tie on similarity).
    top = answer(session, 8)["precedents"][0]
    assert grounded["similarity"] == pytest.approx(top["similarity"], abs=1e-4)
    assert grounded["cited_episode_id"].startswith("ep-")
    deferred = answer(session, 11)
    cli = cli_json("memory", "explain", QUESTION, "--agent-id", "demo-naive", "--db", store["db"])
    assert deferred == cli and deferred["grounded"] is False
    assert deferred["deferred_to_human"] is True and deferred["cited_episode_id"] is None


def test_reliability_trend_is_each_runs_report_oldest_first(session: dict, store: dict) -> None:
    got = answer(session, 12)
    ids = session["ids"]
    assert got["agent_id"] == "demo-careful" and got["run_count"] == 2
    (series,) = got["series"]
    assert [p["run_id"] for p in series["runs"]] == [ids["careful"], ids["again"]]
    runs = {r["run_id"]: r for r in cli_json("runs", "list", "--db", store["db"])["runs"]}
    assert series["measurement_fingerprint"] == runs[ids["careful"]]["measurement_fingerprint"]
    for point in series["runs"]:
        (entry,) = cli_json("report", point["run_id"], "--db", store["db"])["reports"].values()
        assert point["metrics"] == entry["report"]["metrics"]
        assert point["undefined"] == entry["report"]["undefined"]
        assert point["pass_rate"] == entry["report"]["pass_rate"]["rate"]
        assert point["created_at"] == runs[point["run_id"]]["created_at"]
    (latest,) = cli_json("report", ids["again"], "--db", store["db"])["reports"].values()
    assert series["csi"] == latest["report"]["csi_info"]
    assert series["csi"]["runs_used"] == 2


def test_malformed_arguments_are_tool_errors_naming_the_field_and_the_server_serves_on(
    session: dict,
) -> None:
    assert "run_id" in error(session, 1)
    assert "run_id: no report for run 'no-such-run'" in error(session, 4)
    assert "events: line 1" in error(session, 6)
    assert "k: must be an integer from 1 to 20" in error(session, 9)
    assert "run_b" in error(session, 14)
    # Every call after an error was answered, up to the last one.
    assert answer(session, 15) == answer(session, 0)


def test_bad_store_is_exit_2_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    done = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", "mcp", "--db", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"hbeval: --db: no store at {missing}; pass the store a battery run or the demo wrote"
    )
    assert not missing.exists()


def test_streamable_http_binds_localhost_and_serves_the_tools(store: dict) -> None:
    from mcp import ClientSession
    from mcp.client import streamable_http

    # The SDK renamed the client in 1.2x; older releases of the supported range have the old name.
    connect = (
        getattr(streamable_http, "streamable_http_client", None)
        or streamable_http.streamablehttp_client
    )

    port = _port()
    server = subprocess.Popen(
        [sys.executable, "-m", "hbeval.cli", "mcp", "--db", store["db"], "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            time.sleep(0.05)

        async def talk() -> tuple[set[str], dict[str, Any]]:
            url = f"http://127.0.0.1:{port}/mcp"
            async with connect(url) as (read, write, _), ClientSession(read, write) as session:
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                result = await session.call_tool("list_runs", {"agent_id": "demo-naive"})
                return names, result.structuredContent or {}

        names, runs = asyncio.run(talk())
        assert names == TOOLS
        assert [r["agent_id"] for r in runs["runs"]] == ["demo-naive"]
        listening = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True
        ).stdout
        if listening:  # ss may be missing; then only the client's connection is checked
            assert listening.split()[3] == f"127.0.0.1:{port}", listening
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_cli_and_the_tools_load_without_importing_the_sdk() -> None:
    code = (
        "import sys, hbeval.cli, hbeval.mcp_server; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_stored_report_edited_by_hand_is_refused_over_mcp(
    store: dict[str, Any], tmp_path: Path
) -> None:
    """The server reads reports from the store; one whose figures its trials do not give (the
    PEI raised in the SQLite file) is refused, naming the figure, and the server lives on."""
    import shutil
    import sqlite3

    db = tmp_path / "edited.db"
    shutil.copy(store["db"], db)
    naive = store["reports"]["naive"]["run_id"]
    conn = sqlite3.connect(db)
    try:
        (body,) = conn.execute("SELECT body FROM reports WHERE run_id = ?", (naive,)).fetchone()
        report = json.loads(body)
        report["metrics"]["pei"] = 0.99
        conn.execute("UPDATE reports SET body = ? WHERE run_id = ?", (json.dumps(report), naive))
        conn.commit()
    finally:
        conn.close()
    careful = store["reports"]["careful"]["run_id"]
    calls = [("run_metrics", {"run_id": naive}), ("run_metrics", {"run_id": careful})]
    out = asyncio.run(_session(str(db), store["folder"], calls))
    text = error(out, 0)
    assert "does not follow from its own trials" in text and "metrics.pei: 0.99" in text
    assert answer(out, 1)["run_id"] == careful
