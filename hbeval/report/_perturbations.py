"""How the terminal and the HTML show prompt perturbations (the report's ``perturbations``).

Shown apart from the fault figures, under their own heading: these trials changed the question
and injected no fault, so they say how the agent takes a rewritten prompt, not how it handles a
fault.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..scoring import Report
    from ..scoring._perturbation_model import PerturbationFamily

__all__ = ["perturbation_html", "perturbation_lines"]


def _rate(value: float | None, reason: str | None) -> str:
    return f"{value:.3f}" if value is not None else f"undefined ({reason})"


def _family_line(name: str, fam: PerturbationFamily) -> str:
    interval = fam.pass_rate_interval
    shown = f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval is not None else ""
    change = (
        f"{fam.change:+.3f}"
        if fam.change is not None
        else f"undefined ({fam.undefined.get('change')})"
    )
    unpaired = (
        f" (no nominal trial of {', '.join(fam.tasks_without_nominal)})"
        if fam.tasks_without_nominal
        else ""
    )
    return (
        f"{name}: passed {fam.passed}/{fam.trials}, pass rate "
        f"{_rate(fam.pass_rate, fam.undefined.get('pass_rate'))}{shown}; on tasks with nominal "
        f"trials {_rate(fam.paired_pass_rate, fam.undefined.get('paired_pass_rate'))} "
        f"(n={fam.paired_trials}) against nominal "
        f"{_rate(fam.nominal_pass_rate, fam.undefined.get('nominal_pass_rate'))} "
        f"(n={fam.nominal_trials}): change {change}{unpaired}"
    )


def perturbation_lines(report: Report) -> list[str]:
    """The terminal's lines: one per family and one per perturbed question form."""
    block = report.perturbations
    if block is None:
        return []
    lines = ["  prompt perturbations (not fault handling; no fault injected):"]
    for name, fam in block.families.items():
        lines.append(f"    {_family_line(name, fam)}")
        for context, c in fam.by_context.items():
            lines.append(f"      {context}: {c.passed}/{c.trials}")
    return lines


def perturbation_html(report: Report) -> str:
    """The HTML block (escaped; empty when the run had no perturbation)."""
    block = report.perturbations
    if block is None:
        return ""
    parts = [f"<h3>Prompt perturbations</h3><p>{escape(block.note)}</p>"]
    for name, fam in block.families.items():
        rows = "".join(
            f"<tr><td>{escape(context)}</td><td>{c.passed}/{c.trials}</td>"
            f"<td>{_rate(c.pass_rate, None)}</td></tr>"
            for context, c in fam.by_context.items()
        )
        parts.append(
            f"<p>{escape(_family_line(name, fam))}</p><table><tr><th>context sentence</th>"
            f"<th>passed</th><th>pass rate</th></tr>{rows}</table>"
        )
    return "".join(parts)
