"""``assert_reliable`` and the ``hbeval_battery`` fixture: a battery run and its gate in one call."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from hbeval.runner.manifest import source_digests
from hbeval.store import open_store
from hbeval.testing import assert_reliable
from hbeval.testing.pytest_plugin import assert_gate
from tests.intervals import clustered_wilson, faulted_groups

ROOT = Path(__file__).resolve().parents[2]
Failed = pytest.fail.Exception

AGENT_SOURCE = """
from hbeval_plain.examples import careful as _careful
from hbeval_plain.examples import tasks


def make():
    return _careful()
"""


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval, written out here from its textbook formula."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_the_careful_demo_agent_passes_and_the_naive_one_fails_naming_frr_and_irs(
    tmp_path: Path,
) -> None:
    pytest.importorskip("langgraph")
    from hbeval_langgraph.examples import careful

    db = tmp_path / "h.db"
    ok = assert_reliable(careful, floors={"frr": 0.8}, trials=3, db=db)
    assert ok.verdict == "pass" and not ok.reused
    assert ok.report_path.is_file()
    assert json.loads(ok.report_path.read_text())["run_id"] == ok.run_id

    with pytest.raises(Failed) as caught:
        assert_reliable(
            str(ROOT / "examples" / "langgraph_support_agent.py") + ":naive",
            floors={"frr": 0.8},
            trials=3,
            db=db,
        )
    message = str(caught.value)
    report_line = next(line for line in message.splitlines() if "report:" in line)
    report = json.loads(Path(report_line.split("report:", 1)[1].strip()).read_text())
    trials = [t for t in report["trials"] if t["outcome"] in ("pass", "fail")]
    faulted = [t for t in trials if t["verdict"]["faulted"]]
    frr_ok = sum(1 for t in faulted if t["outcome"] == "pass")
    judged = [t["verdict"]["irs_score"] for t in trials if t["verdict"]["judged"]]
    irs_ok = sum(1 for s in judged if s == 1.0)
    # The demo's published figures (README): FRR 0.308 [0.12, 0.59], IRS 0.000 [0.00, 0.23],
    # clustered by scenario (13 faulted scenarios of 3 trials each).
    assert (frr_ok, len(faulted)) == (12, 39) and (irs_ok, len(judged)) == (0, 39)
    lo, hi = clustered_wilson(faulted_groups(report))
    assert f"FRR {frr_ok / len(faulted):.3f} [{lo:.2f}, {hi:.2f}]" in message
    assert "[0.12, 0.59]" in message and "is below its floor 0.8" in message
    assert "effective n 13.0" in message
    assert f"IRS {irs_ok / len(judged):.3f} [0.00, 0.23]" in message
    assert "is below its floor 0.6" in message
    assert "security gate not passed" in message
    assert "naive is not reliable enough" in message


def _agent(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "agent.py"
    path.write_text(AGENT_SOURCE + extra, encoding="utf-8")
    return f"{path}:make"


def test_reuse_takes_a_stored_run_of_the_same_code_and_never_of_changed_code(
    tmp_path: Path,
) -> None:
    db = tmp_path / "h.db"
    options = {
        "scenarios": 6,
        "trials": 1,
        "db": db,
        "floors": {"pei": 0.5},
        "reuse": True,
        "skip_security": True,
    }
    first = assert_reliable(_agent(tmp_path), **options)
    again = assert_reliable(_agent(tmp_path), **options)
    assert not first.reused and again.reused and again.run_id == first.run_id
    fresh = assert_reliable(_agent(tmp_path), **{**options, "reuse": False})
    assert not fresh.reused and fresh.run_id != first.run_id

    # One changed line in the agent's file changes the manifest hash: it runs anew.
    changed = assert_reliable(_agent(tmp_path, "\n# tuned\n"), **options)
    assert not changed.reused and changed.run_id not in (first.run_id, fresh.run_id)
    assert changed.report.manifest_hash != first.report.manifest_hash
    assert changed.report.to_dict()["fingerprints"] == first.report.to_dict()["fingerprints"]
    store = open_store(db)
    try:
        runs = {r.run_id: r for r in store.list_runs(agent_id="make")}
    finally:
        store.close()
    assert len(runs) == 3
    sources = runs[str(changed.run_id)].config["manifest"]["sources"]
    assert any(key.endswith("agent.py") for key in sources), sources


def test_source_digests_cover_the_user_file_and_skip_installed_packages(tmp_path: Path) -> None:
    import json as stdlib_json

    from hbeval.runner.loader import load_object

    obj = load_object(_agent(tmp_path))
    digests = source_digests(obj, stdlib_json.dumps)
    assert [k for k in digests if k.endswith("agent.py")], digests
    assert not [k for k in digests if k.startswith("json")], digests


def test_insufficient_data_fails_with_its_reason_unless_allowed(tmp_path: Path) -> None:
    options = {"scenarios": 6, "trials": 1, "db": tmp_path / "h.db", "reuse": True}
    floors = {"csi": 0.7, "pei": 0.5}
    with pytest.raises(Failed, match=r"insufficient data .*unmeasured: csi"):
        assert_reliable(_agent(tmp_path), floors=floors, **options)
    allowed = assert_reliable(_agent(tmp_path), floors=floors, on_insufficient="allow", **options)
    assert allowed.verdict == "insufficient_data" and allowed.reused
    with pytest.raises(ValueError, match="on_insufficient"):
        assert_reliable(_agent(tmp_path), on_insufficient="maybe", **options)
    with pytest.raises(ValueError, match="tasks"):
        assert_reliable(lambda: None, **options)


def test_skip_security_is_the_one_spelling_and_require_security_a_deprecated_alias() -> None:
    from tests.report.test_report_fixtures import demo

    report = demo().careful
    skipped = assert_gate(report, skip_security=True)
    assert skipped.settings["require_security"] is False
    assert assert_gate(report).settings["require_security"] is True
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        alias = assert_gate(report, require_security=False)
    assert [w for w in seen if issubclass(w.category, DeprecationWarning)]
    assert "skip_security=True" in str(seen[0].message)
    assert alias.settings == skipped.settings
    with pytest.raises(ValueError, match="contradicts"), pytest.warns(DeprecationWarning):
        assert_gate(report, skip_security=True, require_security=True)


def test_the_fixture_runs_a_battery_and_reuses_with_the_option(tmp_path: Path) -> None:
    target = _agent(tmp_path)
    db = tmp_path / "h.db"
    (tmp_path / "test_agent.py").write_text(
        textwrap.dedent(
            f"""
            def test_agent(hbeval_battery):
                result = hbeval_battery(
                    {target!r}, scenarios=6, trials=1, floors={{"pei": 0.5}}, db={str(db)!r},
                    skip_security=True,
                )
                print("REUSED", result.reused, result.run_id)

            def test_too_high(hbeval_battery):
                hbeval_battery(
                    {target!r}, scenarios=6, trials=1, floors={{"pei": 0.99}}, db={str(db)!r},
                    skip_security=True,
                )
            """
        )
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

    def run(*extra: str) -> str:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "hbeval.testing.pytest_plugin",
                "-p",
                "no:cacheprovider",
                "-q",
                "-s",
                "-rA",
                *extra,
                str(tmp_path / "test_agent.py"),
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        return proc.stdout + proc.stderr

    first = run()
    assert "1 failed, 1 passed" in first, first
    assert "REUSED False" in first
    assert "PEI" in first and "is below its floor 0.99" in first and "report:" in first
    second = run("--hbeval-reuse")
    assert "REUSED True" in second, second
    assert "a stored run reused" in second


def test_a_battery_file_is_taken_as_the_command_line_takes_it(tmp_path: Path) -> None:
    battery = tmp_path / "smoke.yaml"
    battery.write_text(
        textwrap.dedent(
            """
            format: hbeval-battery-file/1
            name: smoke
            scenarios:
              - name: baseline
                mode: none
              - name: outage
                mode: error_5xx
                params: {http_status: 503}
                when: {attempts: [0]}
            """
        ),
        encoding="utf-8",
    )
    options = {"trials": 2, "db": tmp_path / "h.db", "skip_security": True}
    ok = assert_reliable(_agent(tmp_path), battery=str(battery), floors={"frr": 0.5}, **options)
    assert ok.verdict == "pass"
    data = ok.report.to_dict()
    # The file's two scenarios, not the built-in 18: one nominal, one outage, two trials each.
    assert data["run"]["battery"] == "user" and data["scenario_count"] == 2
    assert data["run"]["trial_count"] == 4
    faulted = [t for t in data["trials"] if t["verdict"]["faulted"]]
    assert len(faulted) == 2 and all(t["outcome"] == "pass" for t in faulted)
    with pytest.raises(ValueError, match="scenarios: a battery file names its own scenarios"):
        assert_reliable(_agent(tmp_path), battery=battery, scenarios=6, **options)
