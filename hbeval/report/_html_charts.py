"""The HTML report's inline SVG charts; each chart helper returns markup it built from escaped
values (words, styles and helpers are in ``_html_words``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hbeval_core.metrics import clustered_difference, reliability_gap
from hbeval_core.vocab import (
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

from ..scoring._fold import _clustered_pass
from ..scoring._uncertainty import rate_interval
from ._html_words import (
    _COLORS,
    _SEVERITY_ORDER,
    METRIC_WORDS,
    REASON_WORDS,
    _attrs,
    _e,
    _svg,
    _undef_text,
)
from .scores import (
    _block,
    _number,
    proportion_counts,
    scored_records,
    section,
)

if TYPE_CHECKING:
    from ..scoring import Report

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


def _metric_rows(report: Report) -> list[dict[str, Any]]:
    metrics = section(report, "metrics")
    undefined = section(report, "undefined")
    floors = section(report, "thresholds")
    rows: list[dict[str, Any]] = []
    rate = section(report, "pass_rate")
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
        shown = rate_interval(report, name) if metrics.get(name) is not None else None
        ci = None if shown is None else shown.interval
        rows.append(
            {
                "metric": name,
                "label": METRIC_WORDS[name][0],
                "value": metrics.get(name),
                "max": TI_MAX if name == TI else 1.0,
                "interval": ci,
                "floor": floors.get(name),
                "reason": undefined.get(name, NOT_MEASURED),
                "note": ("" if counts is None else f"{counts[0]}/{counts[1]}")
                + ("" if shown is None else f" (effective n {shown.effective_n:.1f})"),
            }
        )
    gap = section(report, "reliability_gap")
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


def _fault_type_rows(report: Report) -> list[dict[str, Any]]:
    rows = []
    for name, b in sorted(_block(section(report, "breakdowns"), "fault_type").items()):
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


def _gap_rows(report: Report) -> list[dict[str, Any]]:
    """Reliability gap overall and per domain: C_nom, R_op and their difference."""
    gap = section(report, "reliability_gap")
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
    by_domain: dict[str, tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]] = {}
    for t in scored_records(report):
        verdict = _block(t, "verdict")
        nominal, faulted = by_domain.setdefault(str(t.get("domain")), ([], []))
        if t.get("is_nominal") is True:
            nominal.append(t)
        elif verdict.get("faulted") is True:
            faulted.append(t)
    for domain in sorted(by_domain):
        nominal, faulted = by_domain[domain]
        ns = sum(1 for t in nominal if t.get("outcome") == OUTCOME_PASS)
        fs = sum(1 for t in faulted if t.get("outcome") == OUTCOME_PASS)
        rg = reliability_gap(ns, len(nominal), fs, len(faulted))
        # Clustered by scenario, as every rate of the report.
        c_cr, r_cr = _clustered_pass(nominal, 0.95), _clustered_pass(faulted, 0.95)
        diff = clustered_difference(c_cr, r_cr)
        rows.append(
            {
                "label": domain,
                "c_nom": rg.c_nom,
                "r_op": rg.r_op,
                "c_ci": c_cr.interval,
                "r_ci": r_cr.interval,
                "gap": rg.gap,
                "gap_ci": None,  # per-domain samples are tiny: their whiskers speak, with p
                "significant": None
                if diff.interval is None or rg.gap is None
                else diff.interval[0] > 0.0,
                "p": diff.p_value if rg.gap is not None else None,
                "undefined": {("p" if k == "p_value" else k): v for k, v in rg.undefined.items()},
                "n": (len(nominal), len(faulted)),
            }
        )
    return rows


def _gap_chart(report: Report) -> str:
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


def _severity_chart(report: Report) -> str:
    sev = section(report, "severity")
    hist = _block(sev, "histogram")
    if not scored_records(report):
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
    # Long because: one SVG drawn top to bottom (grid, axis, fault markers, series, legend,
    # undefined runs); every part shares the px/py scale below, which is why this stays one function
    # (~100 lines).
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


def _pass_k_chart(report: Report) -> str:
    series = []
    ks: list[int] = []
    for key, entries, legend, colour in (
        ("pass_hat_k", report.pass_hat_k, "pass^k (all k tries succeed)", "#3b6ea5"),
        ("pass_at_k", report.pass_at_k, "pass@k (at least one of k succeeds)", "#9aa3ad"),
    ):
        points: list[tuple[int, float | None, str | None]] = []
        for e in entries:
            points.append((e.k, e.value, e.undefined.get("value")))
            ks.append(e.k)
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
