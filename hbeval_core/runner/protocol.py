"""``Adapter`` and ``TrialResult`` moved to ``hbeval_core.contract`` (these names stay importable
here); how an exception maps to a trial status is defined here until the contract holds it."""

from __future__ import annotations

from ..contract._adapter import Adapter, TrialResult, token_usage, trace_kinds

__all__ = [
    "Adapter",
    "TrialResult",
    "is_infra_error",
    "run_status_of",
    "token_usage",
    "trace_kinds",
]

# How a trial's run ended when one of hbeval's own control-flow exceptions stopped it. Matched by
# class name along the MRO, so adapters need not import the classes (nor the frameworks theirs).
_RUN_STATUS_FOR_EXCEPTION: dict[str, str] = {
    "SafeHaltError": "halted",
    "BudgetExceeded": "halted",
    "TrialCancelled": "timeout",
    "InjectedCrash": "cancelled",
}


def run_status_of(exc: BaseException) -> str:
    """The ``TrialResult.status`` of a run stopped by ``exc``: halted, timeout, cancelled or error."""
    for cls in type(exc).__mro__:
        status = _RUN_STATUS_FOR_EXCEPTION.get(cls.__name__)
        if status is not None:
            return status
    return "error"


def is_infra_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the harness's or the environment's fault (an ``InfraError``), not the agent's."""
    return any(cls.__name__ == "InfraError" for cls in type(exc).__mro__)
