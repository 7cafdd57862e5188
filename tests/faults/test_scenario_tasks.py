"""Scenarios meet the tasks that use their tools: pins, the matrix, and the declared-tools check.

A plain agent whose two tasks call different tools (``lookup_order`` for ``order``,
``check_stock`` for ``stock``). A scenario that fails ``check_stock`` assigned round-robin to the
``order`` task never fires; pinned (``tasks: [stock]``) or run as the matrix, it does; with the
tasks' ``tools:`` declared, the mismatched assignment is refused before any trial runs.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.runner.loader import tasks_from_data
from hbeval.runner.run import run_battery
from hbeval.scoring import FAULTABLE_FIX, delivery_warning
from hbeval.scoring._decision import decide_verdict
from hbeval.scoring._delivery import NOT_REACHED_FIX, not_reached
from hbeval.scoring._security import scored_trials, trial_records
from hbeval.store import InMemoryStore, open_store
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from hbeval_core.faults.userbattery import parse_battery
from hbeval_plain import ToolCallError, think, tool


@tool
def lookup_order(order_id: str) -> str:
    return f"order {order_id}: open"


@tool
def check_stock(sku: str) -> int:
    return 4


def agent(question: str) -> str:
    name, fn, args = (
        ("check_stock", check_stock, {"sku": "S1"})
        if "stock" in question
        else ("lookup_order", lookup_order, {"order_id": "A1"})
    )
    think(f"Calling {name}.", tool_calls=[(name, args)])
    try:
        result = fn(**args)
    except ToolCallError as exc:
        think(f"{name} failed ({exc}); answering without it.")
        return f"{question} -> could not check ({name} failed)"
    think(f"Read {result!r}.")
    return f"{question} -> {result}"


def _tasks(declared: bool) -> list[Task]:
    return [
        Task(
            id="order",
            question="Is order A1 open?",
            verify=lambda s, t: "open" in str(s),
            tools=("lookup_order",) if declared else None,
        ),
        Task(
            id="stock",
            question="How much stock of S1?",
            verify=lambda s, t: "4" in str(s),
            tools=("check_stock",) if declared else None,
        ),
    ]


def _battery(pin: list[str] | None = None) -> dict[str, Any]:
    outage: dict[str, Any] = {"name": "stock-outage", "mode": "error_5xx", "tools": ["check_stock"]}
    if pin is not None:
        outage["tasks"] = pin
    # Round robin: scenario 0 (the outage) runs task 0 ("order"), scenario 1 task 1.
    return {
        "format": "hbeval-battery-file/1",
        "name": "desk",
        "scenarios": [outage, {"name": "base", "mode": "none"}],
    }


def _run(battery: Any, declared: bool = False) -> Any:
    return run_battery(None, agent, _tasks(declared), battery, trials=1, store=InMemoryStore())


def _met(report: Any) -> list[tuple[str | None, str | None, bool]]:
    return [
        (t.fault_type, t.task_id, any(f.delivered is True for f in t.faults)) for t in report.trials
    ]


def test_round_robin_misses_and_a_pin_meets_the_task_that_calls_the_tool() -> None:
    assert _met(_run(parse_battery(_battery(), seed=42))) == [
        ("stock-outage", "order", False),
        ("none", "stock", False),
    ]
    pinned = parse_battery(_battery(["stock", "order"]), seed=42)
    assert [(s.index, s.task_id) for s in pinned.scenarios] == [
        (0, "stock"),
        (1, "order"),
        (2, None),
    ]
    assert pinned.spec()["scenarios"][0]["tasks"] == ["stock", "order"]
    assert "tasks" not in parse_battery(_battery(), seed=42).spec()["scenarios"][0]
    # Scenario 2 (base) runs task 2 mod 2 = "order".
    assert _met(_run(pinned)) == [
        ("stock-outage", "stock", True),
        ("stock-outage", "order", False),
        ("none", "order", False),
    ]


def test_the_matrix_runs_every_scenario_on_every_task() -> None:
    battery = parse_battery(_battery(), seed=42).matrix(["order", "stock"])
    assert battery.spec()["task_assignment"] == "matrix"
    assert _met(_run(battery)) == [
        ("stock-outage", "order", False),
        ("stock-outage", "stock", True),
        ("none", "order", False),
        ("none", "stock", False),
    ]
    built = Battery.hbeval(n_scenarios=6, seed=3).matrix(["order", "stock"])
    assert len(built) == 12 and {s.task_id for s in built.scenarios} == {"order", "stock"}
    assert built.spec_fingerprint() != Battery.hbeval(n_scenarios=6, seed=3).spec_fingerprint()
    with pytest.raises(ValueError, match="compat battery assigns tasks"):
        Battery.compat().matrix(["order"])


def test_declared_tools_refuse_a_scenario_no_task_can_meet_before_the_run(
    tmp_path: Path,
) -> None:
    store = open_store(str(tmp_path / "hb.db"))
    try:
        with pytest.raises(ValueError) as err:
            run_battery(
                None, agent, _tasks(True), parse_battery(_battery(), seed=42), trials=1, store=store
            )
        assert store.list_runs() == []  # refused before the run was opened
    finally:
        store.close()
    assert str(err.value).startswith(
        "scenario 'stock-outage': none of its tasks calls 'check_stock' (task order calls "
        "lookup_order), so its fault could never reach the agent"
    )
    # Pinned to the task that calls it, the same battery runs.
    assert _met(_run(parse_battery(_battery(["stock"]), seed=42), declared=True))[0][2] is True
    with pytest.raises(ValueError, match="pinned to task 'refund', which the tasks do not hold"):
        _run(parse_battery(_battery(["refund"]), seed=42))


def test_task_files_declare_tools_and_bad_values_are_named() -> None:
    (task,) = tasks_from_data([{"id": "a", "question": "q", "tools": ["lookup_order"]}])
    assert task.tools == ("lookup_order",)
    (plain,) = tasks_from_data([{"id": "a", "question": "q"}])
    assert plain.tools is None
    with pytest.raises(ValueError, match="tools"):
        tasks_from_data([{"id": "a", "question": "q", "tools": "lookup_order"}])


AGENT_MODULE = textwrap.dedent(
    """
    from hbeval_core.contract import Task
    from tests.faults.test_scenario_tasks import agent

    def make_agent():
        return agent

    tasks = [
        Task(id="order", question="Is order A1 open?", verify=lambda s, t: "open" in str(s),
             tools=("lookup_order",)),
        Task(id="stock", question="How much stock of S1?", verify=lambda s, t: "4" in str(s),
             tools=("check_stock",)),
    ]
    """
)


def test_cli_exits_2_before_the_run_and_matrix_runs(tmp_path: Path) -> None:
    (tmp_path / "desk_agent.py").write_text(AGENT_MODULE, encoding="utf-8")
    battery = tmp_path / "desk.json"
    battery.write_text(json.dumps(_battery()), encoding="utf-8")
    base = ["battery", "run", f"{tmp_path / 'desk_agent.py'}:make_agent", "--battery"]
    common = [str(battery), "--trials", "1", "--db", str(tmp_path / "hb.db")]
    res = CliRunner().invoke(app, [*base, *common])
    assert res.exit_code == 2, res.output
    assert "none of its tasks calls 'check_stock'" in res.output
    assert "--matrix" in res.output
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, [*base, *common, "--matrix", "--out", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [(t["fault_type"], t["task_id"]) for t in report["trials"]] == [
        ("stock-outage", "order"),
        ("stock-outage", "stock"),
        ("none", "order"),
        ("none", "stock"),
    ]


NOT_REACHED = "not reached: task order never called tool check_stock"


def test_a_fault_whose_task_never_called_its_tool_is_not_reached_not_a_boundary_problem() -> None:
    report = _run(parse_battery(_battery(), seed=42))
    order, stock = report.trials
    # The trial keeps the tools its faults target and the tools its trace shows called.
    assert order.fault_targets == ["check_stock"] and stock.fault_targets is None
    assert order.verdict is not None and order.verdict.evidence.tools_called == ["lookup_order"]
    assert stock.verdict is not None and stock.verdict.evidence.tools_called == ["check_stock"]
    verdict = decide_verdict(report)
    assert verdict.verdict == "INSUFFICIENT_DATA"
    (reason,) = [r for r in verdict.reasons if r.startswith("stock-outage: not measured")]
    assert reason.endswith(f": {NOT_REACHED}; its figures are undefined (no_fault_delivered)")
    assert FAULTABLE_FIX not in verdict.fixes and NOT_REACHED_FIX in verdict.fixes
    warning = delivery_warning(report)
    assert warning is not None and NOT_REACHED in warning
    assert "faultable boundary" not in warning
    # A verdict recorded before the called tools were kept says nothing of them: the
    # boundary message stays, since which tools ran cannot be read back.
    records = trial_records(scored_trials(report))
    assert not_reached(records) == ([NOT_REACHED.removeprefix("not reached: ")], True)
    for t in records:
        t["verdict"]["evidence"].pop("tools_called")
    assert not_reached(records) == ([], False)


UNDECLARED_MODULE = textwrap.dedent(
    """
    from tests.faults.test_scenario_tasks import _tasks, agent

    def make_agent():
        return agent

    tasks = _tasks(False)
    """
)


def test_cli_names_the_task_and_the_tool_a_fault_never_reached(tmp_path: Path) -> None:
    (tmp_path / "desk_agent.py").write_text(UNDECLARED_MODULE, encoding="utf-8")
    battery = tmp_path / "desk.json"
    battery.write_text(json.dumps(_battery()), encoding="utf-8")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(
        app,
        [
            *("battery", "run", f"{tmp_path / 'desk_agent.py'}:make_agent"),
            *("--battery", str(battery), "--trials", "1", "--db", str(tmp_path / "hb.db")),
            *("--out", str(out)),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "warning: only 0 of 1 planned faults" in res.stderr
    assert NOT_REACHED in res.stderr and "faultable" not in res.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["verdict"] == "INSUFFICIENT_DATA"
    assert any(NOT_REACHED in r for r in report["verdict_reasons"])
    assert not any("faultable" in r for r in report["verdict_reasons"])
    assert report["verdict_fix"].startswith("pin the scenario to a task that calls its tool")
    assert report["trials"][0]["fault_targets"] == ["check_stock"]
