"""The delivery warning names the cause the verdict's detail lines name, in the same words.

A plain agent states its tool call with ``think()`` and then has no model turn after it: the
faulted ``lookup_order`` call is wrapped (every fault is injected), but no later model input
shows a fault, so none is delivered. Each fault type's detail line says "faults were injected
but none was seen by the model", and the warning's cause says the same, not "no tool call was
seen at a faultable boundary", which is another problem (a tool the injector never met).
"""

from __future__ import annotations

from typing import Any

from hbeval.runner.run import run_battery
from hbeval.scoring import delivery_warning
from hbeval.scoring._decision import decide_verdict
from hbeval_core.contract import Task
from hbeval_core.faults import Battery
from hbeval_plain import ToolCallError, think, tool

FAULT_TYPES = (
    "adversarial",
    "cascade",
    "combined",
    "context_corruption",
    "stochastic",
    "tool_failure",
)


@tool
def lookup_order(order_id: str) -> str:
    return f"order {order_id}: shipped"


def no_model_turn_after(question: str) -> str:
    """One model turn before the tool call, none after it."""
    think("Looking A1 up.", tool_calls=[("lookup_order", {"order_id": "A1"})])
    try:
        return f"A1: {lookup_order(order_id='A1')}"
    except ToolCallError:
        return "A1: unknown"


TASKS = [Task(id="order", question="Where is A1?", verify=lambda s, t: "shipped" in str(s))]


def _report(n_scenarios: int = 18) -> Any:
    battery = Battery.hbeval(n_scenarios=n_scenarios, seed=1)
    return run_battery(None, no_model_turn_after, TASKS, battery, trials=1, seed=1)


def test_the_warning_names_the_cause_the_detail_lines_name() -> None:
    report = _report()
    data = report.to_dict()
    # Every fault was injected, none delivered.
    fd = data["fault_delivery"]
    assert fd["injected"] > 0 and fd["delivered"] == 0
    assert fd["unmeasured_fault_types"] == list(FAULT_TYPES)
    per_plan = {"cascade": 2, "combined": 2}
    planned = sum(
        per_plan.get(s["fault_type"], 1) for s in data["scenarios"] if not s["is_nominal"]
    )
    assert delivery_warning(report) == (
        f"warning: only 0 of {planned} planned faults were seen reaching the agent; "
        "not measured: adversarial, cascade, combined, context_corruption, stochastic, "
        "tool_failure. Figures under faults describe the agent only where a fault was "
        "delivered. Likely cause: faults were injected but none was seen by the model (the run "
        "ended right after the faulted call, or the agent does not pass tool results back to "
        "its model; check the trial traces' fault receipts)."
    )
    details = [r for r in decide_verdict(report).reasons if ": not measured, " in r]
    assert [d.split(":", 1)[0] for d in details] == list(FAULT_TYPES)
    for line in details:
        assert line.endswith(
            ": faults were injected but none was seen by the model; its figures are undefined "
            "(no_fault_delivered)"
        ), line
    assert "faultable" not in (delivery_warning(report) or "")


def test_each_cause_in_the_warning_is_a_detail_lines_cause() -> None:
    # Twelve scenarios: the stochastic scenarios' p = 0.5 draws never fire, so that type
    # injected nothing, while the others were injected and not seen.
    report = _report(12)
    by_type = {k: v for k, v in report.fault_delivery.by_fault_type.items() if k != "none"}
    assert by_type["stochastic"].injected == 0
    assert all(d.injected > 0 for k, d in by_type.items() if k != "stochastic")
    not_injected = (
        "no fault was injected (no tool call at a faultable boundary, or a probabilistic fault "
        "never fired)"
    )
    not_seen = "faults were injected but none was seen by the model"
    details = {
        r.split(":", 1)[0]: r for r in decide_verdict(report).reasons if ": not measured, " in r
    }
    assert f": {not_injected}; its figures" in details["stochastic"]
    assert all(f": {not_seen}; its figures" in details[k] for k in by_type if k != "stochastic")
    warning = delivery_warning(report) or ""
    assert warning.endswith(
        f"Likely causes: {not_seen} (the run ended right after the faulted call, or the agent "
        "does not pass tool results back to its model; check the trial traces' fault "
        f"receipts); {not_injected} (see hbeval_core.faults.faultable and the adapter README)."
    ), warning
