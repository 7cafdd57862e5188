"""Parts of the HTML report that are not charts: words for reason codes and metrics, the
page's style and Content-Security-Policy, escaping and formatting helpers, and the live-metric
timelines recomputed from stored events."""

from __future__ import annotations

import html as _html
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from hbeval_core import vocab as V
from hbeval_core.vocab import (
    CSI,
    FRR,
    IRS,
    NOT_MEASURED,
    PEI,
    SEVERITY_WEIGHTS,
    TI,
)

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
    V.DELIVERY_UNOBSERVED: (
        "faults were injected but no model call was recorded, so whether they reached the "
        "agent cannot be seen: not measured"
    ),
    V.NO_INJECTION_TRIAL: "no prompt-injection trial",
    V.NO_DEFINED_VALUE: "every input was itself undefined",
    V.NO_EXPECTED_CALLS: "the task declares no expected calls",
    V.SINGLE_TASK: "only one task, so no spread",
    V.INSUFFICIENT_TASKS: "too few shared tasks for a paired test (at least 6)",
    V.NO_SUCCESS_LABEL: "the recording says nothing about success",
    V.NO_MODEL_EVENTS: "no model call was recorded, so traceability cannot be observed",
    V.SINGLE_TRIAL: "every scenario ran once: run more trials per scenario to measure it",
    V.NO_REPEATED_SUCCESS: "no scenario succeeded twice, so no trajectories to compare",
    V.NO_VARIATION: "every outcome is the same, so their correlation cannot be measured",
    V.NO_INJECTED_FAULT: "no fault was injected; the recording's own errors are shown apart",
    V.TEXT_UNOBSERVED: "the framework's provider discarded the reply text before any hook could read it",
    V.NO_REQUIRED_KEYWORDS: "the task lists no required keywords, so keyword coverage is undefined",
    V.DELIVERY_UNRECEIPTED: (
        "latency and crash faults leave no receipt that the agent met them: left out of every "
        "figure, not measured"
    ),
}
"""Plain words for each undefined reason code, shown beside the code."""

PEI_REPLAN_NOTE: Final = (
    "a re-plan counts as proportionate only after a failed step: re-planning after an "
    "injection or an altered result (a call that worked) lowers PEI, so on adversarial "
    "scenarios a careful agent can score below a naive one; read it beside IRS"
)
"""PEI's documented behaviour on re-planning after an injection (docs/validity.md), shown
beside the figure in the HTML report."""

PEI_REPLAN_SHORT: Final = (
    "re-planning after an injection or altered result (a call that worked) lowers PEI; "
    "read it beside IRS"
)
"""The same, as the terminal summary's note beside PEI."""

METRIC_WORDS: Final[Mapping[str, tuple[str, str]]] = {
    PEI: (
        "Planning efficiency (PEI)",
        f"how economically the agent re-plans around faults ({PEI_REPLAN_NOTE})",
    ),
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
p.warning{border-left:8px solid var(--warn);background:#fdf6e3;padding:10px 16px;border-radius:6px}
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
    from hbeval_core.live.monitor import Monitor

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
