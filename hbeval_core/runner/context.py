"""Moved to ``hbeval_core.contract``; this name stays so existing imports keep working.

The objects are the contract's own (one context variable, one interrupt flag), not copies.
"""

from __future__ import annotations

from ..contract._trial import (
    BUDGET_FIELDS,
    BudgetExceeded,
    Budgets,
    InfraError,
    TrialCancelled,
    TrialContext,
    TrialStop,
    current_trial,
    trial_context,
    user_interrupted,
)

__all__ = [
    "BUDGET_FIELDS",
    "BudgetExceeded",
    "Budgets",
    "InfraError",
    "TrialCancelled",
    "TrialContext",
    "TrialStop",
    "current_trial",
    "trial_context",
    "user_interrupted",
]
