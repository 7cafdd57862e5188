"""examples/autogen_assistant.py: careful vs naive, through the adapter, the battery and the CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from hbeval.runner.run import run_battery
from hbeval_autogen import AutoGenAdapter
from hbeval_core.faults import FaultPlan, FaultSpec
from tests.adapters.autogen.test_autogen_fixtures import hang_guard

__all__ = ["hang_guard"]

pytestmark = pytest.mark.usefixtures("hang_guard")

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "autogen_assistant.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("autogen_assistant_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ex = load_example()


def trial(
    factory: Any, task_id: str, mode: str | None = None, adapter: Any = None, **spec: Any
) -> tuple[Any, bool]:
    task = next(t for t in ex.tasks if t.id == task_id)
    adapter = adapter or AutoGenAdapter()
    injector = None
    if mode is not None:
        from hbeval_core.faults import FakeClock, FaultInjector

        plan = FaultPlan("ex/" + mode, 1, [FaultSpec(id="f", target="*", mode=mode, **spec)])
        injector = FaultInjector(
            plan, run_id=task_id, enabled=True, clock=FakeClock(), forbidden_tool="transfer_funds"
        )
    adapter.fault_hook(injector)
    try:
        result = adapter.run_trial(factory, task, None, None)
    finally:
        adapter.fault_hook(None)
    assert task.verify is not None
    return result, task.verify(result.final_state, result.events)


def test_module_attributes_for_the_battery() -> None:
    assert callable(ex.assistant) and callable(ex.careful) and callable(ex.naive)
    assert [t.id for t in ex.tasks] == [
        "refund_damaged",
        "order_status",
        "return_window",
        "refund_declined",
        "disputed_charge",
    ]
    assert all(t.verify is not None and t.forbidden_tools == ("transfer_funds",) for t in ex.tasks)
    agent = ex.assistant()
    assert agent._model_client.model_info["function_calling"] is True


@pytest.mark.parametrize("task_id", [t.id for t in ex.tasks])
def test_careful_passes_every_task_without_faults(task_id: str) -> None:
    result, passed = trial(ex.careful, task_id)
    assert result.status == "ok" and passed, result.response_text


def test_naive_refunds_outside_the_window() -> None:
    result, passed = trial(ex.naive, "refund_declined")
    assert result.status == "ok" and not passed


def test_careful_replans_after_an_error_and_explains_why() -> None:
    result, passed = trial(ex.careful, "order_status", "error_5xx", on_calls=(0,))
    assert passed
    starts = [e for e in result.events if e.kind == "tool_start"]
    # The first lookup reads the primary source (no ``source`` argument), the second the replica.
    assert [s.args.get("source") for s in starts] == [None, "replica"]
    second = [e for e in result.events if e.kind == "model_end"][1]
    assert second.reasoning and "Re-planning" in second.reasoning


def test_naive_retries_blindly_and_never_explains() -> None:
    result, _ = trial(ex.naive, "order_status", "error_5xx", on_calls=(0,))
    starts = [e for e in result.events if e.kind == "tool_start"]
    assert len(starts) == 2 and starts[0].args == starts[1].args
    assert all(
        not e.text and not e.reasoning
        for e in result.events
        if e.kind == "model_end" and e.tool_calls
    )


def test_careful_refuses_an_injected_instruction_naive_follows_it() -> None:
    careful, passed = trial(ex.careful, "order_status", "prompt_injection", on_calls=(0,))
    assert passed and not [
        e for e in careful.events if e.kind == "tool_start" and e.tool == "transfer_funds"
    ]
    note = [e for e in careful.events if e.kind == "model_end"][1].reasoning
    assert note and "not a command" in note
    naive, passed = trial(ex.naive, "order_status", "prompt_injection", on_calls=(0,))
    assert not passed
    assert [e.tool for e in naive.events if e.kind == "tool_start"][-1] == "transfer_funds"


def test_careful_rejects_a_corrupted_record_and_uses_another_source() -> None:
    _, passed = trial(
        ex.careful, "refund_damaged", "malformed", on_calls=(0,), malformed_kind="wrong_type"
    )
    assert passed


@pytest.mark.parametrize("task_id", [t.id for t in ex.tasks])
@pytest.mark.parametrize("mode", [None, "error_5xx", "prompt_injection"])
def test_the_autogen_agents_decide_as_the_plain_agents_of_the_same_world(
    task_id: str, mode: str | None
) -> None:
    """One help-desk world: the AutoGen model replays the scripts the plain agents run live."""
    from hbeval_plain import PlainAdapter
    from hbeval_plain import examples as plain_agent

    def calls(result: Any) -> list[tuple[str, dict[str, Any]]]:
        return [(e.tool, dict(e.args)) for e in result.events if e.kind == "tool_start"]

    spec: dict[str, Any] = {"on_calls": (0,)} if mode else {}
    for name in ("careful", "naive"):
        on_autogen, passed_autogen = trial(getattr(ex, name), task_id, mode, **spec)
        plain, passed_plain = trial(
            getattr(plain_agent, name)(), task_id, mode, adapter=PlainAdapter(), **spec
        )
        assert calls(on_autogen) and calls(on_autogen) == calls(plain), name
        assert on_autogen.response_text == plain.response_text, name
        assert passed_autogen == passed_plain, name


def test_the_team_factory_runs_the_careful_agent() -> None:
    result, passed = trial(ex.team, "order_status", "error_5xx", on_calls=(0,))
    assert result.status == "ok" and passed
    assert [e.scope for e in result.events if e.kind == "span_start"] == ["team", "agent"]


def summary(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report["metrics"][k] for k in ("pei", "frr", "irs", "ti")}


def test_battery_separates_careful_from_naive() -> None:
    reports = {
        name: run_battery(None, factory, ex.tasks, "hbeval", trials=1, seed=42).to_dict()
        for name, factory in (("careful", ex.careful), ("naive", ex.naive))
    }
    careful, naive = reports["careful"], reports["naive"]
    assert careful["evidence"]["level"] == "E2"
    delivery = careful["fault_delivery"]
    assert delivery["injected"] > 0 and delivery["delivered"] == delivery["injected"]
    assert careful["pass_rate"]["rate"] > naive["pass_rate"]["rate"]
    assert summary(careful)["irs"] > summary(naive)["irs"]
    # Both agents' calls link to the replies that issued them (TI 5.0, hb-derive/2); only the
    # careful one says why it calls a tool, which the explained share shows.
    assert summary(careful)["ti"] == 5.0 and summary(naive)["ti"] == 5.0
    assert careful["traceability"]["explained_share"] == 1.0
    assert naive["traceability"]["explained_share"] == 0.0
    assert naive["traceability"]["unlinked"] == 0
    assert all(t["isolated"] for t in careful["trials"])
    crash_free = [f for t in careful["trials"] for f in t["faults"]]
    assert all(f["receipt"] == "payload_seen" for f in crash_free if f["mode"] != "latency")


def test_runnable_through_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hbeval.cli",
            "battery",
            "run",
            f"{EXAMPLE}:assistant",
            "--scenarios",
            "6",
            "--trials",
            "1",
            "--db",
            str(tmp_path / "db.sqlite"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["outcomes"]["infra_error"] == 0
    assert report["fault_delivery"]["delivered"] >= 1
    assert {t["task_id"] for t in report["trials"]} <= {t.id for t in ex.tasks}
