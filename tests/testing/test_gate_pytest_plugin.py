"""The pytest plugin: a project gates a report inside its own test suite with ``hbeval_gate``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hbeval.testing.pytest_plugin import assert_gate
from tests.report.test_report_fixtures import demo, rebound, write_json


def test_a_project_suite_gates_its_report(tmp_path: Path) -> None:
    run = demo()
    other = run.careful.to_dict()
    other["fingerprints"]["measurement"] = "0000000000000000"
    other = rebound(other)
    careful = write_json(tmp_path / "careful.json", run.careful)
    naive = write_json(tmp_path / "naive.json", run.naive)
    baseline = write_json(tmp_path / "other.json", other)
    (tmp_path / "test_release.py").write_text(
        textwrap.dedent(
            f"""
            def test_careful_passes(hbeval_gate):
                assert hbeval_gate({str(careful)!r}).verdict == "pass"

            def test_naive_fails(hbeval_gate):
                hbeval_gate({str(naive)!r}, floors={{"pei": 0.75}})

            def test_unmeasured_can_skip(hbeval_gate):
                hbeval_gate({str(careful)!r}, floors={{"csi": 0.7}}, on_insufficient="skip")

            def test_other_fingerprint_is_refused(hbeval_gate):
                hbeval_gate({str(careful)!r}, baseline={str(baseline)!r})
            """
        )
    )
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
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
            "-rA",
            str(tmp_path / "test_release.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "2 failed, 1 passed, 1 skipped" in out, out
    assert "hbeval gate FAILED (run demo-naive-" in out
    assert "  - FRR 0.333 is below its floor 0.65" in out
    assert "security gate not passed" in out
    assert "hbeval gate: insufficient data" in out and "unmeasured: csi" in out
    assert "hbeval gate refused: refusing the baseline check" in out


def test_assert_gate_returns_the_result_and_fails_in_process() -> None:
    result = assert_gate(demo().careful)
    assert result.verdict == "pass"
    with pytest.raises(pytest.fail.Exception, match=r"IRS 0 is below its floor 0\.6"):
        assert_gate(demo().naive)
    with pytest.raises(
        pytest.fail.Exception,
        match=r"explained share 0 is below its floor 0\.5: \d+ of \d+ tool calls came from a "
        r"model message that stated no reason",
    ):
        assert_gate(demo().naive, floors={"explained_share": 0.5})
    with pytest.raises(pytest.fail.Exception, match="insufficient data"):
        assert_gate(demo().careful, floors={"csi": 0.7})
    with pytest.raises(pytest.fail.Exception, match="cannot read the report"):
        assert_gate("/nonexistent/report.json")
    with pytest.raises(ValueError, match="on_insufficient"):
        assert_gate(demo().careful, on_insufficient="ignore")
