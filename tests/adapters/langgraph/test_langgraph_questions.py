"""The question a LangGraph agent receives under the default battery is its task's question.

The scripted chat model inside a real ``create_agent`` graph records every human message it is
called with, so what the agent saw is read from the model, not from hbeval's trace. Under the
default battery no question is rewritten; ``perturb=["context"]`` adds six scenarios whose
questions carry the reference's context sentences, reported in ``perturbations`` and kept out
of every fault figure; memory episodes store the question the agent was given.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import StructuredTool

from hbeval.memory import open_edm
from hbeval.runner.run import run_battery
from hbeval.store import open_store
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from hbeval_core.faults.compat import FAULT_CONTEXTS, FAULT_TYPES
from hbeval_langgraph.testing import ScriptedChatModel, tool_call

TASKS = [
    Task(id="order", question="Where is order A1?", required=("shipped",)),
    Task(id="refund", question="Can order B2 be refunded?", required=("shipped",)),
    Task(id="stock", question="Is item C3 in stock?", required=("shipped",)),
]
QUESTIONS = {t.question for t in TASKS}

_seen: list[str] = []
_lock = threading.Lock()


class RecordingModel(ScriptedChatModel):
    """The scripted model, noting each human message it is handed."""

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Any:
        with _lock:
            _seen.extend(str(m.content) for m in messages if m.type == "human")
        return super()._generate(messages, stop, run_manager, **kw)


def lookup(query: str) -> str:
    """Look an order up."""
    return f"{query}: shipped"


def agent() -> Any:
    """A fresh graph per trial: look the order up once, then answer."""
    model = RecordingModel(
        responses=[
            AIMessage("I'll look it up.", tool_calls=[tool_call("lookup", {"query": "A1"}, "c1")]),
            AIMessage("It is shipped."),
        ]
    )
    return create_agent(model, [StructuredTool.from_function(lookup)])


agent.__hbeval_target_kind__ = "langgraph"  # type: ignore[attr-defined]


def _run(battery: Battery, tmp_path: Path, memory: Any = None) -> tuple[dict[str, Any], list[str]]:
    _seen.clear()
    store = open_store(str(tmp_path / "hbeval.db"))
    try:
        report = run_battery(
            None, agent, TASKS, battery, trials=1, store=store, seed=7, memory=memory
        ).to_dict()
    finally:
        store.close()
    return report, list(_seen)


def test_every_question_reaches_the_agent_as_its_task_wrote_it(tmp_path: Path) -> None:
    report, seen = _run(Battery.hbeval(n_scenarios=12, seed=7), tmp_path)
    assert len(report["trials"]) == 12
    assert seen, "the model was never called"
    assert set(seen) <= QUESTIONS, sorted(set(seen) - QUESTIONS)
    assert "perturbations" not in report
    # Faults still happened: the battery is not silent, only its questions are unchanged.
    assert report["fault_delivery"]["delivered"] > 0


def test_the_context_family_is_asked_for_and_reported_apart(tmp_path: Path) -> None:
    plain, _ = _run(Battery.hbeval(n_scenarios=12, seed=7), tmp_path / "a")
    report, seen = _run(Battery.hbeval(n_scenarios=12, seed=7, perturb=["context"]), tmp_path / "b")
    # Scenario i runs task i mod 3; the six perturbation scenarios are 12..17.
    expected = {
        TASKS[(12 + j) % 3].question + FAULT_CONTEXTS[ft] for j, ft in enumerate(FAULT_TYPES)
    }
    perturbed_seen = set(seen) - QUESTIONS
    assert perturbed_seen == expected
    trials = report["trials"]
    assert len(trials) == 18
    marked = [t for t in trials if t.get("perturbation") == "context"]
    assert sorted(t["scenario_index"] for t in marked) == list(range(12, 18))
    assert all(not t["faults"] for t in marked)
    family = report["perturbations"]["families"]["context"]
    passed = sum(1 for t in marked if t["outcome"] == "pass")
    assert (family["trials"], family["passed"]) == (6, passed)
    assert family["pass_rate"] == pytest.approx(passed / 6)
    assert set(family["by_context"]) == set(FAULT_TYPES)
    # The change, recounted from the trials: perturbed tasks that have nominal trials only.
    nominal = [t for t in trials if t["fault_type"] == "none"]
    with_nominal = {t["task_id"] for t in nominal}
    paired = [t for t in marked if t["task_id"] in with_nominal]
    assert family["paired_trials"] == len(paired)
    assert family["tasks_without_nominal"] == sorted({t["task_id"] for t in marked} - with_nominal)
    if paired:
        rate = sum(t["outcome"] == "pass" for t in paired) / len(paired)
        base = sum(t["outcome"] == "pass" for t in nominal) / len(nominal)
        assert family["change"] == pytest.approx(rate - base)
    # No fault figure reads them: every figure equals the run without the family.
    for key in ("metrics", "verdict", "fault_delivery", "reliability_gap", "pass_rate", "tail"):
        assert report[key] == plain[key], key
    assert report["breakdowns"]["fault_type"] == plain["breakdowns"]["fault_type"]
    assert not any(k.startswith("context:") for k in report["breakdowns"]["fault_type"])
    assert report["scores"]["capability"] == plain["scores"]["capability"]
    assert report["scores"]["security_gate"] == plain["scores"]["security_gate"]
    assert report["consistency"] == plain["consistency"]


def test_memory_episodes_store_the_question_the_agent_was_given(tmp_path: Path) -> None:
    edm = open_edm(tmp_path / "memory.db")
    try:
        _run(Battery.hbeval(n_scenarios=6, seed=7), tmp_path, memory=edm)
        contexts = [e.context for e in edm.list_episodes(None)]
    finally:
        edm.close()
    assert contexts, "no episode was stored"
    assert set(contexts) <= QUESTIONS, sorted(set(contexts) - QUESTIONS)
