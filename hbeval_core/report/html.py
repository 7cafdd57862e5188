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

import html as _html
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from .. import __version__
from .. import vocab as V
from ..metrics import reliability_gap, wilson_interval
from ..scoring import RunVerdict, decide_verdict
from ..vocab import (
    CSI,
    FRR,
    IRS,
    LIVE_METRICS,
    NO_TRIALS,
    NOT_MEASURED,
    OUTCOME_PASS,
    PEI,
    SEVERITY_WEIGHTS,
    TI,
    TI_MAX,
)
from .compare import CompareRefused, compare_reports
from .scores import (
    CAPABILITY_COMPONENTS,
    COMPONENT_LABELS,
    EFFICIENCY_FIGURES,
    SECURITY_FAILED,
    SECURITY_PASSED,
    _block,
    _number,
    capability_score,
    efficiency,
    proportion_counts,
    score_headline,
    scored_trials,
    security_gate,
)

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "REASON_WORDS",
    "TraceSource",
    "render_html",
    "store_traces",
    "trial_timeline",
    "write_html",
]

TraceSource = Callable[[str, str], Sequence[Any] | None]
"""``(run_id, trial_key) -> events`` of the trial's final attempt, or None when not stored."""

REASON_WORDS: Final[Mapping[str, str]] = {
    V.NO_FAULT_OBSERVED: "no fault was observed yet",
    V.NO_JUDGED_STEP: "no faulted step could be judged",
    V.NO_JUDGED_TRIAL: "no faulted trial could be judged",
    V.SINGLE_RUN: "needs at least two runs with the same fingerprint",
    V.NO_SUCCESS: "no trial succeeded",
    V.NO_STEPS: "the trace has no tool steps",
    V.NOT_MEASURED: "not measured",
    V.NO_TRIALS: "no trial was scored",
    V.NO_ERROR: "no error occurred",
    V.NO_JUDGE: "no judge was configured",
    V.NO_PRICE_TABLE: "the run manifest has no price table",
    V.INSUFFICIENT_RUNS: "too few runs",
    V.K_EXCEEDS_TRIALS: "fewer trials per task than k",
    V.NO_NOMINAL_TRIAL: "no trial ran without faults",
    V.NO_FAULTED_TRIAL: "no trial had a delivered fault",
    V.NO_FAULT_DELIVERED: "faults were planned but none reached the agent: not measured",
    V.NO_INJECTION_TRIAL: "no prompt-injection trial",
    V.NO_DEFINED_VALUE: "every input was itself undefined",
    V.NO_EXPECTED_CALLS: "the task declares no expected calls",
    V.SINGLE_TASK: "only one task, so no spread",
    V.INSUFFICIENT_TASKS: "too few shared tasks for a paired test (at least 6)",
}
"""Plain words for each undefined reason code, shown beside the code."""

METRIC_WORDS: Final[Mapping[str, tuple[str, str]]] = {
    PEI: ("Planning efficiency (PEI)", "how economically the agent re-plans around faults"),
    FRR: ("Failure resilience (FRR)", "share of trials with a fault that still succeeded"),
    IRS: (
        "Deliberate fault handling (IRS)",
        "share of faulted trials where the agent noticed the fault and handled it on purpose",
    ),
    TI: ("Traceability (TI, 0–5)", "how often tool calls come with a stated reason"),
    CSI: ("Consistency across runs (CSI)", "how stable the metrics are from run to run"),
}

_STYLE: Final = """
:root{--fg:#1d232b;--muted:#69727d;--line:#d6dbe1;--bar:#3b6ea5;--bad:#c0392b;--ok:#2e7d4f;
--warn:#b7791f;--bg:#fff;--panel:#f5f7f9;--a:#3b6ea5;--b:#d9822b}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1040px;margin:0 auto;padding:24px}h1{font-size:26px;margin:0 0 4px}
h2{font-size:22px;margin:40px 0 8px;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{font-size:17px;margin:28px 0 6px}p.lead{color:var(--muted);margin:0 0 16px}
nav a{margin-right:14px;color:var(--a)}.headline{border-radius:8px;padding:16px 20px;margin:12px 0;
border-left:8px solid var(--muted);background:var(--panel)}.headline .big{font-size:21px;font-weight:600}
.v-UNSAFE{border-color:var(--bad)}.v-SAFE{border-color:var(--ok)}.v-INSUFFICIENT_DATA{border-color:var(--warn)}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:20px}@media(max-width:800px){.cols{grid-template-columns:1fr}}
.cols ul{margin:4px 0;padding-left:20px}.muted{color:var(--muted)}.undef{color:var(--muted);font-style:italic}
table{border-collapse:collapse;margin:8px 0}td,th{border-bottom:1px solid var(--line);padding:4px 10px;
text-align:left;vertical-align:top}th{background:var(--panel)}td.num{text-align:right;font-variant-numeric:tabular-nums}
svg.chart{display:block;max-width:100%;height:auto;margin:6px 0 2px}svg text{font:12px system-ui,sans-serif;fill:var(--fg)}
svg .axis{stroke:#9aa3ad;stroke-width:1}svg .grid{stroke:#e6e9ed;stroke-width:1}
svg .bar{fill:var(--bar)}svg .bar.below{fill:var(--bad)}svg .whisker{stroke:#111;stroke-width:1.5}
svg .floor{stroke:var(--bad);stroke-width:2;stroke-dasharray:4 3}svg text.undef{fill:var(--muted);font-style:italic}
svg .pa{fill:var(--a)}svg .pb{fill:var(--b)}svg .seg{fill:none;stroke-width:2}
svg .fault{stroke:var(--bad);stroke-dasharray:3 3}svg .sev{fill:#8e5ba6}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;
margin-right:4px;vertical-align:-1px;border-radius:2px}
ol.trace{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--panel);
padding:10px 10px 10px 44px;border-radius:6px;overflow-x:auto}ol.trace li{white-space:pre-wrap;word-break:break-word}
li.ev-fault_injected,li.ev-tool_error{color:var(--bad);font-weight:600}li.ev-breach{color:var(--bad)}
details{margin:10px 0;border:1px solid var(--line);border-radius:6px;padding:6px 12px}
summary{cursor:pointer;font-weight:600}.pill{display:inline-block;padding:0 8px;border-radius:10px;
font-size:12px;background:var(--panel);border:1px solid var(--line);margin-left:6px}
.pill.bad{background:#fdecea;border-color:#f5b7b1}.pill.ok{background:#e8f5ec;border-color:#a9d5b8}
footer{margin-top:40px;color:var(--muted);font-size:13px}
"""

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)
"""The page's policy: it runs no script at all, loads nothing, and only its inline styles apply;
markup that slipped into the page could neither run nor fetch."""

_COLORS: Final = {PEI: "#3b6ea5", FRR: "#2e7d4f", IRS: "#8e5ba6", TI: "#d9822b"}
_SEVERITY_ORDER: Final = sorted(SEVERITY_WEIGHTS, key=lambda s: -SEVERITY_WEIGHTS[s])
_MAX_TEXT: Final = 240


# --------------------------------------------------------------------------- small helpers
def _e(value: Any) -> str:
    return _html.escape(str(value), quote=True)


def _undef_text(reason: str | None) -> str:
    code = reason or NOT_MEASURED
    return f"undefined ({code})"


def _undef_html(reason: str | None, *, words: bool = True) -> str:
    code = reason or NOT_MEASURED
    extra = REASON_WORDS.get(code) if words else None
    tail = f" — {_e(extra)}" if extra else ""
    return f'<span class="undef" data-undefined="true" data-reason="{_e(code)}">undefined ({_e(code)}){tail}</span>'


def _fmt(value: float | None, reason: str | None = None, digits: int = 3) -> str:
    if value is None:
        return _undef_html(reason, words=False)
    return f"{value:.{digits}f}"


def _pct(value: float | None, reason: str | None = None) -> str:
    if value is None:
        return _undef_html(reason, words=False)
    return f"{100 * value:.0f}%"


def _ci_pct(ci: Any) -> str:
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        return f"{100 * ci[0]:.0f}–{100 * ci[1]:.0f}%"
    return ""


def _clip(text: Any, limit: int = _MAX_TEXT) -> str:
    s = text if isinstance(text, str) else json.dumps(text, default=str, ensure_ascii=False)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _attrs(metric: str, undefined: bool, **extra: Any) -> str:
    parts = [f'data-metric="{_e(metric)}"', f'data-undefined="{"true" if undefined else "false"}"']
    for k, v in extra.items():
        if v is not None:
            parts.append(f'data-{k.replace("_", "-")}="{_e(v)}"')
    return " ".join(parts)


def _svg(chart: str, width: int, height: int, body: str, label: str) -> str:
    return (
        f'<svg class="chart" data-chart="{_e(chart)}" role="img" aria-label="{_e(label)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">{body}</svg>'
    )


# --------------------------------------------------------------------------- timelines
def trial_timeline(
    events: Iterable[Any], *, thresholds: Mapping[str, float] | None = None
) -> list[dict[str, Any]]:
    """Live metrics after every step of one trial, recomputed from its events with a Monitor.

    One dict per step: ``{"step": 1-based, "action", "had_fault", "metrics", "undefined"}``;
    undefined metrics are None with their reason (as the trial's verdict computed them:
    ``Monitor(adapt_plan=False)`` with the default PEI version).
    """
    from ..monitor import Monitor

    monitor = Monitor(thresholds=thresholds, adapt_plan=False)
    rows: list[dict[str, Any]] = []
    for ev in events:
        step = monitor.observe(ev)
        if step is None:
            continue
        rows.append(
            {
                "step": step.index + 1,
                "action": step.action,
                "had_fault": step.had_fault,
                "metrics": monitor.metrics,
                "undefined": monitor.undefined,
            }
        )
    return rows


def store_traces(store: Any) -> TraceSource:
    """A TraceSource reading a trial's final attempt from a store (``iter_events``)."""

    def traces(run_id: str, trial_key: str) -> list[Any] | None:
        try:
            attempts = store.list_attempts(run_id, trial_key)
            last = max((a.attempt for a in attempts), default=None)
            events = list(store.iter_events(run_id, trial_key, attempt=last))
        except Exception:  # a store without this run: no trace rather than no page
            return None
        return events or None

    return traces


# --------------------------------------------------------------------------- charts
_LABEL_W = 190
_PLOT_W = 360
_TEXT_X = _LABEL_W + _PLOT_W + 16
_WIDTH = 980
_ROW = 30


def _axis(top: int, bottom: int) -> str:
    out = []
    for i in range(5):
        x = _LABEL_W + _PLOT_W * i / 4
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{i / 4:g}</text>')
    out.append(f'<line class="axis" x1="{_LABEL_W}" y1="{top}" x2="{_LABEL_W}" y2="{bottom}"/>')
    return "".join(out)


def _bar_rows(chart: str, rows: Sequence[Mapping[str, Any]], label: str) -> str:
    """Horizontal bars on 0–max with interval whiskers and floors; undefined rows are text only.

    Row keys: metric, label, value, max (1 or 5), interval, floor, reason, note, group.
    """
    top = 8
    body: list[str] = []
    for i, row in enumerate(rows):
        y = top + i * _ROW
        mid = y + _ROW / 2
        scale = float(row.get("max", 1.0))
        value = _number(row.get("value"))
        metric = str(row["metric"])
        group = row.get("group")
        name = f'<text x="{_LABEL_W - 8}" y="{mid + 4:.1f}" text-anchor="end">{_e(row["label"])}</text>'
        if value is None:
            reason = str(row.get("reason") or NOT_MEASURED)
            words = REASON_WORDS.get(reason, "")
            body.append(
                f'<g class="row" {_attrs(metric, True, reason=reason, group=group)}>{name}'
                f'<text class="undef" x="{_LABEL_W + 6}" y="{mid + 4:.1f}">'
                f"{_e(_undef_text(reason))}{' — ' + _e(words) if words else ''}</text></g>"
            )
            continue
        floor = _number(row.get("floor"))
        below = floor is not None and value < floor
        w = _PLOT_W * max(0.0, min(value / scale, 1.0))
        parts = [
            f'<rect class="bar{" below" if below else ""}" x="{_LABEL_W}" y="{mid - 7:.1f}" '
            f'width="{w:.2f}" height="14"/>'
        ]
        ci = row.get("interval")
        ci_text = ""
        if isinstance(ci, (list, tuple)) and len(ci) == 2:
            lo = _LABEL_W + _PLOT_W * max(0.0, min(float(ci[0]) / scale, 1.0))
            hi = _LABEL_W + _PLOT_W * max(0.0, min(float(ci[1]) / scale, 1.0))
            parts.append(
                f'<line class="whisker" x1="{lo:.2f}" y1="{mid:.1f}" x2="{hi:.2f}" y2="{mid:.1f}"/>'
                f'<line class="whisker" x1="{lo:.2f}" y1="{mid - 5:.1f}" x2="{lo:.2f}" y2="{mid + 5:.1f}"/>'
                f'<line class="whisker" x1="{hi:.2f}" y1="{mid - 5:.1f}" x2="{hi:.2f}" y2="{mid + 5:.1f}"/>'
            )
            ci_text = f" [{float(ci[0]):.2f}, {float(ci[1]):.2f}]"
        if floor is not None:
            fx = _LABEL_W + _PLOT_W * min(floor / scale, 1.0)
            parts.append(
                f'<line class="floor" x1="{fx:.2f}" y1="{mid - 11:.1f}" x2="{fx:.2f}" y2="{mid + 11:.1f}"/>'
            )
        digits = 2 if scale > 1 else 3
        text = f"{value:.{digits}f}{ci_text}"
        if floor is not None:
            text += f"  floor {floor:g}{' — BELOW' if below else ''}"
        if row.get("note"):
            text += f"  {row['note']}"
        body.append(
            f'<g class="row" {_attrs(metric, False, value=f"{value:.6g}", group=group)}>{name}'
            + "".join(parts)
            + f'<text x="{_TEXT_X}" y="{mid + 4:.1f}">{_e(text)}</text>'
            f"<title>{_e(row['label'])}: {_e(text)}</title></g>"
        )
    bottom = top + len(rows) * _ROW
    return _svg(chart, _WIDTH, bottom + 24, _axis(top, bottom) + "".join(body), label)


def _metric_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    metrics = _block(report, "metrics")
    undefined = _block(report, "undefined")
    floors = _block(report, "thresholds")
    rows: list[dict[str, Any]] = []
    rate = _block(report, "pass_rate")
    rows.append(
        {
            "metric": "pass_rate",
            "label": "Pass rate",
            "value": rate.get("rate"),
            "interval": rate.get("interval"),
            "reason": _block(rate, "undefined").get("rate", NO_TRIALS),
            "note": f"{rate.get('passed')}/{rate.get('n')}",
        }
    )
    for name in LIVE_METRICS:
        counts = proportion_counts(report, name)
        ci = None if counts is None else wilson_interval(counts[0], counts[1])
        rows.append(
            {
                "metric": name,
                "label": METRIC_WORDS[name][0],
                "value": metrics.get(name),
                "max": TI_MAX if name == TI else 1.0,
                "interval": ci,
                "floor": floors.get(name),
                "reason": undefined.get(name, NOT_MEASURED),
                "note": "" if counts is None else f"{counts[0]}/{counts[1]}",
            }
        )
    gap = _block(report, "reliability_gap")
    gu = _block(gap, "undefined")
    for key, label, n in (
        ("c_nom", "C_nom (no faults)", gap.get("nominal_n")),
        ("r_op", "R_op (under faults)", gap.get("faulted_n")),
    ):
        rows.append(
            {
                "metric": key,
                "label": label,
                "value": gap.get(key),
                "interval": gap.get(f"{key}_interval"),
                "reason": gu.get(key, NOT_MEASURED),
                "note": f"n={n}",
            }
        )
    return rows


def _fault_type_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, b in sorted(_block(_block(report, "breakdowns"), "fault_type").items()):
        if not isinstance(b, Mapping):
            continue
        rows.append(
            {
                "metric": "pass_rate",
                "group": f"fault_type:{name}",
                "label": "no fault (nominal)" if name == "none" else name.replace("_", " "),
                "value": b.get("rate"),
                "interval": b.get("interval"),
                "reason": _block(b, "undefined").get("rate", NO_TRIALS),
                "note": f"{b.get('passed')}/{b.get('n')}",
            }
        )
    return rows


def _gap_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Reliability gap overall and per domain: C_nom, R_op and their difference."""
    gap = _block(report, "reliability_gap")
    rows = [
        {
            "label": "all domains",
            "c_nom": gap.get("c_nom"),
            "r_op": gap.get("r_op"),
            "c_ci": gap.get("c_nom_interval"),
            "r_ci": gap.get("r_op_interval"),
            "gap": gap.get("gap"),
            "gap_ci": gap.get("interval"),
            "significant": gap.get("significant"),
            "p": gap.get("p"),
            "undefined": dict(_block(gap, "undefined")),
            "n": (gap.get("nominal_n"), gap.get("faulted_n")),
        }
    ]
    by_domain: dict[str, tuple[list[bool], list[bool]]] = {}
    for t in scored_trials(report):
        verdict = _block(t, "verdict")
        nominal, faulted = by_domain.setdefault(str(t.get("domain")), ([], []))
        passed = t.get("outcome") == OUTCOME_PASS
        if t.get("is_nominal") is True:
            nominal.append(passed)
        elif verdict.get("faulted") is True:
            faulted.append(passed)
    for domain in sorted(by_domain):
        nominal, faulted = by_domain[domain]
        rg = reliability_gap(sum(nominal), len(nominal), sum(faulted), len(faulted))
        c_ci = wilson_interval(sum(nominal), len(nominal))
        r_ci = wilson_interval(sum(faulted), len(faulted))
        rows.append(
            {
                "label": domain,
                "c_nom": rg.c_nom,
                "r_op": rg.r_op,
                "c_ci": c_ci,
                "r_ci": r_ci,
                "gap": rg.gap,
                "gap_ci": None,  # per-domain samples are tiny: their whiskers speak, with p
                "significant": rg.significant,
                "p": rg.p_value,
                "undefined": {("p" if k == "p_value" else k): v for k, v in rg.undefined.items()},
                "n": (len(nominal), len(faulted)),
            }
        )
    return rows


def _gap_chart(report: Mapping[str, Any]) -> str:
    rows = _gap_rows(report)
    top = 8
    body: list[str] = []
    for i, row in enumerate(rows):
        y = top + i * _ROW
        mid = y + _ROW / 2
        domain = str(row["label"])
        und = row["undefined"]
        body.append(
            f'<text x="{_LABEL_W - 8}" y="{mid + 4:.1f}" text-anchor="end">{_e(domain)}</text>'
        )
        xs: dict[str, float] = {}
        for key, ci_key, cls, dy in (("c_nom", "c_ci", "pa", -4), ("r_op", "r_ci", "pb", 4)):
            value = _number(row[key])
            if value is None:
                continue
            x = _LABEL_W + _PLOT_W * value
            xs[key] = x
            ci = row[ci_key]
            whisker = ""
            if isinstance(ci, (list, tuple)) and len(ci) == 2:
                lo, hi = (_LABEL_W + _PLOT_W * float(c) for c in ci)
                whisker = (
                    f'<line class="whisker" x1="{lo:.2f}" y1="{mid + dy:.1f}" x2="{hi:.2f}" '
                    f'y2="{mid + dy:.1f}" stroke-opacity="0.45"/>'
                )
            body.append(
                f"<g {_attrs(key, False, value=f'{value:.6g}', group=f'domain:{domain}')}>{whisker}"
                f'<circle class="{cls}" cx="{x:.2f}" cy="{mid + dy:.1f}" r="5"/>'
                f"<title>{_e(key)} {value:.3f} ({_e(domain)})</title></g>"
            )
        gap = _number(row["gap"])
        if gap is None:
            missing = [k for k in ("c_nom", "r_op") if _number(row[k]) is None]
            reason = str(und.get("gap") or und.get(missing[0] if missing else "gap", NOT_MEASURED))
            words = REASON_WORDS.get(reason, "")
            body.append(
                f"<g {_attrs('gap', True, reason=reason, group=f'domain:{domain}')}>"
                f'<text class="undef" x="{_TEXT_X}" y="{mid + 4:.1f}">gap {_e(_undef_text(reason))}'
                f"{' — ' + _e(words) if words else ''}</text></g>"
            )
        else:
            ci = row["gap_ci"]
            p = _number(row["p"])
            if isinstance(ci, (list, tuple)):
                lo, hi = (max(-100.0, min(100.0, 100 * float(c))) for c in ci)
                ci_text = f" [{lo:+.0f}, {hi:+.0f}]"
            else:
                ci_text = "" if p is None else f", p {p:.2g}"
            sig = row["significant"]
            sig_text = "" if sig is None else (" significant" if sig else " not significant")
            nn, fn = row["n"]
            body.append(
                f"<g {_attrs('gap', False, value=f'{gap:.6g}', group=f'domain:{domain}')}>"
                f'<line class="axis" x1="{xs["c_nom"]:.2f}" y1="{mid:.1f}" x2="{xs["r_op"]:.2f}" '
                f'y2="{mid:.1f}" stroke-dasharray="2 2"/>'
                f'<text x="{_TEXT_X}" y="{mid + 4:.1f}">gap {100 * gap:+.0f} pts{_e(ci_text)}{_e(sig_text)}'
                f" (n {_e(nn)}/{_e(fn)})</text></g>"
            )
    bottom = top + len(rows) * _ROW
    return _svg(
        "gap_by_domain",
        _WIDTH,
        bottom + 24,
        _axis(top, bottom) + "".join(body),
        "Pass rate without faults (C_nom) and under faults (R_op) per domain",
    )


def _severity_chart(report: Mapping[str, Any]) -> str:
    sev = _block(report, "severity")
    hist = _block(sev, "histogram")
    if not scored_trials(report):
        body = (
            f'<g {_attrs("severity", True, reason=NO_TRIALS)}><text class="undef" x="10" y="24">'
            f"severity {_e(_undef_text(NO_TRIALS))} — {_e(REASON_WORDS[NO_TRIALS])}</text></g>"
        )
        return _svg("severity", _WIDTH, 40, body, "Severity of failed trials")
    counts = [int(hist.get(s, 0) or 0) for s in _SEVERITY_ORDER]
    top_count = max(max(counts), 1)
    plot_h, base, col = 150, 175, 150
    body_parts = [f'<line class="axis" x1="40" y1="{base}" x2="{40 + col * 5}" y2="{base}"/>']
    for i, (name, count) in enumerate(zip(_SEVERITY_ORDER, counts, strict=True)):
        x = 40 + i * col + 30
        h = plot_h * count / top_count
        body_parts.append(
            f"<g {_attrs('severity', False, value=count, group=name)}>"
            f'<rect class="sev" x="{x}" y="{base - h:.2f}" width="{col - 60}" height="{h:.2f}"/>'
            f'<text x="{x + (col - 60) / 2}" y="{base - h - 5:.2f}" text-anchor="middle">{count}</text>'
            f"<title>{_e(name)}: {count} trial(s), weight {SEVERITY_WEIGHTS[name]}/5</title></g>"
            f'<text x="{x + (col - 60) / 2}" y="{base + 16}" text-anchor="middle">'
            f"{_e(name.replace('_', ' ').replace('privacy or security breach', 'security breach'))}</text>"
            f'<text x="{x + (col - 60) / 2}" y="{base + 30}" text-anchor="middle" class="muted">'
            f"weight {SEVERITY_WEIGHTS[name]}/5</text>"
        )
    return _svg(
        "severity", _WIDTH, base + 40, "".join(body_parts), "Failed trials by severity class"
    )


def _line_chart(
    chart: str,
    series: Sequence[tuple[str, str, Sequence[tuple[int, float | None, str | None]], str]],
    *,
    x_label: str,
    x_values: Sequence[int],
    markers: Sequence[int] = (),
    group: str | None = None,
    label: str,
) -> str:
    """Lines over integer x on 0–1, broken at undefined points; undefined runs listed as text.

    ``series``: (metric, legend, [(x, y or None, reason)], colour).
    """
    left, plot_w, top, plot_h = 50, 560, 10, 150
    xs = list(x_values) or [1]
    x_min, x_max = min(xs), max(xs)

    def px(x: int) -> float:
        if x_max == x_min:
            return left + plot_w / 2
        return left + plot_w * (x - x_min) / (x_max - x_min)

    def py(y: float) -> float:
        return top + plot_h * (1.0 - max(0.0, min(y, 1.0)))

    parts: list[str] = []
    for i in range(5):
        gy = top + plot_h * i / 4
        parts.append(
            f'<line class="grid" x1="{left}" y1="{gy:.1f}" x2="{left + plot_w}" y2="{gy:.1f}"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">{1 - i / 4:g}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}"/>'
    )
    step = max(1, math.ceil(len(xs) / 15))
    for x in xs[::step]:
        parts.append(
            f'<text x="{px(x):.1f}" y="{top + plot_h + 14}" text-anchor="middle">{x}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{top + plot_h + 30}" text-anchor="middle" class="muted">{_e(x_label)}</text>'
    )
    for m in markers:
        parts.append(
            f'<g {_attrs("fault", False, step=m, group=group)}><line class="fault" x1="{px(m):.1f}" '
            f'y1="{top}" x2="{px(m):.1f}" y2="{top + plot_h}"/><title>fault at step {m}</title></g>'
        )
    notes: list[str] = []
    for metric, legend, points, colour in series:
        segment: list[tuple[int, float]] = []
        runs: list[tuple[int, int, str]] = []

        def flush(seg: list[tuple[int, float]], metric: str = metric, colour: str = colour) -> None:
            if len(seg) >= 2:
                pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in seg)
                parts.append(
                    f'<polyline class="seg" {_attrs(metric, False, group=group)} '
                    f'stroke="{colour}" points="{pts}"/>'
                )

        for x, y, reason in points:
            if y is None:
                flush(segment)
                segment = []
                code = reason or NOT_MEASURED
                if runs and runs[-1][2] == code and runs[-1][1] == x - 1:
                    runs[-1] = (runs[-1][0], x, code)
                else:
                    runs.append((x, x, code))
                continue
            segment.append((x, y))
            parts.append(
                f"<circle {_attrs(metric, False, value=f'{y:.6g}', step=x, group=group)} "
                f'cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}">'
                f"<title>{_e(legend)} at {x}: {y:.3f}</title></circle>"
            )
        flush(segment)
        for a, b, code in runs:
            where = f"{a}" if a == b else f"{a}–{b}"
            span = (
                f"{x_label}{'' if a == b else 's'} {where}"
                if x_label == "step"
                else (f"{x_label} = {where}")
            )
            notes.append(
                f"<g {_attrs(metric, True, reason=code, group=group, steps=f'{a}-{b}')}>"
                f'<text class="undef" x="{left + plot_w + 14}" y="__Y__">{_e(legend)} '
                f"{_e(_undef_text(code))} at {_e(span)}</text></g>"
            )
    legend_y = top + 8
    for _metric, legend, _points, colour in series:
        parts.append(
            f'<rect x="{left + plot_w + 14}" y="{legend_y - 9}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{left + plot_w + 28}" y="{legend_y}">{_e(legend)}</text>'
        )
        legend_y += 16
    for note in notes:
        legend_y += 16
        parts.append(note.replace("__Y__", f"{legend_y}"))
    height = max(top + plot_h + 40, legend_y + 12)
    return _svg(chart, _WIDTH, height, "".join(parts), label)


def _pass_k_chart(report: Mapping[str, Any]) -> str:
    series = []
    ks: list[int] = []
    for key, legend, colour in (
        ("pass_hat_k", "pass^k (all k tries succeed)", "#3b6ea5"),
        ("pass_at_k", "pass@k (at least one of k succeeds)", "#9aa3ad"),
    ):
        entries = report.get(key)
        points: list[tuple[int, float | None, str | None]] = []
        for e in entries if isinstance(entries, Sequence) else ():
            if not isinstance(e, Mapping) or not isinstance(e.get("k"), int):
                continue
            value = _number(e.get("value"))
            points.append((int(e["k"]), value, _block(e, "undefined").get("value")))
            ks.append(int(e["k"]))
        series.append((key, legend, points, colour))
    return _line_chart(
        "pass_hat_k",
        series,
        x_label="k",
        x_values=sorted(set(ks)),
        label="pass^k and pass@k over k",
    )


def _timeline_chart(key: str, rows: Sequence[Mapping[str, Any]]) -> str:
    series = []
    for name in (PEI, FRR, IRS, TI):
        legend = "TI / 5" if name == TI else name.upper()
        points: list[tuple[int, float | None, str | None]] = []
        for r in rows:
            value = _number(r["metrics"].get(name))
            if value is not None and name == TI:
                value /= TI_MAX
            points.append((int(r["step"]), value, r["undefined"].get(name)))
        series.append((name, legend, points, _COLORS[name]))
    return _line_chart(
        "timeline",
        series,
        x_label="step",
        x_values=[int(r["step"]) for r in rows],
        markers=[int(r["step"]) for r in rows if r.get("had_fault")],
        group=key,
        label=f"Live metrics after each step of trial {key}",
    )


# --------------------------------------------------------------------------- text sections
def _verdict_sentence(verdict: Any, problems: int) -> str:
    if verdict == "UNSAFE":
        return f"Not safe to release: {problems} problem(s) found."
    if verdict == "INSUFFICIENT_DATA":
        return "Cannot decide yet: something required was not measured."
    if verdict == "SAFE":
        return "Safe by every floor we check."
    return f"Verdict {verdict}."


def _what_failed(report: Mapping[str, Any], decision: RunVerdict) -> list[str]:
    items: list[str] = []
    sec = security_gate(report)
    n_scored = len(scored_trials(report))
    if sec.status == SECURITY_FAILED:
        items.append(
            f"<b>Security breach:</b> {_e(sec.reason)} out of {_e(n_scored)} scored trials"
            + (
                f"; {_e(sec.injection_trials)} trial(s) carried a prompt injection."
                if sec.injection_trials
                else "."
            )
        )
    metrics = _block(report, "metrics")
    floors = _block(report, "thresholds")
    undefined = _block(report, "undefined")
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
    for sc in report.get("scenarios") or ():
        if isinstance(sc, Mapping) and sc.get("measured") is False:
            items.append(
                f"<span data-scenario='{_e(sc.get('scenario_index'))}' class='undef'>Scenario "
                f"{_e(sc.get('scenario_index'))} ({_e(sc.get('fault_type'))}, "
                f"{_e(sc.get('domain'))}): not measured — "
                f"{_e(REASON_WORDS.get(V.NO_FAULT_DELIVERED, ''))}.</span>"
            )
    if decision.fix is not None:
        items.append(f"<b>How to measure it:</b> {_e(decision.fix)}.")
    unsupported = _block(report, "evidence").get("claims_unsupported") or []
    if unsupported:
        items.append(
            "The agent claimed "
            + ", ".join(f"<code>{_e(c)}</code>" for c in unsupported)
            + " but its trace did not support the claim."
        )
    if not items:
        items.append("No floor failed and no forbidden tool ran.")
    by_fault = _block(_block(report, "breakdowns"), "fault_type")
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


def _how_sure(report: Mapping[str, Any]) -> list[str]:
    items: list[str] = []
    rate = _block(report, "pass_rate")
    r = _number(rate.get("rate"))
    if r is None:
        items.append(f"Pass rate {_undef_html(_block(rate, 'undefined').get('rate'))}.")
    else:
        items.append(
            f"{_e(rate.get('passed'))} of {_e(rate.get('n'))} scored trials passed ({100 * r:.0f}%). "
            f"The true pass rate is likely between {_e(_ci_pct(rate.get('interval')))} "
            "(95% Wilson interval)."
        )
    gap = _block(report, "reliability_gap")
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
    counts = proportion_counts(report, FRR)
    if counts is not None:
        ci = wilson_interval(*counts)
        if ci is not None:
            items.append(
                f"FRR rests on {_e(counts[1])} faulted trials: 95% interval {ci[0]:.2f}–{ci[1]:.2f}."
            )
    ev = _block(report, "evidence")
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
    trace = _block(report, "traceability")
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
    metrics = _block(report, "metrics")
    if _number(metrics.get(CSI)) is None:
        reason = _block(report, "undefined").get(CSI)
        items.append(
            f"Consistency across runs (CSI) is {_undef_html(reason)}"
            + (": run the same battery again to measure it." if reason == V.SINGLE_RUN else ".")
        )
    iso = _block(report, "isolation")
    if iso and iso.get("isolated") is False:
        items.append(f"{_e(iso.get('note'))}.")
    return items


def _scores_section(report: Mapping[str, Any]) -> str:
    cap = capability_score(report)
    sec = security_gate(report)
    eff = efficiency(report)
    rows = []
    for name in CAPABILITY_COMPONENTS:
        value = cap.components.get(name)
        cell = _fmt(value, cap.undefined.get(name))
        rows.append(
            f'<tr><td>{_e(COMPONENT_LABELS[name])}</td><td class="num">{cap.weights[name]:g}</td>'
            f'<td class="num" {_attrs(f"capability:{name}", value is None, reason=cap.undefined.get(name))}>{cell}</td></tr>'
        )
    score_html = (
        _undef_html(cap.undefined.get("value"))
        if cap.value is None
        else f"<b>{cap.value:.0f}</b> / 100"
    )
    pill = {SECURITY_PASSED: "ok", SECURITY_FAILED: "bad"}.get(sec.status, "")
    eff_rows = []
    for name in EFFICIENCY_FIGURES:
        v = eff["figures"][name]
        eff_rows.append(
            f"<tr><td>{_e(name.replace('_', ' '))}</td>"
            f'<td class="num" {_attrs(f"efficiency:{name}", v is None, reason=eff["undefined"].get(name))}>'
            f"{_fmt(v, eff['undefined'].get(name), 2)}</td></tr>"
        )
    return (
        '<div class="cols"><div>'
        f"<p>Capability score {score_html} <span class='muted'>({_e(cap.version)}; weights fixed "
        f"before the run, source: {_e(cap.weights_source)})</span></p>"
        "<table><tr><th>component (0–1)</th><th>weight</th><th>value</th></tr>"
        + "".join(rows)
        + "</table>"
        f"<p>Security gate <span class='pill {pill}'>{_e(sec.status.replace('_', ' '))}</span> — "
        f"{_e(sec.reason)}. <span class='muted'>Shown beside the capability score, never "
        "averaged into it.</span></p></div><div>"
        f"<p>Efficiency per success ({_e(eff['successes'])} successes)</p>"
        "<table><tr><th>figure</th><th>value</th></tr>"
        + "".join(eff_rows)
        + "</table>"
        + "".join(f"<p class='muted'>{_e(n)}</p>" for n in eff["notes"])
        + "</div></div>"
    )


def _trace_items(events: Sequence[Any], forbidden: Sequence[str]) -> list[str]:
    items: list[str] = []
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
        items.append(f'<li class="ev-{_e(cls)}">{_e(text)}</li>')
    return items


def _select_timeline_trials(report: Mapping[str, Any], count: int) -> list[Mapping[str, Any]]:
    trials = [t for t in scored_trials(report) if t.get("trial_key")]
    by_key = {str(t["trial_key"]): t for t in trials}
    chosen: list[str] = []
    for tail in report.get("tail") or ():
        key = str(tail.get("trial_key"))
        if key in by_key and key not in chosen:
            chosen.append(key)
    for t in trials:
        if _block(t, "verdict").get("faulted") is True and str(t["trial_key"]) not in chosen:
            chosen.append(str(t["trial_key"]))
    return [by_key[k] for k in chosen[: max(count, 0)]]


def _timelines_section(report: Mapping[str, Any], traces: TraceSource | None, count: int) -> str:
    run_id = report.get("run_id")
    if traces is None or run_id is None:
        return (
            f'<p {_attrs("timeline", True, reason=NOT_MEASURED)} class="undef">Timelines '
            f"undefined ({NOT_MEASURED}) — they are recomputed from stored events: open the run "
            "from its store (<code>hbeval report RUN_ID --db URL --html FILE</code>).</p>"
        )
    out: list[str] = []
    for trial in _select_timeline_trials(report, count):
        key = str(trial["trial_key"])
        events = traces(str(run_id), key)
        head = (
            f"<h4>{_e(key)} · task {_e(trial.get('task_id'))} · {_e(trial.get('domain'))} · "
            f"{_e(trial.get('fault_type'))} · outcome {_e(trial.get('outcome'))}</h4>"
        )
        if not events:
            out.append(
                head
                + f'<p class="undef" {_attrs("timeline", True, reason=NOT_MEASURED, group=key)}>'
                f"timeline undefined ({NOT_MEASURED}) — no stored events for this trial</p>"
            )
            continue
        rows = trial_timeline(events)
        if not rows:
            out.append(
                head + f'<p class="undef" {_attrs("timeline", True, reason=V.NO_STEPS, group=key)}>'
                f"timeline {_e(_undef_text(V.NO_STEPS))} — {_e(REASON_WORDS[V.NO_STEPS])}</p>"
            )
            continue
        final = _block(_block(trial, "verdict"), "metrics")
        last = rows[-1]["metrics"]
        same = all(
            (final.get(m) is None) == (last.get(m) is None)
            and (final.get(m) is None or abs(float(final[m]) - float(last[m] or 0)) < 1e-9)
            for m in (PEI, FRR, IRS, TI)
        )
        check = (
            "final step matches the trial's scored metrics"
            if same
            else "final step differs from the trial's scored metrics (different derivation?)"
        )
        out.append(
            head
            + _timeline_chart(key, rows)
            + f"<p class='muted'>{len(rows)} steps; dashed red lines mark steps that met a "
            f"fault; {check}.</p>"
        )
    return "".join(out) or "<p class='muted'>No trial to show.</p>"


def _tail_section(report: Mapping[str, Any], traces: TraceSource | None) -> str:
    tail = [t for t in report.get("tail") or () if isinstance(t, Mapping)]
    if not tail:
        return "<p>No failed trial: the tail is empty.</p>"
    trials = {str(t.get("trial_key")): t for t in scored_trials(report)}
    run_id = report.get("run_id")
    out: list[str] = []
    for i, t in enumerate(tail):
        key = str(t.get("trial_key"))
        trial = trials.get(key, {})
        v = _block(trial, "verdict")
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
            f"{f.get('mode')} into {f.get('target')} ({'delivered' if f.get('delivered') else 'not delivered' if f.get('delivered') is False else 'delivery unknown'})"
            for f in v.get("faults") or ()
            if isinstance(f, Mapping)
        )
        events = traces(str(run_id), key) if traces is not None and run_id is not None else None
        if events:
            trace = (
                '<ol class="trace">'
                + "".join(
                    _trace_items(events, [str(x) for x in v.get("forbidden_tools_run") or ()])
                )
                + "</ol>"
            )
        else:
            trace = (
                f'<p class="undef" {_attrs("trace", True, reason=NOT_MEASURED, group=key)}>trace '
                f"undefined ({NOT_MEASURED}) — events live in the store; open the run from it to "
                "see them.</p>"
            )
        reasons = "; ".join(str(r) for r in t.get("severity_reasons") or ())
        out.append(
            f"<details{' open' if i == 0 else ''}><summary>{_e(key)} · {_e(t.get('severity'))} · "
            f"task {_e(t.get('task_id'))} · {_e(t.get('domain'))} · fault {_e(t.get('fault_type'))} "
            f"· outcome {_e(t.get('outcome'))}</summary>"
            f"<p><b>Why it is bad:</b> {_e(reasons or '—')}<br><b>Faults:</b> {_e(faults or 'none')}"
            f"<br><b>Signals:</b> {_e(sig_text)}<br><b>Rule violations:</b> "
            f"{_e(', '.join(str(x) for x in v.get('constraint_violations') or ()) or 'none')}</p>"
            f"{trace}</details>"
        )
    return "".join(out)


def _provenance(report: Mapping[str, Any]) -> str:
    fps = _block(report, "fingerprints")
    versions = _block(report, "versions")
    run = _block(report, "run")
    ev = _block(report, "evidence")
    rows = [
        ("run id", report.get("run_id")),
        ("agent id", run.get("agent_id")),
        (
            "battery · seed · trials",
            f"{run.get('battery')} · {run.get('seed')} · {run.get('trials')}",
        ),
        ("methodology", run.get("methodology")),
        ("measurement fingerprint", fps.get("measurement")),
        ("battery spec fingerprint", fps.get("battery_spec")),
        ("plan fingerprint", fps.get("plan")),
        ("manifest hash", report.get("manifest_hash")),
        ("scoring · derivation", f"{versions.get('scoring')} · {versions.get('derive')}"),
        ("metric versions", json.dumps(report.get("metric_versions") or {}, sort_keys=True)),
        (
            "evidence",
            f"{ev.get('level')} · levels {json.dumps(ev.get('levels') or {}, sort_keys=True)}",
        ),
        ("isolation", _block(report, "isolation").get("note")),
        ("verification", report.get("verification")),
    ]
    return (
        "<table>"
        + "".join(f"<tr><th>{_e(k)}</th><td><code>{_e(v)}</code></td></tr>" for k, v in rows)
        + "</table>"
    )


def _report_section(
    index: int, label: str, report: Mapping[str, Any], traces: TraceSource | None, timelines: int
) -> str:
    run = _block(report, "run")
    decision = decide_verdict(report)
    verdict = decision.verdict
    what = _what_failed(report, decision)
    sure = _how_sure(report)
    cap = capability_score(report)
    sec = security_gate(report)
    problems = sum(1 for c in decision.checks if c.passed is False)
    anchor = f"r{index}"
    return (
        f'<section id="{anchor}" data-report="{_e(label)}">'
        f"<h2>{_e(label)} <span class='muted'>· agent {_e(run.get('agent_id'))} · run "
        f"{_e(report.get('run_id'))}</span></h2>"
        f'<div class="headline v-{_e(verdict)}"><div class="big">{_e(verdict)} — '
        f"{_e(_verdict_sentence(verdict, problems))}</div>"
        f"<div>{_e(score_headline(cap, sec))}.</div></div>"
        '<div class="cols"><div><h3>What failed</h3><ul>'
        + "".join(f"<li>{x}</li>" for x in what)
        + "</ul></div><div><h3>How sure we are</h3><ul>"
        + "".join(f"<li>{x}</li>" for x in sure)
        + "</ul></div></div>"
        "<h3>Metrics against their floors</h3><p class='muted'>Bars are point estimates; black "
        "whiskers are 95% Wilson intervals (for proportions); dashed red ticks are floors. "
        "TI is drawn on its 0–5 scale.</p>"
        + _bar_rows("metrics", _metric_rows(report), "Metrics with intervals and floors")
        + "<h3>Where it breaks: pass rate by fault type</h3>"
        + _bar_rows("fault_types", _fault_type_rows(report), "Pass rate by fault type")
        + "<h3>Reliability gap per domain</h3><p class='legend'><span><i class='sw' "
        "style='background:var(--a)'></i>C_nom: pass rate without faults</span><span><i "
        "class='sw' style='background:var(--b)'></i>R_op: pass rate under faults</span></p>"
        + _gap_chart(report)
        + "<h3>Severity of failed trials</h3>"
        + _severity_chart(report)
        + f"<p class='muted'>Severity-weighted failure rate "
        f"{_fmt(_number(_block(report, 'severity').get('weighted_failure_rate')), _block(_block(report, 'severity'), 'undefined').get('weighted_failure_rate'))}.</p>"
        + "<h3>pass^k: does it succeed every time?</h3><p class='muted'>pass^k is the chance that "
        "all k tries of a task succeed; pass@k that at least one does. A falling pass^k means "
        "the agent is unreliable even when it can do the task.</p>"
        + _pass_k_chart(report)
        + "<h3>Scores beside the metrics</h3>"
        + _scores_section(report)
        + "<h3>Live metrics over the steps of selected trials</h3><p class='muted'>Recomputed "
        "from stored events with the live monitor. Lines break where a metric is undefined; "
        "they never drop to zero for it.</p>"
        + _timelines_section(report, traces, timelines)
        + "<h3>The worst trials and their traces</h3>"
        + _tail_section(report, traces)
        + "<h3>What produced these numbers</h3>"
        + _provenance(report)
        + "</section>"
    )


def _side_by_side(reports: Mapping[str, Mapping[str, Any]]) -> str:
    labels = list(reports)

    def cell(r: Mapping[str, Any], name: str) -> str:
        metrics = _block(r, "metrics")
        return _fmt(_number(metrics.get(name)), _block(r, "undefined").get(name))

    rows: list[tuple[str, list[str]]] = [
        ("verdict", [_e(decide_verdict(r).verdict) for r in reports.values()]),
        (
            "scores",
            [_e(score_headline(capability_score(r), security_gate(r))) for r in reports.values()],
        ),
        (
            "pass rate (95% interval)",
            [
                f"{_pct(_number(_block(r, 'pass_rate').get('rate')), NO_TRIALS)} "
                f"({_e(_ci_pct(_block(r, 'pass_rate').get('interval')))})"
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
                    _fmt(
                        _number(_block(r, "reliability_gap").get(key)),
                        _block(_block(r, "reliability_gap"), "undefined").get(key),
                    )
                    for r in reports.values()
                ],
            )
        )
    head = "".join(f'<th><a href="#r{i}">{_e(lb)}</a></th>' for i, lb in enumerate(labels))
    body = "".join(
        f"<tr><td>{_e(name)}</td>" + "".join(f'<td class="num">{c}</td>' for c in cells) + "</tr>"
        for name, cells in rows
    )
    compare = ""
    if len(labels) == 2:
        try:
            cmp = compare_reports(
                reports[labels[0]], reports[labels[1]], labels=(labels[0], labels[1])
            )
            compare = f"<p><b>Paired per task:</b> {_e(cmp['summary'])}.</p>"
        except CompareRefused as exc:
            compare = f"<p class='muted'>{_e(exc)}</p>"
    return (
        '<section id="side-by-side"><h2>Side by side</h2>'
        f"<table><tr><th>figure</th>{head}</tr>{body}</table>{compare}</section>"
    )


def _glossary() -> str:
    items = [
        *(f"<dt>{_e(t)}</dt><dd>{_e(m)}.</dd>" for t, m in METRIC_WORDS.values()),
        "<dt>C_nom / R_op</dt><dd>Pass rate without faults / under injected faults; their "
        "difference is the reliability gap.</dd>",
        "<dt>95% interval</dt><dd>The range the true rate likely lies in, given how many "
        "trials ran (Wilson score interval). Few trials mean wide intervals.</dd>",
        "<dt>undefined (reason)</dt><dd>A figure that could not be computed — never shown as 0. "
        "The reason code says why.</dd>",
        "<dt>Evidence E0/E1/E2</dt><dd>How much of what the agent did its trace proves: E2 "
        "complete, E1 partial, E0 response text only.</dd>",
        "<dt>Measurement fingerprint</dt><dd>Identifies the battery, fault plans, seed, trials "
        "and scoring; runs are only compared under the same fingerprint.</dd>",
    ]
    return '<section id="glossary"><h2>Glossary</h2><dl>' + "".join(items) + "</dl></section>"


# --------------------------------------------------------------------------- public
def render_html(
    reports: Mapping[str, Mapping[str, Any]],
    *,
    traces: TraceSource | None = None,
    timelines: int = 3,
    title: str | None = None,
) -> str:
    """The self-contained HTML page for one or more reports (``{label: report}``, in order).

    ``traces`` gives stored events for timelines and tail traces; ``timelines`` caps how many
    trials per report get a live-metric timeline (the tail first, then faulted trials).
    """
    if not reports:
        raise ValueError("render_html needs at least one report")
    labels = list(reports)
    heading = title or ("hbeval report · " + " vs ".join(labels))
    nav = "".join(f'<a href="#r{i}">{_e(lb)}</a>' for i, lb in enumerate(labels))
    if len(labels) > 1:
        nav = '<a href="#side-by-side">side by side</a>' + nav
    sections = "".join(
        _report_section(i, lb, reports[lb], traces, timelines) for i, lb in enumerate(labels)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CONTENT_SECURITY_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(heading)}</title><style>{_STYLE}</style></head><body><main>"
        f"<h1>{_e(heading)}</h1><p class='lead'>How these agents behave when tools fail, "
        "answers are corrupted or instructions are injected — with how sure each number is. "
        "Undefined figures say why; they are never drawn as zero.</p>"
        f"<nav>{nav}<a href='#glossary'>glossary</a></nav>"
        + (_side_by_side(reports) if len(labels) > 1 else "")
        + sections
        + _glossary()
        + f"<footer>Generated by hbeval {_e(__version__)} from hbeval-report/1. This page is "
        "self-contained: it loads nothing from the network.</footer></main></body></html>\n"
    )


def write_html(
    path: str | Path,
    reports: Mapping[str, Mapping[str, Any]],
    **kwargs: Any,
) -> Path:
    """Render ``reports`` with ``render_html(**kwargs)`` and write the page to ``path`` (UTF-8)."""
    target = Path(path)
    if target.parent != Path():
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(reports, **kwargs), encoding="utf-8")
    return target
