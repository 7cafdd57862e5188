"""The adapter contract lives in ``hbeval_core.contract``; the old runner paths are the same objects."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hbeval_core
import hbeval_core.contract as contract
from hbeval.memory import open_edm

with pytest.warns(DeprecationWarning):  # 0.1's paths, forwarded until 0.2 (hbeval_core._moved)
    from hbeval_core.faults import clock as faults_clock
    from hbeval_core.runner import context, outcome, protocol, task


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (task, ["Task", "ExpectedCall", "Verifier"]),
        (outcome, ["Message", "Outcome", "ToolCall", "outcome_of", "verifier_input"]),
        (protocol, ["Adapter", "TrialResult", "token_usage", "trace_kinds"]),
        (
            context,
            ["TrialContext", "current_trial", "trial_context", "InfraError", "BudgetExceeded"],
        ),
        (faults_clock, ["Clock", "AsyncClock", "SystemClock", "FakeClock"]),
    ],
)
def test_old_paths_are_the_contracts_objects(module: object, names: list[str]) -> None:
    for name in names:
        assert getattr(module, name) is getattr(contract, name), name


def test_old_runner_path_and_package_root_export_the_contract() -> None:
    runner = importlib.import_module("hbeval_core.runner")
    for name in ("Adapter", "TrialResult", "Task", "Outcome", "VirtualClock", "current_trial"):
        with pytest.warns(DeprecationWarning):
            assert getattr(runner, name) is getattr(contract, name), name
    for name in ("Adapter", "TrialResult", "Task", "ExpectedCall", "Outcome", "ToolCall"):
        assert getattr(hbeval_core, name) is getattr(contract, name), name


def test_one_trial_context_variable() -> None:
    ctx = contract.TrialContext(run_id="r", trial_run_id="r/s000-t0", trial_key="s000-t0")
    assert context.current_trial() is None
    with context.trial_context(ctx):
        assert contract.current_trial() is ctx
    assert contract.current_trial() is None


class _Lessons:
    def recall(self, context: str, agent_id: str) -> list[str]:
        return [f"{agent_id}: {context}"]

    def admit(self, episode: dict[str, object]) -> bool:
        return True


class _RecallOnly:
    def recall(self, context: str, agent_id: str) -> list[str]:
        return []


def test_memory_protocol_is_recall_and_admit(tmp_path: Path) -> None:
    assert isinstance(_Lessons(), contract.EpisodeMemory)
    assert not isinstance(_RecallOnly(), contract.EpisodeMemory)
    edm = open_edm(tmp_path / "edm.db")
    try:
        assert isinstance(edm, contract.EpisodeMemory)
    finally:
        edm.close()


def test_adapter_memories_are_the_contracts() -> None:
    pytest.importorskip("crewai")
    pytest.importorskip("autogen_core")
    import hbeval_autogen
    import hbeval_crewai

    assert hbeval_crewai.Memory is contract.EpisodeMemory
    assert hbeval_autogen.EpisodeBacking is contract.EpisodeMemory
    assert isinstance(hbeval_crewai.ListMemory(), contract.EpisodeMemory)


def test_virtual_clock_skips_waits() -> None:
    clock = contract.VirtualClock()
    before = clock.now()
    clock.sleep(30.0)
    assert clock.slept == 30.0
    assert clock.now() - before >= 30.0
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        clock.sleep(-1)
    assert isinstance(clock, contract.AsyncClock)


def test_contract_imports_neither_runner_nor_heavy_modules() -> None:
    code = textwrap.dedent(
        """
        import sys
        import hbeval_core.contract
        loaded = [m for m in ("hbeval.runner", "hbeval.scoring", "hbeval.store",
                              "pydantic", "numpy") if m in sys.modules]
        print(loaded)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_adapter_info_names_the_bad_field() -> None:
    with pytest.raises(ValueError, match="field 'adapter' must be 'module:attr'"):
        contract.AdapterInfo(kind="x", adapter="x_adapter.XAdapter")
    with pytest.raises(ValueError, match="field 'kind'"):
        contract.AdapterInfo(kind=" ", adapter="x_adapter:XAdapter")


def test_every_shipped_adapter_is_announced() -> None:
    from hbeval.runner.registry import discovered_adapters

    found = discovered_adapters()
    assert set(found) >= {"plain", "langgraph", "crewai", "autogen"}
    assert found["plain"].adapter == "hbeval_plain._adapter:PlainAdapter"
    assert found["langgraph"].demo == "hbeval_langgraph.examples"
