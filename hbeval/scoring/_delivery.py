"""Fault delivery accounted per trial, per scenario and per fault type.

A battery that planned faults but delivered none measured nothing about how the agent handles
them. These helpers say, for each scenario and fault type, how many faults were planned,
injected and delivered, and whether the figures that depend on faults can be defined at all:

* **planned**: the faults in a trial's runtime plan (one per fault spec or cascade stage; a spec
  that may fire on several calls counts once). The runner records it as ``planned_faults``;
  a trial without the field counts as unknown (None).
* **injected / delivered**: the trial verdict's ``faults[]`` entries, and those whose receipt
  proved the payload reached the agent.
* **faulted trial**: a scored trial whose verdict says ``faulted`` (at least one delivered
  fault, or methodology A's question context).
* **measured**: a nominal group always is; a fault group is measured when at least one of its
  scored trials was faulted. Otherwise its fault figures are undefined with
  ``no_fault_delivered`` (``no_trials`` when no trial of it was scored), or with
  ``delivery_unobserved`` when faults were injected but every receipt is ``no_model_events``:
  the trace holds no model call, so "none arrived" would be a claim the trace cannot make.
* **unreceipted**: a trial whose injected faults are all latency or crash faults and none was
  delivered. A delay changes nothing the agent reads and a crash ends the call before a
  result, so no receipt can show the agent met the fault: the trial is left out of every
  figure, and its group is not measured with ``delivery_unreceipted`` (not blamed on the
  agent or on the tool boundary).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from hbeval_core.vocab import (
    CRASH,
    DELIVERY_UNOBSERVED,
    DELIVERY_UNRECEIPTED,
    LATENCY,
    NO_FAULT_DELIVERED,
    NO_TRIALS,
    RECEIPT_NO_MODEL_EVENTS,
)

from ._security import scored_trials, trial_records

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = [
    "NOT_REACHED_FIX",
    "delivery_counts",
    "delivery_warning",
    "fault_type_delivery",
    "not_reached",
    "planned_faults",
    "undelivered_reason",
    "unreceipted",
]

UNRECEIPTABLE_MODES = frozenset({LATENCY, CRASH})
"""Fault modes whose arrival no receipt can prove (module docstring)."""
NOT_REACHED_FIX = (
    "pin the scenario to a task that calls its tool with its tasks: field, run every scenario "
    "on every task with --matrix, or declare each task's tools: so a scenario no task can "
    "meet is refused before the run"
)


def _verdict(trial: Mapping[str, Any]) -> Mapping[str, Any]:
    v = trial.get("verdict")
    return v if isinstance(v, Mapping) else {}


def planned_faults(trial: Mapping[str, Any]) -> int | None:
    """The faults a trial's plan held (None when the trial does not say)."""
    value = trial.get("planned_faults")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _faults(trial: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    faults = _verdict(trial).get("faults")
    return [f for f in faults if isinstance(f, Mapping)] if isinstance(faults, list) else []


def unreceipted(trial: Mapping[str, Any]) -> bool:
    """A non-nominal trial whose injected faults are all undelivered latency or crash faults."""
    if trial.get("is_nominal") is True or _verdict(trial).get("faulted") is True:
        return False
    faults = _faults(trial)
    return bool(faults) and all(
        f.get("mode") in UNRECEIPTABLE_MODES and f.get("delivered") is not True for f in faults
    )


def _unreached(trial: Mapping[str, Any]) -> str | None:
    """The phrase "task X never called tool Y" for a faulted-plan trial that injected nothing
    because its trace shows tool calls, none of them on a tool its plan targets; else None (no
    tool call, a target it did call, or a trial that does not say which tools it called or
    targeted)."""
    if trial.get("is_nominal") is True or _faults(trial):
        return None
    targets = trial.get("fault_targets")
    evidence = _verdict(trial).get("evidence")
    called = evidence.get("tools_called") if isinstance(evidence, Mapping) else None
    if not isinstance(targets, list) or not targets or not isinstance(called, list) or not called:
        return None
    if any(fnmatchcase(str(tool), str(t)) for tool in called for t in targets):
        return None
    return f"task {trial.get('task_id')} never called tool {' or '.join(map(str, targets))}"


def not_reached(trials: Sequence[Mapping[str, Any]]) -> tuple[list[str], bool]:
    """Why faults planned on ``trials`` never fired because the task never called the faulted
    tool: the distinct "task X never called tool Y" phrases, and whether they account for every
    trial that planned faults and injected none (False when some trial called no tool at all,
    the faultable-boundary problem)."""
    phrases: list[str] = []
    every = True
    for t in trials:
        if t.get("is_nominal") is True or _faults(t):
            continue
        phrase = _unreached(t)
        if phrase is None:
            every = False
        elif phrase not in phrases:
            phrases.append(phrase)
    return phrases, every and bool(phrases)


def undelivered_reason(reasons: Iterable[Any]) -> str | None:
    """The one reason for several groups that measured no fault: ``no_fault_delivered`` when
    any of them delivered none (the fix lies at the tool boundary), else ``delivery_unobserved``
    when any could not observe delivery; None when ``reasons`` holds neither."""
    seen = set(reasons)
    if NO_FAULT_DELIVERED in seen:
        return NO_FAULT_DELIVERED
    if DELIVERY_UNOBSERVED in seen:
        return DELIVERY_UNOBSERVED
    return DELIVERY_UNRECEIPTED if DELIVERY_UNRECEIPTED in seen else None


def delivery_counts(
    scored: Sequence[Mapping[str, Any]], *, nominal: bool | None = None
) -> dict[str, Any]:
    """Planned, injected and delivered faults over ``scored`` trials, and whether they measured.

    ``nominal`` says whether the group is nominal (no fault planned); None infers it from the
    trials' ``is_nominal``. ``reason`` is None for a measured group, else why it is not.
    """
    known = [planned_faults(t) for t in scored]
    planned = None if any(p is None for p in known) else sum(p or 0 for p in known)
    planned_delivered: int | None = 0
    for t, p in zip(scored, known, strict=True):
        if p is None:
            planned_delivered = None
            break
        got = sum(1 for f in _faults(t) if f.get("delivered") is True)
        planned_delivered = (planned_delivered or 0) + min(got, p)
    all_faults = [f for t in scored for f in _faults(t)]
    faulted = sum(1 for t in scored if _verdict(t).get("faulted") is True)
    is_nominal = (
        nominal
        if nominal is not None
        else bool(scored) and all(t.get("is_nominal") for t in scored)
    )
    reason: str | None = None
    if not is_nominal and not faulted:
        if not scored:
            reason = NO_TRIALS
        elif all(unreceipted(t) for t in scored):
            reason = DELIVERY_UNRECEIPTED
        elif all_faults and all(f.get("receipt") == RECEIPT_NO_MODEL_EVENTS for f in all_faults):
            reason = DELIVERY_UNOBSERVED
        else:
            reason = NO_FAULT_DELIVERED
    return {
        "trials": len(scored),
        "planned": planned,
        "injected": len(all_faults),
        "delivered": sum(1 for f in all_faults if f.get("delivered") is True),
        "planned_delivered": planned_delivered,
        "faulted_trials": faulted,
        "measured": reason is None,
        "reason": reason,
    }


def fault_type_delivery(scored: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``delivery_counts`` per fault type (sorted by name), with the scenarios each covers."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    nominal: dict[str, bool] = {}
    scenarios: dict[str, set[Any]] = {}
    for t in scored:
        name = str(t.get("fault_type"))
        groups.setdefault(name, []).append(t)
        nominal[name] = nominal.get(name, True) and t.get("is_nominal") is True
        scenarios.setdefault(name, set()).add(t.get("scenario_index"))
    return {
        name: {
            "scenarios": len(scenarios[name]),
            **delivery_counts(groups[name], nominal=nominal[name]),
        }
        for name in sorted(groups)
    }


NOT_INJECTED_CAUSE = (
    "no fault was injected (no tool call at a faultable boundary, or a probabilistic fault "
    "never fired)"
)
"""Why a fault type that planned faults delivered none, when none was injected: the verdict's
detail line and the delivery warning both say it."""

NOT_SEEN_CAUSE = "faults were injected but none was seen by the model"
"""Why a fault type delivered none although faults were injected (a tool call met the fault,
and no later model input showed it): the detail line and the warning both say it."""

FAULTABLE_HINT = "see hbeval_core.faults.faultable and the adapter README"
RECEIPT_HINT = (
    "the run ended right after the faulted call, or the agent does not pass tool results back "
    "to its model; check the trial traces' fault receipts"
)


def delivery_warning(report: Report) -> str | None:
    """A warning when under half of a report's planned faults reached the agent, else None."""
    fd = report.fault_delivery
    planned, got = fd.planned, fd.planned_delivered
    if planned is None or got is None or planned <= 0:
        return None
    if 2 * got >= planned:
        return None
    missing = list(fd.unmeasured_fault_types)
    reasons = {d.reason for d in fd.by_fault_type.values() if d.reason is not None}
    causes = []
    if DELIVERY_UNOBSERVED in reasons:
        causes.append(
            "the trace records no model call, so whether an injected fault reached the model "
            "cannot be observed (record the model's replies: run the agent through its "
            "framework's adapter, or call think() in a plain agent)"
        )
    undelivered = [d for d in fd.by_fault_type.values() if d.reason == NO_FAULT_DELIVERED]
    if any(d.injected for d in undelivered):
        causes.append(f"{NOT_SEEN_CAUSE} ({RECEIPT_HINT})")
    uninjected = any(not d.injected for d in undelivered)
    phrases, every = not_reached(trial_records(scored_trials(report)))
    if uninjected and phrases:
        causes.append(f"not reached: {'; '.join(phrases)} ({NOT_REACHED_FIX})")
    if (uninjected and not every) or not causes:
        causes.append(f"{NOT_INJECTED_CAUSE} ({FAULTABLE_HINT})")
    return (
        f"warning: only {got} of {planned} planned faults were seen reaching the agent"
        + (f"; not measured: {', '.join(missing)}" if missing else "")
        + ". Figures under faults describe the agent only where a fault was delivered. "
        + ("Likely cause: " if len(causes) == 1 else "Likely causes: ")
        + "; ".join(causes)
        + "."
    )
