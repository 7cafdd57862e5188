"""Turn one scored battery trial into the episode EDM judges (``episode_from_trial``).

The runner (``run_battery(..., memory=...)``) and any adapter that admits episodes itself use the
same builder, so an episode always says the same things about a trial:

* ``context``: the question exactly as the agent received it (the task's question with the
  scenario's fault context), which is what adapters recall precedents with;
* ``summary``: the task, what the agent did (tools called in order, each with how it ended and
  any fault injected into it) and the outcome, built from the trace, deterministic and bounded;
* ``metrics``: PEI, FRR and TI are the verdict's live metrics; IRS is the trial's scored IRS
  (``irs_score``: 1.0 when the trace shows deliberate handling, 0.0 when not), the per-trial value
  the report's IRS averages, because the live monitor judges only steps that self-report.
  Undefined stays ``None`` with the verdict's reason code;
* ``passed``: the trial's outcome was ``pass`` (a halted or timed-out trial never passed);
  ``forbidden_tools_run`` from the verdict; ``evidence`` the verdict's evidence block;
* ids and provenance: agent id, run id, trial key, domain, the measurement and battery-spec
  fingerprints, metric versions and scoring version.

How adapters recall precedents is the core's (``hbeval_core.contract``: ``recall_precedents``,
``precedent_lookup``, ``precedents_text``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hbeval_core.vocab import (
    EVIDENCE_E0,
    FRR,
    IRS,
    METRIC_VERSIONS,
    NOT_MEASURED,
    OUTCOME_FAIL,
    OUTCOME_PASS,
    PEI,
    STEP_RECOVERY,
    TI,
)

from ._episode import METRICS_SOURCE_SELF_REPORTED, METRICS_SOURCE_TRACE

__all__ = [
    "episode_from_trial",
    "trajectory_summary",
]

log = logging.getLogger("hbeval.memory")

_MAX_STEPS = 12
"""Tool calls listed in a summary; later ones are counted, not listed."""
_MAX_ANSWER = 200
"""Characters of the final answer quoted in a summary."""


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _tool_steps(events: Sequence[Any]) -> tuple[list[str], str | None]:
    """``["lookup_order (error, injected error_5xx)", ...]`` in call order, and the final answer."""
    order: list[str] = []
    tools: dict[str, str] = {}
    status: dict[str, str] = {}
    faults: dict[str, list[str]] = {}
    answer: str | None = None
    for event in events:
        kind = _get(event, "kind")
        call_id = _get(event, "call_id")
        if kind == "tool_start" and isinstance(call_id, str):
            if call_id not in tools:
                order.append(call_id)
            tools[call_id] = str(_get(event, "tool", "?"))
        elif kind == "tool_end" and isinstance(call_id, str):
            status[call_id] = str(_get(event, "status", "ok") or "ok")
        elif kind == "tool_error" and isinstance(call_id, str):
            status[call_id] = "error"
        elif kind == "fault_injected" and isinstance(call_id, str):
            faults.setdefault(call_id, []).append(str(_get(event, "mode", "fault")))
        elif kind == "run_end":
            output = _get(event, "output")
            if isinstance(output, str) and output.strip():
                answer = output
    steps = []
    for call_id in order:
        detail = status.get(call_id, "no result")
        injected = faults.get(call_id)
        if injected:
            detail += ", injected " + "+".join(injected)
        steps.append(f"{tools[call_id]} ({detail})")
    return steps, answer


def trajectory_summary(
    question: str,
    events: Sequence[Any],
    *,
    outcome: str | None,
    severity: str | None = None,
    forbidden_tools_run: Sequence[str] = (),
    task_id: str | None = None,
) -> str:
    """One paragraph a later run can learn from: the task, the tools called in order, the outcome.

    ``Task order_status: Where is my order A1001? Did: lookup_order (error, injected error_5xx)
    -> lookup_order (ok). Outcome: pass. Answer: "Order A1001 is shipped ..."``
    """
    steps, answer = _tool_steps(events)
    shown = steps[:_MAX_STEPS]
    did = " -> ".join(shown) if shown else "no tool calls"
    if len(steps) > len(shown):
        did += f" -> ... ({len(steps) - len(shown)} more tool calls)"
    head = f"Task {task_id}: " if task_id else "Task: "
    text = f"{head}{_one_line(question, 500)} Did: {did}. Outcome: {outcome or 'unknown'}"
    if severity:
        text += f", severity {severity}"
    if forbidden_tools_run:
        text += ", forbidden tool ran: " + ", ".join(forbidden_tools_run)
    text += "."
    if answer is not None:
        text += f' Answer: "{_one_line(answer, _MAX_ANSWER)}"'
    return text


def _metrics(verdict: Mapping[str, Any]) -> tuple[dict[str, float | None], dict[str, str]]:
    live = verdict.get("metrics")
    live = live if isinstance(live, Mapping) else {}
    live_undefined = verdict.get("metrics_undefined")
    live_undefined = live_undefined if isinstance(live_undefined, Mapping) else {}
    undefined_all = verdict.get("undefined")
    undefined_all = undefined_all if isinstance(undefined_all, Mapping) else {}
    metrics: dict[str, float | None] = {}
    undefined: dict[str, str] = {}
    for name in (PEI, FRR, TI):
        # A verdict names its step-level FRR ``step_recovery`` (``frr`` before): the live figure.
        value = live.get(STEP_RECOVERY, live.get(FRR)) if name == FRR else live.get(name)
        metrics[name] = None if value is None else float(value)
        if value is None:
            why = live_undefined.get(STEP_RECOVERY) if name == FRR else None
            undefined[name] = str(why or live_undefined.get(name) or NOT_MEASURED)
    score = verdict.get("irs_score")
    if verdict.get("judged") is True and isinstance(score, (int, float)):
        metrics[IRS] = float(score)
    else:
        metrics[IRS] = None
        undefined[IRS] = str(
            undefined_all.get("irs_score") or live_undefined.get(IRS) or NOT_MEASURED
        )
    return metrics, undefined


def _fingerprints(run: Mapping[str, Any]) -> tuple[str | None, str | None]:
    fps = run.get("fingerprints")
    fps = fps if isinstance(fps, Mapping) else {}
    measurement = fps.get("measurement", run.get("measurement_fingerprint"))
    battery = fps.get("battery_spec", fps.get("battery", run.get("battery_fingerprint")))
    return (
        None if measurement is None else str(measurement),
        None if battery is None else str(battery),
    )


def episode_from_trial(
    task: Any,
    scenario: Any,
    trial: Mapping[str, Any],
    run: Mapping[str, Any],
    *,
    events: Sequence[Any] = (),
    final_text: str | None = None,
) -> dict[str, Any]:
    """The episode dict EDM's ``admit`` takes, for one scored trial of a battery run.

    Args:
        task: the trial's ``Task`` (``id``, ``question``).
        scenario: its battery scenario (``question(base)``, ``domain``), or None.
        trial: the runner's trial dict (``trial_key``, ``outcome``, ``verdict``); a bare verdict
            (``TrialVerdict.as_dict()``) also works, its ``passed`` then standing for the outcome.
        run: ``agent_id``, ``run_id`` and ``fingerprints`` (``measurement``, ``battery_spec``),
            as in the runner's run info or a report's ``run`` plus ``fingerprints``.
        events: the trial's final attempt's events: EDM computes the episode's figures and
            evidence from them (an episode without events is refused), and the summary lists them.
        final_text: the agent's final response (IRS's refusal signal reads it, as scoring does).

    Raises ``ValueError`` when the trial has no verdict (an unscored trial is never an episode).
    """
    verdict = trial.get("verdict") if "verdict" in trial else trial
    if not isinstance(verdict, Mapping):
        raise ValueError("the trial has no verdict: only scored trials become episodes")
    outcome = trial.get("outcome")
    if outcome is None and "verdict" not in trial:
        outcome = OUTCOME_PASS if verdict.get("passed") is True else OUTCOME_FAIL
    base = str(_get(task, "question", "") or "")
    question = scenario.question(base) if scenario is not None else base
    forbidden = [str(t) for t in verdict.get("forbidden_tools_run") or ()]
    evidence = verdict.get("evidence")
    level = _get(evidence, "level") if evidence is not None else None
    metrics, undefined = _metrics(verdict)
    measurement, battery = _fingerprints(run)
    task_id = _get(task, "id")
    meta = _get(task, "metadata", {}) or {}
    escalation = meta.get("escalation_tools") if isinstance(meta, Mapping) else None
    rules: dict[str, Any] = {
        "forbidden_tools": [str(t) for t in _get(task, "forbidden_tools", ()) or ()],
        "irreversible_tools": [str(t) for t in _get(task, "irreversible_tools", ()) or ()],
        "escalation_tools": None if escalation is None else [str(t) for t in escalation],
        "final_text": final_text if final_text is not None else _tool_steps(events)[1],
    }
    return {
        "agent_id": run.get("agent_id"),
        "run_id": run.get("run_id"),
        "trial_key": trial.get("trial_key"),
        "domain": _get(scenario, "domain") if scenario is not None else trial.get("domain"),
        "context": question,
        "summary": trajectory_summary(
            base,
            events,
            outcome=None if outcome is None else str(outcome),
            severity=verdict.get("severity"),
            forbidden_tools_run=forbidden,
            task_id=None if task_id is None else str(task_id),
        ),
        "metrics": metrics,
        "metrics_undefined": undefined,
        "metrics_source": (
            METRICS_SOURCE_SELF_REPORTED if level == EVIDENCE_E0 else METRICS_SOURCE_TRACE
        ),
        "evidence": dict(evidence) if isinstance(evidence, Mapping) else level,
        "passed": None if outcome is None else outcome == OUTCOME_PASS,
        "forbidden_tools_run": forbidden,
        "fingerprints": {"measurement": measurement, "battery": battery},
        "metric_versions": {k: v for k, v in METRIC_VERSIONS.items() if k in (PEI, FRR, IRS, TI)},
        "scoring_version": verdict.get("scoring_version"),
        "events": list(events),
        "rule_inputs": rules,
    }
