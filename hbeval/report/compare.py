"""Compare two runs of the same measurement, task by task: did B pass more often than A?

``compare_reports(a, b)`` refuses (:class:`CompareRefused`, exit 2 in ``hbeval compare``) unless
both reports carry the same measurement fingerprint, then pairs the runs per task
(``metrics.paired_comparison``): the mean per-task change in pass rate (B − A) with an exact
paired permutation test and a bootstrap interval (``insufficient data`` below
``MIN_PAIRED_TASKS`` shared tasks), the pooled two-proportion z test and Cohen's h, the same per
fault type and per domain, and the change in each HB-Eval metric.

**One exception to "never compare across fingerprints"**: two runs whose measurement
fingerprints differ *only in the seed* (same battery spec, battery kind, scenario count,
trials, scoring and derivation versions) are compared, since a different seed is what testing
robustness across seeds means. Their scenarios do not line up (the seed shuffles which task meets
which fault), so they are paired by (task, fault type) instead of by task; ``pairing`` says which
was used (``task`` or ``task_fault_type``).

**Conclusions survive noise.** Each fault type's paired p is adjusted for the number of fault
types compared (Benjamini–Hochberg, ``p_adjusted``). A row (and the overall change) is
``better`` or ``worse`` only when its paired interval excludes zero and its p (adjusted, for a
fault type) is below 1 − confidence; otherwise ``inconclusive``. Effect-size words (Cohen's h:
tiny, small, medium, large) are given only for a conclusion of better or worse.

Fault-dependent figures are compared only where both runs delivered faults: a fault type that
delivered no fault in either run (``fault_delivery.by_fault_type``) has every figure of its row
null with ``no_fault_delivered`` (``delivery_unobserved`` when that run recorded no model call,
so delivery could not be seen either way), and FRR and IRS are not compared while either run
has such a fault type; ``refused`` says which and why, in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from hbeval_core.metrics import PairedComparison, paired_comparison
from hbeval_core.metrics._compare import MIN_PAIRED_TASKS, benjamini_hochberg
from hbeval_core.vocab import (
    FRR,
    INSUFFICIENT_TASKS,
    IRS,
    LIVE_METRICS,
    NO_FAULT_DELIVERED,
    NOT_MEASURED,
    OUTCOME_PASS,
    SINGLE_TASK,
    UNDELIVERED_REASONS,
)

from ..scoring import fault_type_delivery
from ..scoring._delivery import undelivered_reason
from ..scoring._view import scored_records, section
from ._comparable import comparability_refusal
from .gate import measurement_fingerprint_of

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["COMPARE_FORMAT", "CompareRefused", "compare_reports", "outcomes_by_task"]

COMPARE_FORMAT: Final = "hbeval-compare/1"
_KEYS: Final = {
    "p_value": "p",
    "mean_change": "mean_task_change",
    "sd_change": "sd_task_change",
}
"""PairedComparison field names -> the names compare_reports shows them under."""


class CompareRefused(ValueError):
    """The two reports cannot be compared (different or missing measurement fingerprints)."""


PAIRING_TASK: Final = "task"
PAIRING_TASK_FAULT: Final = "task_fault_type"
_SIZE_WORDS: Final = ((0.8, "large"), (0.5, "medium"), (0.2, "small"), (0.0, "tiny"))


def outcomes_by_task(
    report: Report,
    *,
    key: str | None = None,
    value: str | None = None,
    pairing: str = PAIRING_TASK,
) -> dict[str, list[bool]]:
    """Pass/fail of each scored trial, grouped by task id (by "task · fault type" with the
    ``task_fault_type`` pairing), optionally only where ``key == value``."""
    out: dict[str, list[bool]] = {}
    for t in scored_records(report):
        if key is not None and str(t.get(key)) != value:
            continue
        unit = str(t.get("task_id"))
        if pairing == PAIRING_TASK_FAULT:
            unit = f"{unit} · {t.get('fault_type')}"
        out.setdefault(unit, []).append(t.get("outcome") == OUTCOME_PASS)
    return out


def effect_word(h: float) -> str:
    """Cohen's conventional size of |h|."""
    return next(word for floor, word in _SIZE_WORDS if abs(h) >= floor)


def _conclude(entry: dict[str, Any], p: float | None, alpha: float) -> dict[str, Any]:
    """``entry`` with ``conclusion`` (better, worse, inconclusive; null when undefined) and
    ``effect`` (a size word, only for better or worse)."""
    ci = entry.get("interval")
    conclusion: str | None = None
    if ci is not None and p is not None:
        spans = ci[0] <= 0.0 <= ci[1]
        conclusion = "inconclusive"
        if not spans and p < alpha:
            conclusion = "better" if ci[0] > 0 else "worse"
    h = entry.get("cohens_h")
    effect = effect_word(h) if conclusion in ("better", "worse") and h is not None else None
    return {**entry, "conclusion": conclusion, "effect": effect}


def _paired(pc: PairedComparison) -> dict[str, Any]:
    return {
        "rate_a": pc.rate_a,
        "rate_b": pc.rate_b,
        "n_a": pc.n_a,
        "n_b": pc.n_b,
        "change": None if pc.rate_a is None or pc.rate_b is None else pc.rate_b - pc.rate_a,
        "mean_task_change": pc.mean_change,
        "interval": None if pc.interval is None else [pc.interval[0], pc.interval[1]],
        "sd_task_change": pc.sd_change,
        "z": pc.z,
        "p": pc.p_value,
        "p_paired": pc.p_paired,
        "cohens_h": pc.cohens_h,
        "tasks": len(pc.tasks),
        "undefined": {_KEYS.get(k, k): v for k, v in pc.undefined.items()},
    }


_VALUE_KEYS: Final = (
    "rate_a",
    "rate_b",
    "change",
    "mean_task_change",
    "interval",
    "sd_task_change",
    "z",
    "p",
    "cohens_h",
)


def _undelivered(report: Report) -> dict[str, str]:
    """Fault types that planned faults and measured none in this run, with the reason
    (``no_fault_delivered`` or ``delivery_unobserved``)."""
    return {
        name: str(d["reason"])
        for name, d in fault_type_delivery(scored_records(report)).items()
        if d["reason"] in UNDELIVERED_REASONS
    }


def _refused(entry: dict[str, Any], message: str, reason: str) -> dict[str, Any]:
    """``entry`` with every figure null (``reason``) and the refusal in words."""
    out = {**entry, **{k: None for k in _VALUE_KEYS}}
    out["undefined"] = {k: reason for k in _VALUE_KEYS}
    out["refused"] = message
    return out


def _groups(a: Report, b: Report, key: str) -> list[str]:
    seen = {str(t.get(key)) for t in scored_records(a)} | {
        str(t.get(key)) for t in scored_records(b)
    }
    return sorted(seen)


def _side(report: Report, label: str) -> dict[str, Any]:
    run = section(report, "run")
    run = run if isinstance(run, Mapping) else {}
    return {
        "label": label,
        "run_id": report.run_id,
        "agent_id": run.get("agent_id"),
        "verdict": report.verdict,
    }


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} points"


def _summary(
    label_a: str, label_b: str, overall: Mapping[str, Any], pairing: str = PAIRING_TASK
) -> str:
    change = overall["change"]
    if change is None:
        return f"{label_b} vs {label_a}: no shared task with scored trials, nothing to compare"
    parts = [
        f"{label_b} vs {label_a}: pass rate {overall['rate_a']:.1%} -> {overall['rate_b']:.1%} "
        f"({_pct(change)})"
    ]
    interval = overall["interval"]
    if interval is not None:
        parts.append(
            f"mean per-task change {_pct(overall['mean_task_change'])}, "
            f"95% bootstrap interval [{_pct(interval[0])}, {_pct(interval[1])}] over "
            f"{overall['tasks']} {'task-fault pairs' if pairing == PAIRING_TASK_FAULT else 'tasks'}, "
            f"paired permutation p {overall['p_paired']:.3g}"
        )
    else:
        reason = overall["undefined"].get("interval", NOT_MEASURED)
        if reason in (INSUFFICIENT_TASKS, SINGLE_TASK):
            parts.append(
                f"insufficient data: {overall['tasks']} shared task(s), a paired test needs "
                f"at least {MIN_PAIRED_TASKS}"
            )
        else:
            parts.append(f"per-task interval undefined ({reason})")
    if overall["p"] is not None:
        parts.append(
            f"pooled z {overall['z']:.2f}, p {overall['p']:.3g} (treats trials as independent)"
        )
    if overall.get("conclusion") is not None:
        parts.append(str(overall["conclusion"]))
    if overall["cohens_h"] is not None:
        h = overall["cohens_h"]
        word = f" ({overall['effect']})" if overall.get("effect") else ""
        parts.append(f"Cohen's h {h:.2f}{word}")
    if pairing == PAIRING_TASK_FAULT:
        parts.append("runs differ only in the seed: paired by (task, fault type)")
    return "; ".join(parts)


def _seed_only(a: Report, b: Report) -> bool:
    """True when the two runs' measurements differ only in the seed (module docstring)."""
    ra, rb = section(a, "run") or {}, section(b, "run") or {}
    fa, fb = section(a, "fingerprints") or {}, section(b, "fingerprints") or {}
    va, vb = section(a, "versions") or {}, section(b, "versions") or {}
    if ra.get("seed") is None or rb.get("seed") is None or ra.get("seed") == rb.get("seed"):
        return False
    same_run = all(ra.get(k) == rb.get(k) for k in ("battery", "trials", "scenario_count"))
    same_versions = all(va.get(k) == vb.get(k) for k in ("scoring", "derive"))
    spec = fa.get("battery_spec")
    return spec is not None and spec == fb.get("battery_spec") and same_run and same_versions


def _pairing(a: Report, b: Report, labels: tuple[str, str]) -> tuple[str, str]:
    """``(fingerprint shown, pairing)``: the shared fingerprint and ``task``, or both
    fingerprints and ``task_fault_type`` when they differ only in the seed."""
    fa, fb = measurement_fingerprint_of(a), measurement_fingerprint_of(b)
    if fa is not None and fb is not None and fa != fb and _seed_only(a, b):
        return f"{fa} / {fb}", PAIRING_TASK_FAULT
    return _same_fingerprint(a, b, labels), PAIRING_TASK


def _same_fingerprint(a: Report, b: Report, labels: tuple[str, str]) -> str:
    """The two reports' shared measurement fingerprint; CompareRefused when there is none, or
    when they were scored under different scoring versions or faced different batteries."""
    refusal = comparability_refusal(a, b, labels)
    if refusal is not None:
        raise CompareRefused(refusal)
    fa, fb = measurement_fingerprint_of(a), measurement_fingerprint_of(b)
    if fa is None or fb is None:
        which = labels[0] if fa is None else labels[1]
        raise CompareRefused(
            f"refusing to compare: run {which} has no measurement fingerprint, so the two runs "
            "cannot be shown to measure the same thing"
        )
    if fa != fb:
        raise CompareRefused(
            f"refusing to compare: measurement fingerprints differ ({labels[0]} {fa}, "
            f"{labels[1]} {fb}); results under different measurement fingerprints (battery, "
            "plans, trials, scoring or derivation) are never compared, except runs that differ "
            "only in the seed"
        )
    return fa


def _adjusted(rows: dict[str, dict[str, Any]], alpha: float) -> dict[str, dict[str, Any]]:
    """Each row with its Benjamini–Hochberg ``p_adjusted`` over the family, and conclusion."""
    family = {g: r.get("p_paired") for g, r in rows.items() if not r.get("refused")}
    q = benjamini_hochberg(family)
    out: dict[str, dict[str, Any]] = {}
    for group, row in rows.items():
        adjusted = q.get(group)
        entry = {**row, "p_adjusted": adjusted}
        if adjusted is None:
            entry["undefined"] = {
                **row["undefined"],
                "p_adjusted": row["undefined"].get("p_paired", NOT_MEASURED),
            }
        out[group] = _conclude(entry, adjusted, alpha)
    return out


def _grouped_and_metrics(
    a: Report, b: Report, confidence: float, labels: tuple[str, str], pairing: str = PAIRING_TASK
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], list[str]]:
    """Per fault type and domain comparisons, the metrics side by side, and what was refused."""
    by: dict[str, dict[str, Any]] = {}
    for key, name in (("fault_type", "fault_types"), ("domain", "domains")):
        by[name] = {
            group: _paired(
                paired_comparison(
                    outcomes_by_task(a, key=key, value=group, pairing=pairing),
                    outcomes_by_task(b, key=key, value=group, pairing=pairing),
                    confidence,
                )
            )
            for group in _groups(a, b, key)
        }
    refused: list[str] = []
    missing = {labels[0]: _undelivered(a), labels[1]: _undelivered(b)}
    for group, entry in list(by["fault_types"].items()):
        sides = [label for label, types in missing.items() if group in types]
        if sides:
            reason = undelivered_reason(missing[label][group] for label in sides) or (
                NO_FAULT_DELIVERED
            )
            message = (
                f"fault type {group}: not compared, run {' and '.join(sides)} delivered no "
                f"fault of this type ({NO_FAULT_DELIVERED}), so its trials never met the fault"
                if reason == NO_FAULT_DELIVERED
                else f"fault type {group}: not compared, run {' and '.join(sides)} recorded no "
                f"model call, so whether its faults arrived is unknown ({reason})"
            )
            by["fault_types"][group] = _refused(entry, message, reason)
            refused.append(message)
    any_missing = [label for label, types in missing.items() if types]
    metrics: dict[str, Any] = {}
    for name in LIVE_METRICS:
        va = getattr(a.metrics, name)
        vb = getattr(b.metrics, name)
        undefined: dict[str, str] = {}
        if va is None:
            undefined["a"] = str(a.undefined.get(name, NOT_MEASURED))
        if vb is None:
            undefined["b"] = str(b.undefined.get(name, NOT_MEASURED))
        if va is None or vb is None:
            undefined["change"] = undefined.get("a") or undefined["b"]
        change = None if va is None or vb is None else vb - va
        if name in (FRR, IRS) and any_missing and change is not None:
            # Each run's figure covers a different set of fault types: not comparable.
            change = None
            undefined["change"] = (
                undelivered_reason(r for types in missing.values() for r in types.values())
                or NO_FAULT_DELIVERED
            )
            refused.append(
                f"{name.upper()}: not compared, run {' and '.join(any_missing)} measured no "
                "fault of some type, so the two figures cover different faults"
            )
        metrics[name] = {"a": va, "b": vb, "change": change, "undefined": undefined}
    alpha = 1.0 - confidence
    by = {name: _adjusted(rows, alpha) for name, rows in by.items()}
    return by, metrics, refused


def compare_reports(
    a: Report,
    b: Report,
    *,
    confidence: float = 0.95,
    labels: tuple[str, str] = ("A", "B"),
) -> dict[str, Any]:
    """Compare report B against report A of the same measurement fingerprint (change = B − A).

    Returns an ``hbeval-compare/1`` dict: ``overall`` (pass rates, their change, the paired
    per-task interval, z, p, Cohen's h), ``tasks`` (per-task rates and change), ``fault_types``
    and ``domains`` (the same comparison within each), ``metrics`` (each HB-Eval metric in A and
    B and the change, undefined with reasons), tasks found in one run only, and a ``summary``
    in words. Raises :class:`CompareRefused` when the fingerprints differ or one is missing.
    """
    fa, pairing = _pairing(a, b, labels)
    overall_pc = paired_comparison(
        outcomes_by_task(a, pairing=pairing), outcomes_by_task(b, pairing=pairing), confidence
    )
    overall = _conclude(_paired(overall_pc), overall_pc.p_paired, 1.0 - overall_pc.confidence)
    tasks = [
        {
            "task": t.task,
            "rate_a": t.rate_a,
            "rate_b": t.rate_b,
            "change": t.change,
            "n_a": t.n_a,
            "n_b": t.n_b,
        }
        for t in overall_pc.tasks
    ]
    by, metrics, refused = _grouped_and_metrics(a, b, confidence, labels, pairing)
    return {
        "format": COMPARE_FORMAT,
        "a": _side(a, labels[0]),
        "b": _side(b, labels[1]),
        "measurement_fingerprint": fa,
        "pairing": pairing,
        "confidence": overall_pc.confidence,
        "method": f"paired per {'task and fault type' if pairing == PAIRING_TASK_FAULT else 'task'}"
        ": exact sign-flip permutation test and percentile bootstrap interval over per-unit "
        f"changes (from {MIN_PAIRED_TASKS} shared units); fault types' p adjusted by "
        "Benjamini–Hochberg; better or worse only when the interval excludes 0 and p (adjusted) "
        "is below 1 − confidence, else inconclusive; pooled two-proportion z test and Cohen's h "
        "over the shared units' trials",
        "overall": overall,
        "tasks": tasks,
        "only_in_a": list(overall_pc.only_in_a),
        "only_in_b": list(overall_pc.only_in_b),
        "fault_types": by["fault_types"],
        "domains": by["domains"],
        "metrics": metrics,
        "refused": refused,
        "summary": _summary(labels[0], labels[1], overall, pairing)
        + (f"; {len(refused)} fault-dependent figure(s) not compared" if refused else ""),
    }
