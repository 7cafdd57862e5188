"""Warnings a report carries beside its verdict: results that say more about the measurement
than about the agent.

``report_warnings(report)`` is the one reader: the report's own ``warnings`` field when it has
one, else the same rules over its figures (so reports written before the field warn too). Every
surface (the terminal summary, the HTML report, ``hbeval gate``, ``assert_reliable``) shows them
before any reliability figure. They never change a figure or the verdict.

* **No nominal trial passed** (``reliability_gap.c_nom`` 0 over at least one nominal trial):
  the agent failed the task with no fault at all, so FRR and every faulted figure measure a
  task it never passes. The verifier, the task's expected answer or the answer rule is the
  likely problem, not reliability.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._view import section

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = ["NO_NOMINAL_PASS", "report_warnings", "warnings_field"]

NO_NOMINAL_PASS = (
    "no nominal trial passed ({n} of {n} failed with no fault injected): the verifier or the "
    "task (its expected answer, the answer rule or answer_from) is the likely problem, not "
    "reliability; check them before reading FRR"
)


def _computed(report: Report) -> list[str]:
    gap = section(report, "reliability_gap")
    n = gap.get("nominal_n")
    c_nom = gap.get("c_nom")
    out: list[str] = []
    if isinstance(n, int) and n > 0 and isinstance(c_nom, (int, float)) and c_nom == 0:
        out.append(NO_NOMINAL_PASS.format(n=n))
    return out


def report_warnings(report: Report) -> list[str]:
    """The report's warnings (module docstring): its stored ones, else computed from it."""
    stored = report.warnings
    if stored is not None:
        return list(stored)
    return _computed(report)


def warnings_field(report: Report) -> dict[str, Any]:
    """``{"warnings": [...]}`` for a report being built, or nothing when there is none."""
    found = _computed(report)
    return {"warnings": found} if found else {}
