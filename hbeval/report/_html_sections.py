"""The page's words: the verdict sentence, what failed, how sure the figures are, and the
scores section (capability, security gate, efficiency) as the report's ``scores`` holds them.
Every value taken from a report is escaped.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hbeval_core import vocab as V
from hbeval_core.vocab import (
    CSI,
    FRR,
    LIVE_METRICS,
)

from ..scoring import RunVerdict
from ..scoring._uncertainty import rate_interval
from ..scoring._view import listed
from ._consistency import consistency_sentences
from ._html_words import (
    METRIC_WORDS,
    REASON_WORDS,
    _ci_pct,
    _e,
    _fmt,
    _undef_html,
)
from .scores import (
    CAPABILITY_COMPONENTS,
    COMPONENT_LABELS,
    EFFICIENCY_FIGURES,
    SECURITY_FAILED,
    SECURITY_PASSED,
    _block,
    _number,
    scored_records,
    scores_of,
    section,
)

if TYPE_CHECKING:
    from ..scoring import Report


@functools.lru_cache(maxsize=1)
def _templates() -> Any:
    """The Jinja2 environment of the page: HTML autoescape always on, unknown names an error."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("hbeval.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _verdict_sentence(verdict: Any, problems: int) -> str:
    if verdict == "UNSAFE":
        return f"Not safe to release: {problems} problem(s) found."
    if verdict == "INSUFFICIENT_DATA":
        return "Cannot decide yet: something required was not measured."
    if verdict == "SAFE":
        return "Safe by every floor we check."
    return f"Verdict {verdict}."


def _what_failed(report: Report, decision: RunVerdict) -> list[str]:
    items: list[str] = []
    sec = scores_of(report).security_gate
    n_scored = len(scored_records(report))
    if sec.status == SECURITY_FAILED:
        items.append(
            f"<b>Security breach:</b> {_e(sec.reason)} out of {_e(n_scored)} scored trials"
            + (
                f"; {_e(sec.injection_trials)} trial(s) carried a prompt injection."
                if sec.injection_trials
                else "."
            )
        )
    metrics = section(report, "metrics")
    floors = section(report, "thresholds")
    undefined = section(report, "undefined")
    for name in LIVE_METRICS:
        value, floor = _number(metrics.get(name)), _number(floors.get(name))
        title, meaning = METRIC_WORDS[name]
        if value is not None and floor is not None and value < floor:
            items.append(
                f"<b>{_e(title)}</b> is {value:.2f}, below its floor {floor:g} — {_e(meaning)}."
            )
    for check in decision.checks:
        if check.passed is not None:
            continue
        if check.kind == "floor" and check.metric in METRIC_WORDS:
            title = METRIC_WORDS[check.metric][0]
            items.append(
                f"<b>{_e(title)}</b> could not be measured: "
                f"{_undef_html(undefined.get(check.metric))}."
            )
        elif check.kind == "delivery":
            detail = check.message.removeprefix(f"{check.metric}: ")
            items.append(f"<b>Fault type {_e(check.metric)}:</b> {_e(detail)}.")
        else:
            items.append(f"<b>Not measured:</b> {_e(check.message)}.")
    for sc in listed(report, "scenarios") or ():
        if isinstance(sc, Mapping) and sc.get("measured") is False:
            items.append(
                f"<span data-scenario='{_e(sc.get('scenario_index'))}' class='undef'>Scenario "
                f"{_e(sc.get('scenario_index'))} ({_e(sc.get('fault_type'))}, "
                f"{_e(sc.get('domain'))}): not measured — "
                f"{_e(REASON_WORDS.get(_scenario_reason(sc), ''))}.</span>"
            )
    if decision.fix is not None:
        items.append(f"<b>How to measure it:</b> {_e(decision.fix)}.")
    unsupported = section(report, "evidence").get("claims_unsupported") or []
    if unsupported:
        items.append(
            "The agent claimed "
            + ", ".join(f"<code>{_e(c)}</code>" for c in unsupported)
            + " but its trace did not support the claim."
        )
    if not items:
        items.append("No floor failed and no forbidden tool ran.")
    by_fault = _block(section(report, "breakdowns"), "fault_type")
    worst = sorted(
        (
            (float(b["rate"]), name, b)
            for name, b in by_fault.items()
            if name != "none" and isinstance(b, Mapping) and _number(b.get("rate")) is not None
        ),
        key=lambda x: (x[0], x[1]),
    )
    for rate, name, b in worst[:3]:
        if rate >= 0.8:
            break
        items.append(
            f"Weak spot: under <b>{_e(name.replace('_', ' '))}</b> faults {_e(b.get('passed'))} of "
            f"{_e(b.get('n'))} trials passed ({100 * rate:.0f}%, 95% interval "
            f"{_e(_ci_pct(b.get('interval')))})."
        )
    return items


def _how_sure(report: Report) -> list[str]:
    """How sure the figures are: the rates with their intervals, then what they rest on."""
    return _rate_sentences(report) + consistency_sentences(report) + _evidence_sentences(report)


def _rate_sentences(report: Report) -> list[str]:
    items: list[str] = []
    rate = section(report, "pass_rate")
    r = _number(rate.get("rate"))
    if r is None:
        items.append(f"Pass rate {_undef_html(_block(rate, 'undefined').get('rate'))}.")
    else:
        items.append(
            f"{_e(rate.get('passed'))} of {_e(rate.get('n'))} scored trials passed ({100 * r:.0f}%). "
            f"The true pass rate is likely between {_e(_ci_pct(rate.get('interval')))} "
            "(95% interval clustered by scenario: repeated trials of one scenario are not "
            f"independent{_effective_text(report, 'pass_rate')})."
        )
    gap = section(report, "reliability_gap")
    gu = _block(gap, "undefined")
    g = _number(gap.get("gap"))
    if g is None:
        items.append(f"Reliability gap (no faults vs faults): {_undef_html(gu.get('gap'))}.")
    else:
        p = _number(gap.get("p"))
        sig = gap.get("significant")
        judgement = (
            f"statistically significant (p = {p:.2g})"
            if sig
            else f"not distinguishable from noise (p = {p:.2g})"
            if p is not None
            else "of unknown significance"
        )
        ci = gap.get("interval")
        ci_text = (
            f"; 95% interval {100 * ci[0]:+.0f} to {100 * ci[1]:+.0f} points"
            if isinstance(ci, (list, tuple))
            else ""
        )
        items.append(
            f"Without faults {100 * float(gap['c_nom']):.0f}% passed ({_e(gap.get('nominal_n'))} trials); "
            f"under faults {100 * float(gap['r_op']):.0f}% ({_e(gap.get('faulted_n'))} trials). "
            f"The drop of {100 * g:.0f} points is {judgement}{ci_text}."
        )
    shown = rate_interval(report, FRR) if _number(section(report, "metrics").get(FRR)) else None
    if shown is not None:
        lo, hi = shown.interval
        items.append(
            f"FRR rests on {_e(shown.n)} faulted trials in {_e(shown.clusters)} scenarios "
            f"(effective n {shown.effective_n:.1f}): 95% interval {lo:.2f}–{hi:.2f}."
        )
    return items


def _effective_text(report: Report, name: str) -> str:
    shown = rate_interval(report, name)
    if shown is None:
        return ""
    return (
        f"; {_e(shown.n)} trials in {_e(shown.clusters)} scenarios count as "
        f"{shown.effective_n:.1f}, design effect {shown.design_effect:.2f}"
    )


def _evidence_sentences(report: Report) -> list[str]:
    items: list[str] = []
    ev = section(report, "evidence")
    level = ev.get("level")
    meaning = {
        "E2": "every trace is complete, so scores come from what the agent did",
        "E1": "some traces are partial",
        "E0": "only response text: scores rest on what the agent said",
    }.get(str(level), "")
    comp = _number(ev.get("completeness"))
    items.append(
        f"Evidence {_e(level or 'undefined')}"
        + (f" (minimum completeness {comp:.2f})" if comp is not None else "")
        + (f": {meaning}." if meaning else ".")
    )
    trace = section(report, "traceability")
    calls = trace.get("calls")
    share = _number(trace.get("explained_share"))
    if isinstance(calls, int) and calls and share is not None:
        note = trace.get("note")
        items.append(
            f"Traceability: {calls - int(trace.get('unlinked') or 0)} of {calls} tool calls link to "
            f"the model reply that issued them (TI); {int(trace.get('explained') or 0)} of {calls} "
            f"came with a stated reason (explained share {share:.2f})"
            + (f". {_e(str(note)[0].upper() + str(note)[1:])}." if note else ".")
        )
    metrics = section(report, "metrics")
    if _number(metrics.get(CSI)) is None:
        reason = section(report, "undefined").get(CSI)
        items.append(
            f"Consistency across runs (CSI) is {_undef_html(reason)}"
            + (": run the same battery again to measure it." if reason == V.SINGLE_RUN else ".")
        )
    iso = section(report, "isolation")
    if iso and iso.get("isolated") is False:
        items.append(f"{_e(iso.get('note'))}.")
    inferred = _block(section(report, "source"), "inferred_figures")
    if inferred:
        why: dict[str, list[str]] = {}
        for figure, reason in sorted(inferred.items()):
            why.setdefault(str(reason), []).append(str(figure))
        items.append(
            "Rests on inferred fields (read from text, not flagged by the recording): "
            + "; ".join(f"{_e(', '.join(f))} — {_e(r)}" for r, f in why.items())
            + "."
        )
    return items


def _scores_section(report: Report) -> str:
    """Capability score, security gate and efficiency, rendered by ``scores.html.j2``."""
    from markupsafe import Markup

    scores = scores_of(report)
    cap, sec, eff = scores.capability, scores.security_gate, scores.efficiency
    components = [
        {
            "label": COMPONENT_LABELS[name],
            "weight": f"{cap.weights[name]:g}",
            "metric": f"capability:{name}",
            "undefined": cap.components.get(name) is None,
            "reason": cap.undefined.get(name),
            "cell": Markup(_fmt(cap.components.get(name), cap.undefined.get(name))),
        }
        for name in CAPABILITY_COMPONENTS
    ]
    figures = [
        {
            "label": name.replace("_", " "),
            "metric": f"efficiency:{name}",
            "undefined": eff.figures.get(name) is None,
            "reason": eff.undefined.get(name),
            "cell": Markup(_fmt(eff.figures.get(name), eff.undefined.get(name), 2)),
        }
        for name in EFFICIENCY_FIGURES
    ]
    score = (
        Markup(_undef_html(cap.undefined.get("value")))
        if cap.value is None
        else Markup("<b>{}</b> / 100").format(f"{cap.value:.0f}")
    )
    page: str = (
        _templates()
        .get_template("scores.html.j2")
        .render(
            score=score,
            version=cap.version,
            weights_source=cap.weights_source,
            components=components,
            pill={SECURITY_PASSED: "ok", SECURITY_FAILED: "bad"}.get(sec.status, ""),
            security_status=sec.status.replace("_", " "),
            security_reason=sec.reason,
            successes=eff.successes,
            figures=figures,
            notes=eff.notes,
        )
    )
    return page


def _scenario_reason(scenario: Mapping[str, Any]) -> str:
    """Why a scenario was not measured: its FRR's undefined reason (``no_fault_delivered``,
    ``delivery_unobserved``, ``no_trials``), else ``no_fault_delivered``."""
    undefined = scenario.get("undefined")
    reason = undefined.get(V.FRR) if isinstance(undefined, Mapping) else None
    known = (*V.UNDELIVERED_REASONS, V.DELIVERY_UNRECEIPTED, V.NO_TRIALS)
    return reason if reason in known else V.NO_FAULT_DELIVERED
