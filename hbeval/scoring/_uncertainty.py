"""The interval every surface shows for a rate: the report's clustered one.

``rate_interval(report, name)`` is what the terminal, the HTML page, ``gate --lower-bound``,
the demo table and passports read for pass rate, FRR, IRS, C_nom, R_op and the attack figures.
It takes the report's ``uncertainty`` block when the report carries one at the asked
confidence, and otherwise computes the same clustered interval from the report's own trials
(reports written before the block existed read the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hbeval_core.vocab import FRR, IRS

from ._fold import _clustered, _clustered_pass, _verdict
from ._rates import _clustered_frr
from ._security import scored_trials, trial_records

if TYPE_CHECKING:
    from ._report_model import Report

__all__ = ["ShownInterval", "rate_interval"]

_EPS = 1e-12


@dataclass(frozen=True)
class ShownInterval:
    """A rate's clustered interval, its independent-trials interval and what it rests on."""

    value: float
    interval: tuple[float, float]
    independent: tuple[float, float] | None
    n: int
    clusters: int
    effective_n: float
    design_effect: float

    def describe(self) -> str:
        """``"n 40 in 14 scenarios, effective n 12.7, design effect 3.15"``."""
        return (
            f"n {self.n} in {self.clusters} scenario(s), effective n {self.effective_n:.1f}, "
            f"design effect {self.design_effect:.2f}"
        )


def _from_trials(report: Report, name: str, confidence: float) -> Any:
    scored = trial_records(scored_trials(report))
    if name == "pass_rate":
        return _clustered_pass(scored, confidence)
    faulted = [t for t in scored if _verdict(t).get("faulted") is True]
    if name == FRR:
        return _clustered_frr(faulted, confidence)
    if name == "r_op":
        return _clustered_pass(faulted, confidence)
    if name == "c_nom":
        return _clustered_pass([t for t in scored if t.get("is_nominal") is True], confidence)
    if name == IRS:
        judged = [
            (t, float(_verdict(t)["irs_score"]))
            for t in scored
            if _verdict(t).get("judged") is True
            and isinstance(_verdict(t).get("irs_score"), (int, float))
        ]
        return _clustered(judged, confidence)
    return None


def rate_interval(report: Report, name: str, confidence: float = 0.95) -> ShownInterval | None:
    """The clustered interval of a rate (``pass_rate``, ``frr``, ``irs``, ``c_nom``, ``r_op``,
    ``attack_success``, ``utility_under_attack``), or None when it is undefined or not a rate."""
    block = report.uncertainty
    if block is not None and abs(block.confidence - confidence) < _EPS:
        entry = block.rates.get(name)
        if entry is None or entry.value is None or entry.interval is None:
            return None
        if entry.effective_n is None or entry.design_effect is None:
            return None
        return ShownInterval(
            entry.value,
            (entry.interval[0], entry.interval[1]),
            None
            if entry.interval_independent is None
            else (entry.interval_independent[0], entry.interval_independent[1]),
            entry.n,
            entry.clusters,
            entry.effective_n,
            entry.design_effect,
        )
    cr = _from_trials(report, name, confidence)
    if cr is None or cr.estimate is None or cr.interval is None or cr.effective_n is None:
        return None
    return ShownInterval(
        cr.estimate,
        cr.interval,
        cr.independent_interval,
        cr.n,
        cr.clusters,
        cr.effective_n,
        cr.design_effect,
    )
