"""Recordings are not fault batteries: a recording's own tool errors are not injected faults.

An imported recording's "faulted" trials are trials whose tools answered with an error (a
business-rule rejection of the agent's arguments, a resource not available): nobody injected
them. When no trial of a report holds an injected fault (every faulted trial's
``fault_basis`` is ``observed_error``), fault handling is not measured:

- FRR and IRS are undefined ``no_injected_fault`` (run-level and per scenario), and so are
  R_op and the reliability gap;
- recovery from the recorded errors is reported under its own name, ``recorded_errors``: the
  trials with an error, how many of them passed (without a duplicated side effect), the errors
  by tool and their messages, which is what the recording says of their cause;
- the fault floors (FRR, IRS) do not apply: ``decide_verdict`` leaves them out for such a
  report (:func:`fault_floors_not_applicable`), so the verdict never cites a fault floor for
  errors nobody injected, and decides on the rest;
- a scenario is labelled nominal only when none of its trials had an error (the label follows
  all of its trials, not the first).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hbeval_core.metrics import wilson_interval
from hbeval_core.vocab import FRR, NO_INJECTED_FAULT, NO_SUCCESS_LABEL, TOOL_ERROR

from ._decision import decide_verdict
from ._fold import SCORED_OUTCOMES
from ._recorded_model import (
    FAULT_FLOORS,
    MAX_MESSAGES,
    MESSAGE_CHARS,
    RecordedErrors,
    RecordedMessage,
)
from ._scores import compute_scores
from ._sections import _summary
from ._side_effects import recovered

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = ["separate_recorded_errors"]

OBSERVED_ERROR = "observed_error"
_GAP_FIELDS = ("r_op", "gap", "interval", "z", "p", "significant", "r_op_interval")


def _no_fault_injected(trials: Sequence[Any]) -> bool:
    for entry in trials:
        verdict = entry.verdict
        if verdict is not None and verdict.faulted and verdict.fault_basis != OBSERVED_ERROR:
            return False
    return True


def _messages(events: Mapping[str, Sequence[Any]] | None) -> tuple[Counter[str], list[Any]]:
    by_tool: Counter[str] = Counter()
    texts: Counter[tuple[str, str]] = Counter()
    for trial_events in (events or {}).values():
        for e in trial_events:
            if getattr(e, "kind", None) != TOOL_ERROR:
                continue
            tool = str(getattr(e, "tool", ""))
            first = (str(getattr(e, "error", "")).strip().splitlines() or [""])[0]
            by_tool[tool] += 1
            texts[(tool, first[:MESSAGE_CHARS])] += 1
    top = sorted(texts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_MESSAGES]
    return by_tool, [RecordedMessage(tool=t, message=m, count=n) for (t, m), n in top]


def separate_recorded_errors(
    report: Report, events: Mapping[str, Sequence[Any]] | None = None
) -> Report:
    """``report`` (an imported recording's) with its recorded errors apart from fault handling,
    when none of its trials holds an injected fault; unchanged otherwise. ``events`` (trial key
    -> events) give the errors' tools and messages."""
    # Long because: one pass over the report's JSON document, block by block, then re-decided.
    from ._report_model import Report

    if not _no_fault_injected(report.trials):
        return report
    doc = report.to_dict()
    faulted = [
        t
        for t in doc["trials"]
        if (t.get("verdict") or {}).get("faulted") is True and t.get("outcome") in SCORED_OUTCOMES
    ]
    for name in FAULT_FLOORS:
        for part in ("metrics", "aggregate_metrics"):
            if doc[part].get(name) is not None:
                doc[part][name] = None
                doc["undefined"][name] = NO_INJECTED_FAULT
                doc["defined_counts"][name] = 0
    gap = doc["reliability_gap"]
    if gap.get("r_op") is not None:
        for k in _GAP_FIELDS:
            gap[k] = None
        gap["undefined"].update({k: NO_INJECTED_FAULT for k in _GAP_FIELDS if k != "r_op_interval"})
    with_errors = {t.get("scenario_index") for t in faulted}
    for sc in doc["scenarios"]:
        if sc.get("scenario_index") in with_errors:
            sc["is_nominal"] = False
        if sc["metrics"].get(FRR) is not None:
            sc["metrics"][FRR] = None
            sc["undefined"][FRR] = NO_INJECTED_FAULT
    passed = sum(1 for t in faulted if recovered(t))
    errored = any((t.get("verdict") or {}).get("faulted") is True for t in doc["trials"])
    why = NO_SUCCESS_LABEL if errored else "no_faulted_trial"
    by_tool, messages = _messages(events)
    block = RecordedErrors(
        trials=len(faulted),
        recovered=passed,
        rate=passed / len(faulted) if faulted else None,
        interval=wilson_interval(passed, len(faulted)) if faulted else None,
        errors_by_tool=dict(sorted(by_tool.items())),
        messages=messages,
        cause="recorded: the recording's own tools answered with these errors; no fault was "
        "injected, so they are not graded as fault handling",
        undefined={} if faulted else {"rate": why, "interval": why},
    )
    doc["recorded_errors"] = block.model_dump(mode="json")
    left = Report.model_validate(doc)
    scores = compute_scores(left)
    decision = decide_verdict(left.model_copy(update={"scores": scores}))
    doc["scores"] = scores.model_dump(mode="json")
    doc["verdict"], doc["verdict_reasons"] = decision.verdict, list(decision.reasons)
    doc["unmeasured_metrics"] = list(decision.unmeasured)
    if "verdict_fix" in doc:
        doc["verdict_fix"] = decision.fix
    doc["summary"] = _summary(
        decision.verdict, decision.reasons, left.pass_rate, doc["metrics"], doc["undefined"]
    ) + (
        f" Fault floors do not apply: no fault was injected; {passed} of {len(faulted)} trials "
        "with a recorded tool error passed (recorded-error recovery)."
    )
    return Report.model_validate(doc)
