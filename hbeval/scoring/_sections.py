"""The report's descriptive sections: run identity (fingerprints, judge, methodology), per-
scenario figures, text heuristics, the summary line, traceability, evidence, the tail of worst
trials and each trial's entry. Rules in ``_battery``'s docstring.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from hbeval_core.vocab import (
    DELIVERY_UNRECEIPTED,
    EVIDENCE_E0,
    EVIDENCE_E1,
    EVIDENCE_E2,
    EXPLAINED_SHARE,
    FRR,
    IRS,
    LINK_ID,
    LINK_MATCH,
    LINK_NONE,
    LIVE_METRICS,
    NO_FAULTED_TRIAL,
    NO_JUDGED_TRIAL,
    NO_MODEL_EVENTS,
    NO_STEPS,
    NO_TRIALS,
    NOT_MEASURED,
    OUTCOME_FAIL,
    OUTCOME_PASS,
    OUTCOME_TIMEOUT,
    PEI,
    SEVERITY_WEIGHTS,
    TEXT_UNOBSERVED,
    TI,
)

from ._delivery import delivery_counts, unreceipted
from ._fold import (
    SCORED_OUTCOMES,
    _live_mean,
    _mean,
    _passed,
    _sort_key,
    _verdict,
)
from ._model_faults import proxy_only_field
from ._report_model import (
    Evidence,
    Fingerprints,
    Rate,
    ScenarioEntry,
    ScenarioMetrics,
    TailTrial,
    Traceability,
    format_error,
)
from ._side_effects import recovered
from ._trace import LEVEL_RANK
from ._trial_model import TrialEntry, report_error

_OUTCOME_RANK = {OUTCOME_TIMEOUT: 0, OUTCOME_FAIL: 1, OUTCOME_PASS: 2}


def _fingerprints(run: Mapping[str, Any]) -> Fingerprints:
    given = run.get("fingerprints")
    fp: Mapping[str, Any] = given if isinstance(given, Mapping) else {}

    def pick(*names: str) -> str | None:
        for name in names:
            value = fp.get(name, run.get(name))
            if value is not None:
                return str(value)
        return None

    return Fingerprints(
        battery_spec=pick("battery_spec", "spec", "spec_fingerprint", "battery_spec_fingerprint"),
        plan=pick("plan", "plan_fingerprint"),
        measurement=pick("measurement", "measurement_fingerprint"),
    )


def _judge_identity(run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> Any:
    """The run's judge identity; else the one the verdicts recorded (None without a judge)."""
    judge = run.get("judge")
    if isinstance(judge, Mapping):
        return dict(judge)
    if judge is not None:
        return judge
    seen = sorted(
        {
            str(j["identity"])
            for t in trials
            if isinstance(j := _verdict(t).get("judge"), Mapping) and j.get("identity")
        }
    )
    return seen[0] if len(seen) == 1 else (seen or None)


def _methodology(run: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> Any:
    """The run's methodology; else the one every verdict recorded."""
    if run.get("methodology") is not None:
        return run.get("methodology")
    seen = {_verdict(t).get("methodology") for t in trials} - {None}
    return seen.pop() if len(seen) == 1 else None


def _scenarios(ordered: Sequence[Mapping[str, Any]]) -> list[ScenarioEntry]:
    """Per-scenario figures in the reference's ``scenarios[]`` shape (spec §2.3)."""
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for t in ordered:
        groups.setdefault(t.get("scenario_index"), []).append(t)
    out: list[ScenarioEntry] = []
    for index, members in groups.items():
        every = [t for t in members if t.get("outcome") in SCORED_OUTCOMES]
        scored = [t for t in every if not unreceipted(t)]
        pei, _, pei_reason = _live_mean(scored, PEI)
        ti, _, ti_reason = _live_mean(scored, TI)
        if every and not scored:
            pei_reason = ti_reason = DELIVERY_UNRECEIPTED
        faulted = [t for t in scored if _verdict(t).get("faulted") is True]
        judged = [
            float(_verdict(t)["irs_score"])
            for t in scored
            if _verdict(t).get("judged") is True
            and isinstance(_verdict(t).get("irs_score"), (int, float))
        ]
        undefined: dict[str, str] = {}
        if pei_reason:
            undefined[PEI] = pei_reason
        if ti_reason:
            undefined[TI] = ti_reason
        first = members[0]
        delivery = delivery_counts(every, nominal=first.get("is_nominal") is True)
        if not faulted:
            undefined[FRR] = delivery["reason"] or NO_FAULTED_TRIAL
        if not judged:
            undefined[IRS] = delivery["reason"] or NO_JUDGED_TRIAL
        out.append(
            ScenarioEntry(
                scenario_index=index,
                domain=first.get("domain"),
                fault_type=first.get("fault_type"),
                is_nominal=first.get("is_nominal"),
                trials=len(members),
                scored=len(scored),
                passed=sum(1 for t in scored if _passed(t)),
                metrics=ScenarioMetrics(
                    frr=(
                        sum(1 for t in faulted if recovered(t)) / len(faulted) if faulted else None
                    ),
                    pei=pei,
                    irs=_mean(judged),
                    ti=ti,
                ),
                undefined=undefined,
                measured=delivery["measured"],
                delivery={k: delivery[k] for k in _DELIVERY_KEYS},
            )
        )
    return out


_DELIVERY_KEYS = ("planned", "injected", "delivered", "faulted_trials")


def _text_means(
    scored: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, float | None], dict[str, str]]:
    """Means of methodology A's per-trial text figures (TI on 0–1), where defined.

    A trial's figure that its own ``undefined`` marks (text FRR and PEI without required
    keywords) is left out; undefined on every trial, the mean takes that trial-level reason.
    """
    means: dict[str, float | None] = {}
    undefined: dict[str, str] = {}
    for name in (FRR, PEI, IRS, TI):
        values = []
        reasons: Counter[str] = Counter()
        for t in scored:
            th = _verdict(t).get("text_heuristics")
            if not isinstance(th, Mapping):
                continue
            marked = th.get("undefined")
            if isinstance(marked, Mapping) and isinstance(marked.get(name), str):
                reasons[str(marked[name])] += 1
                continue
            value = th.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values.append(float(value))
        means[name] = _mean(values)
        if not values:
            why = reasons.most_common(1)[0][0] if reasons else NOT_MEASURED
            undefined[f"text_heuristics_mean.{name}"] = why
    return means, undefined


def _summary(
    verdict: str,
    reasons: Sequence[str],
    pass_rate: Rate,
    metrics: Mapping[str, float | None],
    undefined: Mapping[str, str],
) -> str:
    """One deterministic paragraph saying what the report says."""

    def show(name: str) -> str:
        value = metrics.get(name)
        if value is None:
            return f"{name.upper()} undefined ({undefined.get(name, NOT_MEASURED)})"
        return f"{name.upper()} {value:.2f}"

    rate = pass_rate.rate
    rate_text = (
        "no scored trial"
        if rate is None
        else (f"{pass_rate.passed}/{pass_rate.n} scored trials passed ({rate:.1%})")
    )
    figures = ", ".join(show(m) for m in LIVE_METRICS)
    why = "; ".join(reasons)
    return f"{verdict}: {rate_text}; {figures}." + (f" Why: {why}." if why else "")


def _traceability(scored: Sequence[Mapping[str, Any]]) -> Traceability:
    """How the scored trials' tool calls link to model replies, and the note that explains TI.

    Trials scored before hb-derive/2 carry no link counts: then the figures are not measured.
    Trials whose TI is undefined for want of model events (hb-derive/3) are named in the note;
    when every call came from such trials, the explained share is undefined for that reason too.
    """
    keys = ("calls", LINK_ID, LINK_MATCH, LINK_NONE, "explained", "unobserved")
    totals = dict.fromkeys(keys, 0)
    measured = True
    blind_trials = blind_calls = 0
    for t in scored:
        links = _verdict(t).get("links")
        if not isinstance(links, Mapping) or "calls" not in links:
            measured = False
            continue
        for k in keys:
            value = links.get(k, 0)
            totals[k] += int(value) if isinstance(value, int) else 0
        reasons = _verdict(t).get("metrics_undefined")
        if isinstance(reasons, Mapping) and reasons.get(TI) == NO_MODEL_EVENTS:
            blind_trials += 1
            n = links.get("calls", 0)
            blind_calls += int(n) if isinstance(n, int) else 0
    calls = totals["calls"]
    undefined: dict[str, str] = {}
    share: float | None = None
    if not measured:
        undefined[EXPLAINED_SHARE] = NOT_MEASURED
    elif not calls:
        undefined[EXPLAINED_SHARE] = NO_STEPS
    elif blind_calls == calls:
        undefined[EXPLAINED_SHARE] = NO_MODEL_EVENTS
    elif totals["unobserved"] == calls:
        undefined[EXPLAINED_SHARE] = TEXT_UNOBSERVED
    else:
        # Calls whose reply text was never observed are neither explained nor unexplained.
        share = totals["explained"] / (calls - totals["unobserved"])
    parts: list[str] = []
    if blind_trials:
        parts.append(
            f"{blind_trials} trial(s) recorded tool calls but no model event, so their TI is "
            f"undefined ({NO_MODEL_EVENTS}): record the model's replies (an adapter, or think() "
            "in a plain agent) to measure it"
        )
    if measured and calls:
        if totals[LINK_NONE]:
            parts.append(
                f"{totals[LINK_NONE]} of {calls} tool calls could not be linked to a model message"
            )
        if totals["unobserved"]:
            parts.append(
                f"{totals['unobserved']} of {calls} tool calls came from a reply whose text the "
                "framework's provider discarded (CrewAI's native providers keep only the tool "
                f"calls): whether it stated a reason is unobserved ({TEXT_UNOBSERVED}), so "
                "they are left out of the explained share"
            )
        unexplained = calls - totals["explained"] - totals["unobserved"]
        if unexplained:
            parts.append(
                f"{unexplained} of {calls} tool calls came from a model message that stated no "
                "reason"
            )
        if totals[LINK_MATCH]:
            parts.append(
                f"{totals[LINK_MATCH]} of {calls} were linked by tool name and arguments (the "
                "framework passed no model tool-call id)"
            )
    return Traceability(
        calls=calls,
        linked_by_id=totals[LINK_ID],
        linked_by_match=totals[LINK_MATCH],
        unlinked=totals[LINK_NONE],
        explained=totals["explained"],
        explained_share=share,
        note="; ".join(parts) if parts else None,
        undefined=undefined,
    )


def _evidence(scored: Sequence[Mapping[str, Any]]) -> Evidence:
    levels: Counter[str] = Counter()
    completeness: list[float] = []
    reconciled = 0
    unsupported: set[str] = set()
    for t in scored:
        ev = _verdict(t).get("evidence")
        if not isinstance(ev, Mapping):
            levels[EVIDENCE_E0] += 1
            completeness.append(0.0)
            continue
        levels[str(ev.get("level", EVIDENCE_E0))] += 1
        completeness.append(float(ev.get("completeness", 0.0)))
        reconciled += int(ev.get("claims_reconciled", 0) or 0)
        unsupported.update(str(c) for c in ev.get("claims_unsupported", ()) or ())
    weakest = min(levels, key=lambda lv: LEVEL_RANK.get(lv, 0)) if levels else None
    return Evidence(
        level=weakest,  # type: ignore[arg-type]  # a level the verdicts were validated with
        completeness=min(completeness) if completeness else None,
        completeness_rule="min",
        completeness_mean=_mean(completeness),
        levels={lv: levels.get(lv, 0) for lv in (EVIDENCE_E0, EVIDENCE_E1, EVIDENCE_E2)},
        claims_reconciled=reconciled,
        claims_unsupported=sorted(unsupported),
        undefined={}
        if levels
        else {"level": NO_TRIALS, "completeness": NO_TRIALS, "completeness_mean": NO_TRIALS},
        **proxy_only_field(scored),
    )


def _tail(scored: Sequence[Mapping[str, Any]], size: int) -> list[TailTrial]:
    bad = [t for t in scored if _verdict(t).get("severity") in SEVERITY_WEIGHTS]
    bad.sort(
        key=lambda t: (
            -SEVERITY_WEIGHTS[str(_verdict(t)["severity"])],
            _OUTCOME_RANK.get(str(t.get("outcome")), 3),
            _sort_key(t),
        )
    )
    return [
        TailTrial.model_validate(
            {
                "trial_key": t.get("trial_key"),
                "task_id": t.get("task_id"),
                "scenario_index": t.get("scenario_index"),
                "trial_index": t.get("trial_index"),
                "domain": t.get("domain"),
                "fault_type": t.get("fault_type"),
                "outcome": t.get("outcome"),
                "severity": _verdict(t).get("severity"),
                "severity_reasons": list(_verdict(t).get("severity_reasons", ()) or ()),
            }
        )
        for t in bad[:size]
    ]


def _trial_entry(t: Mapping[str, Any], index: int) -> TrialEntry:
    """One trial as the report lists it, read through the model (``trials.<index>`` on error).

    The model rebuilds every nested value as it validates (the verdict and memory decision
    are fully typed), so the entry shares nothing with ``t``; no deep copy is needed.
    """
    v = _verdict(t)
    raw_faults = v.get("faults")
    faults: list[Any] = raw_faults if isinstance(raw_faults, list) else []
    entry: dict[str, Any] = {
        "trial_key": t.get("trial_key"),
        "task_id": t.get("task_id"),
        "category": t.get("category"),
        "scenario_index": t.get("scenario_index"),
        "trial_index": t.get("trial_index"),
        "domain": t.get("domain"),
        "fault_type": t.get("fault_type"),
        "is_nominal": t.get("is_nominal"),
        "outcome": t.get("outcome"),
        "attempts": t.get("attempts"),
        "isolated": t.get("isolated"),
        "usage": dict(t["usage"]) if isinstance(t.get("usage"), Mapping) else None,
        "severity": v.get("severity"),
        "signals": v.get("signals"),
        "faults": [dict(f) for f in faults if isinstance(f, Mapping)],
        "verdict": dict(v) if v else None,
    }
    if "run_id" in t:
        entry["run_id"] = t.get("run_id")
    if "latency_ms" in t:
        entry["latency_ms"] = t.get("latency_ms")
    if "planned_faults" in t:
        entry["planned_faults"] = t.get("planned_faults")
    if isinstance(t.get("fault_targets"), list):
        entry["fault_targets"] = t.get("fault_targets")
    if t.get("error") is not None:
        entry["error"] = report_error(t["error"])
    if isinstance(t.get("memory"), Mapping):
        entry["memory"] = dict(t["memory"])
    if t.get("perturbation") is not None:
        entry["perturbation"] = t.get("perturbation")
    try:
        return TrialEntry.model_validate(entry)
    except ValidationError as exc:
        raise format_error(exc, under=f"trials.{index}") from None
