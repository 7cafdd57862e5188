"""The verifier contract: one ``Outcome`` per trial, the README's worked task file, ``hbeval init``.

The per-framework half (both verifier styles on LangGraph, CrewAI, AutoGen and plain agents) is
in the conformance suite (``tests/conformance/suite.py``, "verifier contract").
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.runner import load_tasks
from hbeval_core import Outcome
from hbeval_core.contract import TrialResult, outcome_of, wants_outcome

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
runner = CliRunner()


def readme_file(name: str) -> str:
    """The fenced block after ``<!-- file: NAME -->`` in the README."""
    found = re.findall(rf"<!-- file: {re.escape(name)} -->\n```\w+\n(.*?)```", README, re.S)
    assert len(found) == 1, f"expected one README block for {name}"
    return str(found[0])


def battery(tmp: Path, target: str, tasks: Path, *extra: str) -> dict[str, Any]:
    out = tmp / "report.json"
    args = ["battery", "run", target, "--tasks", str(tasks), "--db", str(tmp / "s.db")]
    res = runner.invoke(app, [*args, "--out", str(out), "--trials", "1", *extra])
    assert res.exit_code == 0, res.output
    return dict(json.loads(out.read_text(encoding="utf-8")))


# ---------------------------------------------------------------- which object a verifier gets
def _annotated(o: Outcome, trace: Any) -> bool:
    return True


def _other(outcome: dict, trace: Any) -> bool:  # type: ignore[type-arg]
    return True


def _any(outcome: Any, trace: Any) -> bool:
    return True


def _legacy(state, trace):  # type: ignore[no-untyped-def]
    return True


@pytest.mark.parametrize(
    ("verify", "expected"),
    [
        (lambda outcome, trace: True, True),
        (lambda state, trace: True, False),
        (lambda s, t: True, False),
        (_annotated, True),
        (_any, True),
        (_other, False),
        (_legacy, False),
        (print, False),
    ],
)
def test_the_first_parameter_decides_what_a_verifier_gets(verify: Any, expected: bool) -> None:
    assert wants_outcome(verify) is expected


def test_outcome_answers_lookups_from_the_state_and_names_what_it_has() -> None:
    state = {"messages": ["hi"], "response": "ok"}
    result = TrialResult(final_state=state, response_text="ok")
    outcome = outcome_of(result)
    assert outcome["messages"] == ["hi"] and outcome.get("response") == "ok"
    assert "response" in outcome and outcome.get("absent", 7) == 7
    assert outcome.raw is state and outcome.state is state and outcome.tool_calls == ()
    with pytest.raises(AttributeError, match="final_text, state"):
        _ = outcome.no_such_field
    text_only = outcome_of(TrialResult(final_state="shipped today"))
    assert text_only.final_text == "shipped today" and "shipped" in text_only
    nothing = outcome_of(TrialResult(final_state=None, status="error", error="Boom: x"))
    assert nothing.final_text == "" and not nothing.ok and nothing.error == "Boom: x"


# ---------------------------------------------------------------- the README's worked example
def test_the_readme_task_file_loads_and_passes_on_the_support_agent(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    (tmp_path / "tasks.yaml").write_text(readme_file("tasks.yaml"), encoding="utf-8")
    (tmp_path / "verifiers.py").write_text(readme_file("verifiers.py"), encoding="utf-8")
    (task,) = load_tasks(tmp_path / "tasks.yaml")
    assert task.id == "order_status" and wants_outcome(task.verify)  # type: ignore[arg-type]
    assert task.forbidden_tools == ("transfer_funds",)
    example = ROOT / "examples" / "langgraph_support_agent.py"
    report = battery(tmp_path, f"{example}:careful", tmp_path / "tasks.yaml", "--scenarios", "6")
    trials = report["trials"]
    assert len(trials) == 6 and {t["task_id"] for t in trials} == {"order_status"}
    assert all(t["verdict"]["pass_basis"] == "verifier" for t in trials)
    assert all(t["verdict"]["verifier_error"] is None for t in trials)
    nominal = [t for t in trials if t["is_nominal"]]
    assert nominal and all(t["outcome"] == "pass" for t in nominal)


def test_the_readme_verifier_fails_when_the_order_was_not_looked_up(tmp_path: Path) -> None:
    (tmp_path / "verifiers.py").write_text(readme_file("verifiers.py"), encoding="utf-8")
    from hbeval.runner.loader import load_object

    verify = load_object(f"{tmp_path / 'verifiers.py'}:reports_the_status")
    said_only = TrialResult(final_state=None, response_text="Order A1001 is shipped.")
    assert verify(outcome_of(said_only), []) is False  # it said so without looking it up


# ---------------------------------------------------------------- hbeval init
HAND_WRITTEN_AGENT = textwrap.dedent(
    '''
    """A small stock agent written by hand: one tool, one answer."""
    from hbeval_plain import tool


    @tool
    def check_stock(sku: str) -> str:
        return f"{sku}: 7 units"


    def make_agent():
        def agent(question):
            try:
                found = check_stock(sku="mug")
            except Exception as exc:  # a faulted call: say so rather than guess
                return f"I could not check the stock ({type(exc).__name__})."
            return f"In stock: {found}."

        return agent
    '''
)


def test_init_writes_files_the_battery_runs_as_written(tmp_path: Path) -> None:
    agent = tmp_path / "stock_agent.py"
    agent.write_text(HAND_WRITTEN_AGENT, encoding="utf-8")
    res = runner.invoke(app, ["init", f"{agent}:make_agent"])
    assert res.exit_code == 0, res.output
    tasks = tmp_path / "tasks.yaml"
    assert (tmp_path / "verifiers.py").is_file()
    assert f"hbeval battery run {agent}:make_agent --tasks {tasks}" in res.stdout
    loaded = load_tasks(tasks)
    assert len(loaded) == 2 and all(wants_outcome(t.verify) for t in loaded)  # type: ignore[arg-type]
    report = battery(tmp_path, f"{agent}:make_agent", tasks, "--scenarios", "6")
    trials = report["trials"]
    assert all(t["verdict"]["verifier_error"] is None for t in trials)
    assert all(t["verdict"]["pass_basis"] == "verifier" for t in trials)
    # Unfaulted trials answered after a returned tool call: both starter verifiers pass them.
    unfaulted = [t for t in trials if not t["faults"]]
    assert unfaulted and all(t["outcome"] == "pass" for t in unfaulted)


def test_init_refuses_to_overwrite_and_force_overwrites(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("def make_agent():\n    return lambda q: q\n", encoding="utf-8")
    verifiers = tmp_path / "verifiers.py"
    verifiers.write_text("# mine\n", encoding="utf-8")
    res = runner.invoke(app, ["init", str(agent)])
    assert res.exit_code == 2
    assert str(verifiers) in res.stderr and "--force" in res.stderr
    assert "Traceback" not in res.output
    assert verifiers.read_text(encoding="utf-8") == "# mine\n"
    assert not (tmp_path / "tasks.yaml").exists()  # nothing was written
    res = runner.invoke(app, ["init", str(agent), "--force"])
    assert res.exit_code == 0, res.output
    assert "def answered(" in verifiers.read_text(encoding="utf-8")
    assert f"{agent}:YOUR_AGENT" in res.stdout


@pytest.mark.parametrize("target", ["missing.py:make", "notes.txt"])
def test_init_names_a_bad_target(tmp_path: Path, target: str) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    res = runner.invoke(app, ["init", str(tmp_path / target)])
    assert res.exit_code == 2 and "TARGET" in res.stderr and "Traceback" not in res.output
