"""How a trial's run ended when an exception stopped it: one mapping, by exception class.

hbeval's own control-flow exceptions say why a run stopped on purpose (an enforced Safe Halt, a
spent budget, a trial timeout, a crash fault); anything else is the agent's error. The classes
are matched by name along the exception's MRO, so this module imports none of them (nor any
framework's), and a subclass maps like its base.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "RUN_STATUS_FOR_EXCEPTION",
    "Ended",
    "describe_error",
    "ended_by",
    "is_infra_error",
    "run_status_of",
]

RUN_STATUS_FOR_EXCEPTION: Final[Mapping[str, str]] = MappingProxyType(
    {
        "SafeHaltError": "halted",
        "BudgetExceeded": "halted",
        "TrialCancelled": "timeout",
        "InjectedCrash": "cancelled",
        "CancelledError": "cancelled",
    }
)
"""Run status for each of hbeval's stop exceptions (and a cancelled task), by class name."""


def run_status_of(exc: BaseException) -> str:
    """The run status of a run stopped by ``exc``: halted, timeout, cancelled or error."""
    for cls in type(exc).__mro__:
        status = RUN_STATUS_FOR_EXCEPTION.get(cls.__name__)
        if status is not None:
            return status
    return "error"


def is_infra_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the harness's or the environment's fault (an ``InfraError``), not the agent's."""
    return any(cls.__name__ == "InfraError" for cls in type(exc).__mro__)


def describe_error(exc: BaseException) -> str:
    """The error text events and results carry: ``"ClassName: message"``."""
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Ended:
    """How a run ended: its status and, unless it is ``ok``, the error and its class name."""

    status: str = "ok"
    error: str | None = None
    error_type: str | None = None
    infra: bool = False


def ended_by(exc: BaseException) -> Ended:
    """How a run that raised ``exc`` ended (status by class, the error text, infra or not)."""
    return Ended(run_status_of(exc), describe_error(exc), type(exc).__name__, is_infra_error(exc))
