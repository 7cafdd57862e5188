"""How the terminal and the HTML show model faults (the report's ``model_faults``)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..scoring import Report
    from ..scoring._ledger_model import ModelFaultRow

__all__ = ["add_model_faults_row", "model_faults_html", "model_faults_lines"]

_SHOWN = ("deliberate", "retry_ignored_retry_after", "retry_unbounded", "continued", "gave_up")


def _rate(value: float | None, reason: str | None) -> str:
    return f"{value:.3f}" if value is not None else f"undefined ({reason or 'not_measured'})"


def _handled(row: ModelFaultRow) -> str:
    parts = [f"{h.replace('_', ' ')} {row.handling[h]}" for h in _SHOWN if row.handling.get(h)]
    if row.handling.get("unknown"):
        parts.append(f"unknown {row.handling['unknown']}")
    return ", ".join(parts) or "none"


def add_model_faults_row(table: Any, report: Report) -> None:
    """The summary table's row, when a trial received a model fault."""
    block = report.model_faults
    if block is None:
        return
    table.add_row(
        "model faults",
        str(block.faults),
        "",
        f"{block.trials} trials; FRR {_rate(block.frr, block.undefined.get('frr'))}, IRS "
        f"{_rate(block.irs, block.undefined.get('irs'))}; {_handled(block)}",
    )


def model_faults_lines(report: Report) -> list[str]:
    """One line per model fault mode: trials, FRR, IRS and how the client handled each fault."""
    block = report.model_faults
    if block is None:
        return []
    lines = [f"  model faults by mode ({block.faults} received in {block.trials} trials):"]
    for mode, row in block.by_mode.items():
        lines.append(
            f"    {mode}: {row.trials} trials, FRR {_rate(row.frr, row.undefined.get('frr'))} "
            f"({row.recovered}/{row.trials}), IRS {_rate(row.irs, row.undefined.get('irs'))} "
            f"({row.deliberate}/{row.judged} deliberate); {_handled(row)}"
        )
    return lines


def model_faults_html(report: Report) -> str:
    """The HTML block: one row per model fault mode (escaped; empty without model faults)."""
    block = report.model_faults
    if block is None:
        return ""
    head = "".join(f"<th>{escape(h.replace('_', ' '))}</th>" for h in (*_SHOWN, "unknown"))
    rows = "".join(
        f"<tr><td>{escape(mode)}</td><td>{row.trials}</td>"
        f"<td>{escape(_rate(row.frr, row.undefined.get('frr')))}</td>"
        f"<td>{escape(_rate(row.irs, row.undefined.get('irs')))}</td>"
        + "".join(f"<td>{row.handling.get(h, 0)}</td>" for h in (*_SHOWN, "unknown"))
        + "</tr>"
        for mode, row in block.by_mode.items()
    )
    return (
        f"<h3>Model faults</h3><p>{block.faults} model fault(s) received in {block.trials} "
        "trial(s). Deliberate handling is a bounded retry that honours Retry-After, a fallback "
        f"or an escalation; a retry before Retry-After or more than {block.retry_bound} "
        "retries of one request hammer, and giving up silently is not handling. These trials "
        "count in FRR and IRS.</p>"
        f"<table><tr><th>mode</th><th>trials</th><th>FRR</th><th>IRS</th>{head}</tr>"
        + rows
        + "</table>"
    )
