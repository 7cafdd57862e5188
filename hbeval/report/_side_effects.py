"""How the terminal and the HTML show duplicate side effects (the report's ``side_effects``)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["add_side_effects_row", "side_effects_cells", "side_effects_html", "side_effects_lines"]


def side_effects_cells(report: Report) -> tuple[str, str, str, str] | None:
    """The summary table's row, or None when no trial had irreversible tools."""
    block = report.side_effects
    if block is None:
        return None
    after = ", ".join(f"{k} {v}" for k, v in block.by_fault.items())
    note = (
        f"{block.trials_with_duplicates}/{block.trials_counted} trials; ceiling 0"
        + (f"; after: {after}" if after else "")
        + ("  OVER" if block.duplicate_side_effects else "")
    )
    return ("duplicate side effects", str(block.duplicate_side_effects), "", note)


def add_side_effects_row(table: Any, report: Report) -> None:
    """Add the summary table's row when the report counts side effects."""
    cells = side_effects_cells(report)
    if cells is not None:
        table.add_row(*cells)


def side_effects_lines(report: Report) -> list[str]:
    """One line per trial with a duplicate side effect (trial key, count, preceding faults)."""
    block = report.side_effects
    if block is None or not block.trials:
        return []
    lines = [f"  duplicate side effects ({block.duplicate_side_effects} in all):"]
    for t in block.trials:
        lines.append(
            f"    {t.trial_key} ({t.fault_type}): {t.duplicates} duplicate(s) after "
            + ", ".join(t.after_faults)
        )
    return lines


def side_effects_html(report: Report) -> str:
    """The HTML block: totals, by preceding fault, and the trials (escaped; empty without one)."""
    block = report.side_effects
    if block is None:
        return ""
    rows = "".join(
        f"<tr><td><code>{escape(str(t.trial_key))}</code></td><td>{escape(str(t.fault_type))}"
        f"</td><td>{t.duplicates}</td><td>{escape(', '.join(t.after_faults))}</td></tr>"
        for t in block.trials
    )
    faults = ", ".join(f"{escape(k)} {v}" for k, v in block.by_fault.items()) or "none"
    head = (
        f"<h3>Duplicate side effects</h3><p>{block.duplicate_side_effects} duplicate side "
        f"effect(s) in {block.trials_with_duplicates} of {block.trials_counted} trials with "
        f"irreversible tools; by the fault before each: {faults}. A trial with one is never a "
        "recovery.</p>"
    )
    if not rows:
        return head
    return (
        head + "<table><tr><th>trial</th><th>fault type</th><th>duplicates</th>"
        "<th>after fault</th></tr>" + rows + "</table>"
    )
