"""A battery of an AutoGen agent on the real ``OpenAIChatCompletionClient`` prints nothing on
stderr: no "Task exception was never retrieved ... Event loop is closed" from the client's pooled
connections outliving the event loop of the trial that opened them.

The battery runs in a child interpreter, as ``hbeval battery run`` would, so what it prints is
exactly what a user sees; the garbage collector runs between trials there as it does anywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("autogen_agentchat")
pytest.importorskip("autogen_ext.models.openai")

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import gc, sys
    import hbeval
    from hbeval.testing import ScriptedOpenAIServer
    from hbeval.testing.conformance import two_tool_task
    from tests.conformance.providers import StandardResponder
    from tests.conformance.test_autogen_openai import openai_agent, review_team

    with ScriptedOpenAIServer(StandardResponder()) as server:
        for make in (lambda: openai_agent(server), lambda: review_team(server)):
            report = hbeval.run_battery(
                make, tasks=[two_tool_task()], trials=2, scenarios=6, seed=3
            )
            gc.collect()
            print("trials", len(report.trials))
    gc.collect()
    """
)


def test_a_battery_on_the_openai_client_prints_no_event_loop_noise(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(ROOT),
        CREWAI_DISABLE_TELEMETRY="true",
        OTEL_SDK_DISABLED="true",
        PYTHONWARNINGS="ignore",
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts = [line for line in done.stdout.splitlines() if line.startswith("trials")]
    assert len(counts) == 2 and all(int(c.split()[1]) >= 12 for c in counts), done.stdout
    assert "Event loop is closed" not in done.stderr, done.stderr[-3000:]
    assert "Task exception was never retrieved" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip() == "", done.stderr[-3000:]
