"""A run's cost budget (``run_battery(max_cost=...)``, ``battery run --max-cost USD``).

The cost of a trial is what the report's cost accounting charges for it: the input and output
tokens of its final attempt (``usage``) at the manifest's price table (USD per 1,000 tokens of
the run's model, ``scoring._rates``). A trial that called no model costs nothing; one whose
model calls reported no token counts has no measurable cost. The budget covers the whole run,
trials recorded before a resume included.

The driver asks ``allows()`` before it starts (or submits) each trial: once the spent cost
reaches ``max_cost``, or a trial's cost could not be measured, no new trial starts. Trials
already running finish and are counted, so the spend can pass the budget by what the trials in
flight cost. The run then ends ``interrupted`` with ``run.budget`` in its report; running it
again with a larger budget resumes it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any, Final

from ..scoring._rates import _price_per_million

__all__ = ["BUDGET_EXHAUSTED", "COST_UNMEASURED", "CostBudget", "trial_cost"]

BUDGET_EXHAUSTED: Final = "budget_exhausted"
"""``run.budget.stopped``: the spent cost reached ``max_cost``."""
COST_UNMEASURED: Final = "cost_unmeasured"
"""``run.budget.stopped``: a trial's cost could not be measured (no token counts)."""

_HOW_TO_PRICE = (
    "give the run a manifest (--manifest) with model_id and a price_table such as "
    "{model_id: {input_per_1k: 0.003, output_per_1k: 0.015}} (USD per 1,000 tokens)"
)


def trial_cost(trial: Mapping[str, Any], prices: Mapping[str, float]) -> float | None:
    """USD one trial cost at ``prices`` (per million ``input`` / ``output`` tokens); None when
    its model calls did not report token counts."""
    usage = trial.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    tin, tout = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(tin, int) and isinstance(tout, int) and _count(tin) and _count(tout):
        return (tin * float(prices["input"]) + tout * float(prices["output"])) / 1_000_000
    if usage.get("model_calls") == 0 and tin is None and tout is None:
        return 0.0  # no model was called: nothing was spent
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class CostBudget:
    """What a run may spend, what it spent, and whether it stopped (thread-safe)."""

    def __init__(self, max_cost: float, prices: Mapping[str, float]) -> None:
        self.max_cost = float(max_cost)
        self.prices = dict(prices)
        self.spent = 0.0
        self.stopped: str | None = None
        """None while trials may start; ``budget_exhausted`` or ``cost_unmeasured`` after."""
        self._lock = threading.Lock()

    @classmethod
    def for_run(cls, max_cost: Any, manifest: Mapping[str, Any] | None) -> CostBudget | None:
        """The budget of a run (None without ``max_cost``); refuses a bad amount or a run whose
        manifest prices no model, before anything runs."""
        if max_cost is None:
            return None
        if (
            isinstance(max_cost, bool)
            or not isinstance(max_cost, (int, float))
            or not math.isfinite(max_cost)
            or max_cost <= 0
        ):
            raise ValueError(f"max_cost (--max-cost) must be USD > 0 (got {max_cost!r})")
        prices, note = _price_per_million(manifest)
        if prices is None:
            why = note or "the run manifest has no price table"
            raise ValueError(
                f"max_cost (--max-cost) needs the price of the run's model to measure what trials "
                f"cost: {why}; {_HOW_TO_PRICE}"
            )
        for key in ("input", "output"):
            value = prices.get(key)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(
                    f"max_cost (--max-cost): the price table's {key} price must be a number "
                    f">= 0 (got {value!r}); {_HOW_TO_PRICE}"
                )
        return cls(float(max_cost), prices)

    def add(self, trial: Mapping[str, Any] | None) -> None:
        """Count one finished (or resumed) trial's cost."""
        cost = None if trial is None else trial_cost(trial, self.prices)
        with self._lock:
            if cost is None:
                self.stopped = self.stopped or COST_UNMEASURED
                return
            self.spent += cost
            if self.spent >= self.max_cost and self.stopped is None:
                self.stopped = BUDGET_EXHAUSTED

    def allows(self) -> bool:
        """Whether a new trial may start."""
        with self._lock:
            return self.stopped is None

    def record(self, *, left_trials: bool) -> dict[str, Any]:
        """``{"max_cost", "spent", "stopped"}`` for the report's ``run.budget``; ``stopped`` is
        None unless the budget left trials of the run unstarted (``left_trials``)."""
        with self._lock:
            return {
                "max_cost": self.max_cost,
                "spent": round(self.spent, 9),
                "stopped": self.stopped if left_trials else None,
            }
