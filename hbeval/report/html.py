"""One self-contained HTML page per report set: what broke, how sure we are, and the evidence.

``render_html({"label": report, ...}, traces=...)`` returns the page as a string; nothing in it is
fetched when it is opened (no external CSS, JavaScript, fonts or images: styles are inline and
every chart is inline SVG), and its Content-Security-Policy (``CONTENT_SECURITY_POLICY``) lets
no script run and nothing load. Every value taken from a report or a trace is escaped. The page
opens with a plain-language headline (verdict, what failed, intervals), then charts: metric bars
with interval whiskers and floors, pass rate by fault type, the reliability gap per domain, the
severity histogram, pass^k over k, per-trial live-metric timelines recomputed from stored events,
and the worst trials with their traces.

Contract for every chart: each drawn element carries ``data-metric`` and
``data-undefined="false"``; an undefined value is never drawn (no bar, point or line) — it is a
text element with ``data-undefined="true"``, ``data-reason`` and the words
"undefined (reason)". Timelines break at undefined values instead of dropping to zero.

``traces`` (optional) maps ``(run_id, trial_key)`` to that trial's stored events;
``store_traces(store)`` builds one from a store. Without it, timelines and traces say they need
the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hbeval_core import __version__
from hbeval_core import vocab as V
from hbeval_core.vocab import (
    FRR,
    IRS,
    LIVE_METRICS,
    NO_TRIALS,
    NOT_MEASURED,
    PEI,
    TI,
)

from ..scoring import decide_verdict
from ..scoring._view import listed, section
from ._html_charts import (
    _bar_rows,
    _fault_type_rows,
    _gap_chart,
    _metric_rows,
    _pass_k_chart,
    _severity_chart,
    _timeline_chart,
)
from ._html_sections import (
    _how_sure,
    _scores_section,
    _templates,
    _verdict_sentence,
    _what_failed,
)
from ._html_words import (
    _STYLE,
    CONTENT_SECURITY_POLICY,
    METRIC_WORDS,
    REASON_WORDS,
    TraceSource,
    _ci_pct,
    _clip,
    _fmt,
    _pct,
    store_traces,
    trial_timeline,
)
from ._model_faults import model_faults_html
from ._perturbations import perturbation_html
from ._proxy_evidence import proxy_only_html, proxy_only_note
from ._side_effects import side_effects_html
from .compare import CompareRefused, compare_reports
from .scores import (
    _block,
    _number,
    scored_records,
    scores_of,
)

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "REASON_WORDS",
    "TraceSource",
    "render_html",
    "store_traces",
    "trial_timeline",
    "write_html",
]


def _trace_items(events: Sequence[Any], forbidden: Sequence[str]) -> list[tuple[str, str]]:
    """``(css class, text)`` per shown event of a trace; the template escapes both."""
    items: list[tuple[str, str]] = []
    for ev in events:
        kind = getattr(ev, "kind", "?")
        cls = kind
        if kind == "run_start":
            text = f"start · task {getattr(ev, 'task_id', None)} · input: {_clip(getattr(ev, 'input', ''))}"
        elif kind == "model_end":
            calls = ", ".join(
                f"{c.name}({_clip(c.args, 120)})" for c in getattr(ev, "tool_calls", ()) or ()
            )
            said = getattr(ev, "text", None) or getattr(ev, "reasoning", None) or ""
            text = f"model · says: {_clip(said) or '(nothing)'}" + (
                f" · calls {calls}" if calls else " · no tool call"
            )
        elif kind == "tool_start":
            tool = getattr(ev, "tool", "")
            text = f"→ {tool}({_clip(getattr(ev, 'args', {}), 160)})"
            if tool in forbidden:
                cls = "breach"
                text += "   ← FORBIDDEN TOOL"
        elif kind == "tool_end":
            text = f"← {getattr(ev, 'tool', '')} {getattr(ev, 'status', 'ok')}: {_clip(getattr(ev, 'result', None))}"
        elif kind == "tool_error":
            text = f"← {getattr(ev, 'tool', '')} ERROR: {_clip(getattr(ev, 'error', ''))}"
        elif kind == "fault_injected":
            text = (
                f"FAULT {getattr(ev, 'mode', '')} into {getattr(ev, 'tool', '')}"
                f" ({getattr(ev, 'effect', '')}): {_clip(getattr(ev, 'payload', '') or '')}"
            )
        elif kind == "run_end":
            text = f"end · {getattr(ev, 'status', '')} · output: {_clip(getattr(ev, 'output', ''))}"
        elif kind in ("model_start", "span_start", "span_end"):
            continue
        else:
            fields = ev.model_dump(
                exclude={"run_id", "ts", "seq", "attrs", "kind"}, exclude_none=True
            )
            text = f"{kind} · {_clip(fields)}"
        items.append((str(cls), text))
    return items


def _select_timeline_trials(report: Report, count: int) -> list[Mapping[str, Any]]:
    trials = [t for t in scored_records(report) if t.get("trial_key")]
    by_key = {str(t["trial_key"]): t for t in trials}
    chosen: list[str] = []
    for tail in listed(report, "tail") or ():
        key = str(tail.get("trial_key"))
        if key in by_key and key not in chosen:
            chosen.append(key)
    for t in trials:
        if _block(t, "verdict").get("faulted") is True and str(t["trial_key"]) not in chosen:
            chosen.append(str(t["trial_key"]))
    return [by_key[k] for k in chosen[: max(count, 0)]]


def _timelines_section(report: Report, traces: TraceSource | None, count: int) -> str:
    """Live-metric timelines of selected trials, rendered by ``timelines.html.j2``."""
    from markupsafe import Markup

    run_id = report.run_id
    shown: list[dict[str, Any]] | None = None
    if traces is not None and run_id is not None:
        shown = []
        for trial in _select_timeline_trials(report, count):
            key = str(trial["trial_key"])
            row: dict[str, Any] = {
                "key": key,
                "task_id": trial.get("task_id"),
                "domain": trial.get("domain"),
                "fault_type": trial.get("fault_type"),
                "outcome": trial.get("outcome"),
                "reason": None,
            }
            shown.append(row)
            events = traces(str(run_id), key)
            rows = trial_timeline(events) if events else []
            if not events:
                row.update(reason=NOT_MEASURED, words="no stored events for this trial")
                continue
            if not rows:
                row.update(reason=V.NO_STEPS, words=REASON_WORDS[V.NO_STEPS])
                continue
            final = _block(_block(trial, "verdict"), "metrics")
            last = rows[-1]["metrics"]
            same = all(
                (final.get(m) is None) == (last.get(m) is None)
                and (final.get(m) is None or abs(float(final[m]) - float(last[m] or 0)) < 1e-9)
                for m in (PEI, FRR, IRS, TI)
            )
            row.update(
                chart=Markup(_timeline_chart(key, rows)),  # built from escaped values
                steps=len(rows),
                check="final step matches the trial's scored metrics"
                if same
                else "final step differs from the trial's scored metrics (different derivation?)",
            )
    page: str = (
        _templates()
        .get_template("timelines.html.j2")
        .render(trials=shown, not_measured=NOT_MEASURED)
    )
    return page


def _tail_section(report: Report, traces: TraceSource | None) -> str:
    """The worst trials with their traces, rendered by ``tail.html.j2`` (every value escaped)."""
    trials = {str(t.get("trial_key")): t for t in scored_records(report)}
    run_id = report.run_id
    rows: list[dict[str, Any]] = []
    for t in listed(report, "tail") or ():
        if not isinstance(t, Mapping):
            continue
        key = str(t.get("trial_key"))
        v = _block(trials.get(key, {}), "verdict")
        signals = _block(v, "signals")
        sig_text = (
            " ".join(
                f"{k}={'✓' if signals.get(k) else '✗' if signals.get(k) is False else '–'}"
                for k in ("S1", "S2", "S3", "S4", "S5", "S6")
            )
            if signals
            else "no fault signals (nominal trial)"
        )
        faults = ", ".join(
            f"{f.get('mode')} into {f.get('target')} ({_delivery_words(f.get('delivered'))})"
            for f in v.get("faults") or ()
            if isinstance(f, Mapping)
        )
        events = traces(str(run_id), key) if traces is not None and run_id is not None else None
        forbidden = [str(x) for x in v.get("forbidden_tools_run") or ()]
        rows.append(
            {
                "key": key,
                "severity": t.get("severity"),
                "task_id": t.get("task_id"),
                "domain": t.get("domain"),
                "fault_type": t.get("fault_type"),
                "outcome": t.get("outcome"),
                "reasons": "; ".join(str(r) for r in t.get("severity_reasons") or ()),
                "faults": faults,
                "signals": sig_text,
                "violations": ", ".join(str(x) for x in v.get("constraint_violations") or ()),
                "error": trials.get(key, {}).get("error"),
                "events": _trace_items(events, forbidden) if events else None,
            }
        )
    page: str = (
        _templates().get_template("tail.html.j2").render(tail=rows, not_measured=NOT_MEASURED)
    )
    return page


def _delivery_words(delivered: Any) -> str:
    if delivered:
        return "delivered"
    return "not delivered" if delivered is False else "delivery unknown"


def _provenance(report: Report) -> list[tuple[str, Any]]:
    fps = section(report, "fingerprints")
    versions = section(report, "versions")
    run = section(report, "run")
    ev = section(report, "evidence")
    return [
        ("run id", report.run_id),
        ("agent id", run.get("agent_id")),
        (
            "battery · seed · trials",
            f"{run.get('battery')} · {run.get('seed')} · {run.get('trials')}",
        ),
        ("methodology", run.get("methodology")),
        ("measurement fingerprint", fps.get("measurement")),
        ("battery spec fingerprint", fps.get("battery_spec")),
        ("plan fingerprint", fps.get("plan")),
        ("manifest hash", report.manifest_hash),
        ("scoring · derivation", f"{versions.get('scoring')} · {versions.get('derive')}"),
        ("metric versions", json.dumps(section(report, "metric_versions") or {}, sort_keys=True)),
        (
            "evidence",
            f"{ev.get('level')} · levels {json.dumps(ev.get('levels') or {}, sort_keys=True)}"
            + proxy_only_note(report),
        ),
        ("isolation", section(report, "isolation").get("note")),
        ("verification", report.verification),
    ]


def _report_section(
    index: int, label: str, report: Report, traces: TraceSource | None, timelines: int
) -> dict[str, Any]:
    """What ``section.html.j2`` shows for one report. Plain values are escaped by the template;
    the parts wrapped in Markup are built by the chart and text helpers from escaped values."""
    from markupsafe import Markup

    from ..scoring._warnings import report_warnings

    run = section(report, "run")
    decision = decide_verdict(report)
    problems = sum(1 for c in decision.checks if c.passed is False)
    severity = section(report, "severity")
    return {
        "index": index,
        "label": label,
        "agent_id": run.get("agent_id"),
        "run_id": report.run_id,
        "verdict": decision.verdict,
        "sentence": _verdict_sentence(decision.verdict, problems),
        "warnings": report_warnings(report),
        "scores_line": scores_of(report).headline,
        "what": [Markup(x) for x in _what_failed(report, decision)],
        "sure": [Markup(x) for x in _how_sure(report)],
        "metrics_chart": Markup(
            _bar_rows("metrics", _metric_rows(report), "Metrics with intervals and floors")
        ),
        "fault_type_chart": Markup(
            _bar_rows("fault_types", _fault_type_rows(report), "Pass rate by fault type")
        ),
        "gap_chart": Markup(_gap_chart(report)),
        "severity_chart": Markup(_severity_chart(report)),
        "side_effects": Markup(side_effects_html(report)),
        "model_faults": Markup(model_faults_html(report)),
        "proxy_only": Markup(proxy_only_html(report)),
        "perturbations": Markup(perturbation_html(report)),
        "weighted_failure_rate": Markup(
            _fmt(
                _number(severity.get("weighted_failure_rate")),
                _block(severity, "undefined").get("weighted_failure_rate"),
            )
        ),
        "pass_k_chart": Markup(_pass_k_chart(report)),
        "scores": Markup(_scores_section(report)),
        "timelines": Markup(_timelines_section(report, traces, timelines)),
        "tail": Markup(_tail_section(report, traces)),
        "provenance": _provenance(report),
    }


def _side_by_side(reports: Mapping[str, Report]) -> dict[str, Any]:
    """Rows of ``side_by_side.html.j2``: each cell is markup from ``_fmt``/``_pct`` (escaped)."""
    from markupsafe import Markup

    labels = list(reports)

    def cell(r: Report, name: str) -> Markup:
        metrics = section(r, "metrics")
        return Markup(_fmt(_number(metrics.get(name)), section(r, "undefined").get(name)))

    rows: list[tuple[str, list[Any]]] = [
        ("verdict", [decide_verdict(r).verdict for r in reports.values()]),
        (
            "scores",
            [scores_of(r).headline for r in reports.values()],
        ),
        (
            "pass rate (95% interval)",
            [
                Markup(_pct(_number(section(r, "pass_rate").get("rate")), NO_TRIALS))
                + f" ({_ci_pct(r.pass_rate.interval)})"
                for r in reports.values()
            ],
        ),
    ]
    for name in LIVE_METRICS:
        rows.append((METRIC_WORDS[name][0], [cell(r, name) for r in reports.values()]))
    for key, label in (
        ("c_nom", "C_nom (no faults)"),
        ("r_op", "R_op (under faults)"),
        ("gap", "reliability gap"),
    ):
        rows.append(
            (
                label,
                [
                    Markup(
                        _fmt(
                            _number(section(r, "reliability_gap").get(key)),
                            _block(section(r, "reliability_gap"), "undefined").get(key),
                        )
                    )
                    for r in reports.values()
                ],
            )
        )
    summary = refused = None
    if len(labels) == 2:
        try:
            cmp = compare_reports(
                reports[labels[0]], reports[labels[1]], labels=(labels[0], labels[1])
            )
            summary = cmp["summary"]
        except CompareRefused as exc:
            refused = str(exc)
    return {"rows": rows, "summary": summary, "refused": refused}


# --------------------------------------------------------------------------- public
def render_html(
    reports: Mapping[str, Report],
    *,
    traces: TraceSource | None = None,
    timelines: int = 3,
    title: str | None = None,
) -> str:
    """The self-contained HTML page for one or more reports (``{label: report}``, in order).

    ``traces`` gives stored events for timelines and tail traces; ``timelines`` caps how many
    trials per report get a live-metric timeline (the tail first, then faulted trials).
    Rendered with Jinja2 templates (``hbeval_core/report/templates``) that escape every value.
    """
    from markupsafe import Markup

    if not reports:
        raise ValueError("render_html needs at least one report")
    labels = list(reports)
    page: str = (
        _templates()
        .get_template("page.html.j2")
        .render(
            csp=CONTENT_SECURITY_POLICY,
            style=Markup(_STYLE),  # our own constant stylesheet
            heading=title or ("hbeval report · " + " vs ".join(labels)),
            labels=labels,
            side_by_side=_side_by_side(reports) if len(labels) > 1 else None,
            sections=[
                _report_section(i, lb, reports[lb], traces, timelines)
                for i, lb in enumerate(labels)
            ],
            metric_words=list(METRIC_WORDS.values()),
            version=__version__,
        )
    )
    return page + "\n"


def write_html(
    path: str | Path,
    reports: Mapping[str, Report],
    **kwargs: Any,
) -> Path:
    """Render ``reports`` with ``render_html(**kwargs)`` and write the page to ``path`` (UTF-8)."""
    from ..store._atomic import write_atomic

    target = Path(path)
    page = render_html(reports, **kwargs)
    if target.parent != Path():
        target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, page)
    return target
