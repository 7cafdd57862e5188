"""The ``recorded_errors`` block and the rule that fault floors do not apply without an
injected fault (``_recorded`` describes both; this module imports nothing of scoring's own, so
``decide_verdict`` and the report model can read it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hbeval_core.vocab import FRR, IRS

from ._trial_model import Interval, Undefined, Unit, _Block

__all__ = [
    "FAULT_FLOORS",
    "MAX_MESSAGES",
    "MESSAGE_CHARS",
    "RecordedErrors",
    "RecordedMessage",
    "fault_floors_not_applicable",
]

FAULT_FLOORS = (FRR, IRS)
"""The floors that measure handling of an injected fault."""
MAX_MESSAGES = 20
MESSAGE_CHARS = 160


class RecordedMessage(_Block):
    """One recorded error message and how often it came."""

    tool: str
    message: str = Field(max_length=MESSAGE_CHARS)
    count: int = Field(ge=1)


class RecordedErrors(_Block):
    """Recovery from a recording's own tool errors (not injected faults)."""

    injected: Literal[False] = False
    trials: int = Field(ge=0, description="Scored trials in which a tool answered with an error.")
    recovered: int = Field(ge=0, description="Of them, passed without a duplicated side effect.")
    rate: Unit | None = Field(description="recovered / trials: recorded-error recovery.")
    interval: Interval | None = Field(
        description="95% Wilson interval treating the trials as independent."
    )
    errors_by_tool: dict[str, int] = Field(description="Recorded tool errors by tool.")
    messages: list[RecordedMessage] = Field(
        description=f"The {MAX_MESSAGES} most frequent error messages (first line, cut to "
        f"{MESSAGE_CHARS} characters): what the recording says of each error's cause."
    )
    cause: str = Field(description="What is known of the errors' cause.")
    undefined: Undefined


def fault_floors_not_applicable(report: Any) -> tuple[str, ...]:
    """The fault floors that do not apply to ``report``: all of them when it separated its
    recorded errors (no fault was injected), else none."""
    return FAULT_FLOORS if getattr(report, "recorded_errors", None) is not None else ()
