"""What a real AutoGen ``AssistantAgent`` is asked, and which faults its tasks can meet.

The agent runs on ``ScriptedChatCompletionClient``, whose policy notes every user message the
model is handed, so what the agent saw is read from the model, not from hbeval's trace. Under
the default battery each question arrives exactly as its task wrote it (the reference's context
sentences are the opt-in ``context`` family, which the same recording sees when asked for). A
battery-file scenario that faults a tool its assigned task never calls is reported as
"not reached: task X never called tool Y", not as a missing faultable boundary.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_agentchat.agents import AssistantAgent
from autogen_core.models import UserMessage
from autogen_core.tools import FunctionTool

from hbeval.runner.run import run_battery
from hbeval.scoring import FAULTABLE_FIX, delivery_warning
from hbeval.scoring._decision import decide_verdict
from hbeval.scoring._delivery import NOT_REACHED_FIX
from hbeval.store import InMemoryStore
from hbeval_autogen import Reply, ScriptedChatCompletionClient
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from hbeval_core.faults.compat import FAULT_CONTEXTS, FAULT_TYPES
from hbeval_core.faults.userbattery import parse_battery
from tests.adapters.autogen.test_autogen_fixtures import hang_guard

__all__ = ["hang_guard"]

pytestmark = pytest.mark.usefixtures("hang_guard")

TASKS = [
    Task(id="order", question="Is order A1 open?", verify=lambda s, t: "open" in str(s)),
    Task(id="stock", question="How much stock of S1?", verify=lambda s, t: "4" in str(s)),
    Task(id="refund", question="Can order B2 be refunded?", verify=lambda s, t: "open" in str(s)),
]
QUESTIONS = {t.question for t in TASKS}

_seen: list[str] = []
_lock = threading.Lock()


def _results(messages: Sequence[Any]) -> list[Any]:
    return [
        r
        for m in messages
        if type(m).__name__ == "FunctionExecutionResultMessage"
        for r in m.content
    ]


def policy(messages: Sequence[Any], tools: Sequence[str]) -> str | Reply:
    """Note the user messages; call ``check_stock`` for stock questions, else ``lookup_order``."""
    users = [str(m.content) for m in messages if isinstance(m, UserMessage)]
    results = _results(messages)
    if not results:
        with _lock:
            _seen.extend(users)
        stock = any("stock" in u for u in users)
        name, args = ("check_stock", {"sku": "S1"}) if stock else ("lookup_order", {"order_id": "A1"})  # fmt: skip
        return Reply(calls=[(name, args)], thought=f"Calling {name} to answer the question.")
    last = results[-1]
    if last.is_error:
        return Reply(text="could not check", thought=f"The call failed ({last.content}).")
    return Reply(text=f"answer: {last.content}", thought="Answering from the result.")


def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return json.dumps({"order_id": order_id, "status": "open"})


def check_stock(sku: str) -> str:
    """Count the stock of an item."""
    return json.dumps({"sku": sku, "stock": 4})


def agent() -> AssistantAgent:
    """A fresh AssistantAgent per trial, on the recording scripted model."""
    return AssistantAgent(
        "desk",
        model_client=ScriptedChatCompletionClient(policy, call_prefix="desk-call"),
        tools=[
            FunctionTool(lookup_order, description="Look an order up."),
            FunctionTool(check_stock, description="Count the stock of an item."),
        ],
        max_tool_iterations=4,
    )


def _run(battery: Any, tasks: Sequence[Task] = TASKS) -> tuple[Any, list[str]]:
    _seen.clear()
    report = run_battery(
        "autogen", agent, list(tasks), battery, trials=1, seed=7, store=InMemoryStore(),
        target_kind="factory",
    )  # fmt: skip
    return report, list(_seen)


def test_every_question_reaches_the_autogen_agent_as_its_task_wrote_it() -> None:
    report, seen = _run(Battery.hbeval(n_scenarios=12, seed=7))
    data = report.to_dict()
    assert len(data["trials"]) == 12
    # One first model call per trial, each handed exactly one task's question.
    assert len(seen) == 12, seen
    assert set(seen) <= QUESTIONS, sorted(set(seen) - QUESTIONS)
    assert "perturbations" not in data
    # Faults still reached the agent: only the questions are left alone.
    assert data["fault_delivery"]["delivered"] > 0


def test_the_same_recording_sees_the_context_family_when_it_is_asked_for() -> None:
    # The recording can tell a rewritten question apart: with perturb=["context"] the six
    # extra scenarios (12..17, task i mod 3) hand the model the question plus its sentence.
    _, seen = _run(Battery.hbeval(n_scenarios=12, seed=7, perturb=["context"]))
    expected = {
        TASKS[(12 + j) % 3].question + FAULT_CONTEXTS[ft] for j, ft in enumerate(FAULT_TYPES)
    }
    assert set(seen) - QUESTIONS == expected


NOT_REACHED = "not reached: task order never called tool check_stock"


def test_a_scenario_on_a_tool_its_task_never_calls_is_reported_not_reached() -> None:
    battery = parse_battery(
        {
            "format": "hbeval-battery-file/1",
            "name": "desk",
            # Round robin: scenario 0 (the stock outage) runs task 0 ("order").
            "scenarios": [
                {"name": "stock-outage", "mode": "error_5xx", "tools": ["check_stock"]},
                {"name": "base", "mode": "none"},
            ],
        },
        seed=7,
    )
    report, seen = _run(battery, TASKS[:2])
    assert seen == [TASKS[0].question, TASKS[1].question]
    order = report.trials[0]
    assert (order.fault_type, order.task_id) == ("stock-outage", "order")
    assert order.fault_targets == ["check_stock"]
    assert order.verdict is not None and order.verdict.evidence.tools_called == ["lookup_order"]
    assert not any(f.delivered is True for f in order.faults)
    verdict = decide_verdict(report)
    assert verdict.verdict == "INSUFFICIENT_DATA"
    (reason,) = [r for r in verdict.reasons if r.startswith("stock-outage: not measured")]
    assert reason.endswith(f": {NOT_REACHED}; its figures are undefined (no_fault_delivered)")
    assert NOT_REACHED_FIX in verdict.fixes and FAULTABLE_FIX not in verdict.fixes
    warning = delivery_warning(report)
    assert warning is not None and NOT_REACHED in warning
    assert "faultable boundary" not in warning
