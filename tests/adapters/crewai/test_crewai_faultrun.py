"""FaultRun and the command line on the example crew; the memory hook (recall and admission)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hbeval_core.contract import Task
from hbeval_core.events import ModelStart
from tests.adapters.crewai.test_crewai_fixtures import scripted_crew

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "crewai_research_crew.py"
TASK = Task(id="two_tools", question="Look up order A1, then add 2 and 3.")


class TinyMemory:
    """The smallest memory the adapter accepts: fixed precedents, admits passed episodes."""

    def __init__(self, precedents: list[str]) -> None:
        self.precedents = precedents
        self.recalled: list[tuple[str, str]] = []
        self.offered: list[dict[str, Any]] = []

    def recall(self, context: str, agent_id: str) -> list[str]:
        self.recalled.append((context, agent_id))
        return list(self.precedents)

    def admit(self, episode: dict[str, Any]) -> bool:
        self.offered.append(episode)
        return bool((episode.get("verdict") or {}).get("passed"))


def _example() -> Any:
    from hbeval.runner.loader import load_module

    return load_module(str(EXAMPLE))


@pytest.mark.parametrize("native", [False, True], ids=["react", "native"])
def test_memory_precedents_reach_the_first_model_call_only(native: bool) -> None:
    from hbeval_core.capture import PRECEDENTS_HEADER
    from hbeval_crewai import CrewAIAdapter, Memory

    memory = TinyMemory(["Order lookups fail on Mondays; retry the archive."])
    assert isinstance(memory, Memory)
    adapter = CrewAIAdapter()
    adapter.memory_hook(memory)
    try:
        crew = scripted_crew(native=native)
        result = adapter.run_trial(crew, TASK, None, None)
    finally:
        adapter.memory_hook(None)
    assert memory.recalled and memory.recalled[0][1] == "clerk"
    assert TASK.question in memory.recalled[0][0]
    starts = [e for e in result.events if isinstance(e, ModelStart)]
    with_memory = [s for s in starts if any(PRECEDENTS_HEADER in m.content for m in s.messages)]
    assert with_memory == [starts[0]] and starts[0].attrs["memories"] == 1
    # The model really received it (in its first call, and in its history afterwards).
    first_call = crew.agents[0].llm.calls[0]
    assert any(PRECEDENTS_HEADER in str(m.get("content")) for m in first_call)
    assert result.metadata["memories_injected"] == 1


def test_fault_run_on_an_unchanged_crew_file_yields_receipts_and_admits_to_memory() -> None:
    from hbeval_core.faults import Battery
    from hbeval_crewai import FaultRun, ListMemory

    example = _example()
    memory = ListMemory()
    run = FaultRun(
        example.crew,
        tasks=example.tasks,
        battery=Battery.hbeval(10, seed=42),
        trials=1,
        seed=42,
        memory=memory,
    )
    result = run.run()
    assert result is run.report
    report = result.to_dict()
    assert report["isolation"]["isolated"] is True
    delivery = report["fault_delivery"]
    assert delivery["injected"] > 0 and delivery["delivered"] == delivery["injected"]
    faulted = [t for t in report["trials"] if t["faults"]]
    assert faulted and all(f["delivered"] is True for t in faulted for f in t["faults"])
    assert len(run.episodes) == len(report["trials"])
    passed = [e for e in run.episodes if e["outcome"] == "pass"]
    assert [e for e in run.episodes if e["admitted"]] == passed
    assert memory.admitted == passed and passed


@pytest.mark.parametrize("target", ["crew", "naive_native"])
def test_cli_battery_run_detects_the_crew(tmp_path: Path, target: str) -> None:
    from typer.testing import CliRunner

    from hbeval.cli import app

    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "battery",
            "run",
            f"{EXAMPLE}:{target}",
            "--trials",
            "1",
            "--scenarios",
            "10",
            "--db",
            str(tmp_path / "hb.db"),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["isolation"]["isolated"] is True  # the factory gave each trial its own crew
    assert report["scenario_count"] == 10
    assert report["fault_delivery"]["delivered"] == report["fault_delivery"]["injected"] > 0


def test_careful_and_naive_differ_where_the_battery_looks() -> None:
    from hbeval_core.faults import Battery
    from hbeval_crewai import FaultRun

    example = _example()
    battery = Battery.hbeval(10, seed=7)
    assert "adversarial" in [s.fault_type for s in battery.scenarios]
    reports = {
        name: FaultRun(
            getattr(example, name), tasks=example.tasks, battery=battery, trials=1, seed=7
        )
        .run()
        .to_dict()
        for name in ("careful", "naive")
    }
    careful, naive = reports["careful"], reports["naive"]
    assert careful["agentdojo"]["targeted_attack_success_rate"] == 0.0
    assert naive["agentdojo"]["targeted_attack_success_rate"] == 1.0
    # Both link every call to its reply (hb-derive/2 TI); only the careful crew says why.
    assert careful["metrics"]["ti"] == naive["metrics"]["ti"] == 5.0
    assert careful["traceability"]["explained_share"] == 1.0
    assert naive["traceability"]["explained_share"] == 0.0
    assert careful["pass_rate"]["rate"] > naive["pass_rate"]["rate"]


def test_fault_run_admits_into_evaluation_driven_memory(tmp_path: Path) -> None:
    from hbeval.memory import open_edm
    from hbeval_core.faults import Battery
    from hbeval_crewai import FaultRun

    example = _example()
    edm = open_edm(tmp_path / "edm.db")
    run = FaultRun(
        example.careful,
        tasks=example.tasks,
        battery=Battery.hbeval(10, seed=3),
        trials=1,
        seed=3,
        memory=edm,
    )
    run.run()
    admitted = [e for e in run.episodes if e["admitted"]]
    assert admitted, [e.get("admit_error") for e in run.episodes]
    assert all(e["outcome"] == "pass" for e in admitted)
    # What EDM kept comes back as precedents for the same kind of task.
    assert edm.recall(example.tasks[0].question, agent_id="default")
