"""The small result type shared by metrics: a value, or None with the reason it is undefined."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricValue:
    """A metric's value, or ``None`` with the reason code (from vocab) saying why it is undefined.

    ``defined`` counts the inputs that contributed to the value and ``total`` the inputs given
    (tasks for pass@k, categories for a macro average, trials for a rate), so an aggregate that
    skipped undefined parts says so.
    """

    value: float | None
    reason: str | None = None
    defined: int = 0
    total: int = 0

    def __post_init__(self) -> None:
        # Undefined is never zero: a missing value must carry its reason, a value must not.
        if (self.value is None) == (self.reason is None):
            raise ValueError("MetricValue needs exactly one of 'value' and 'reason'")

    @classmethod
    def undefined(cls, reason: str, *, defined: int = 0, total: int = 0) -> MetricValue:
        """An undefined value with its reason code."""
        return cls(None, reason, defined, total)

    @property
    def is_defined(self) -> bool:
        """True when there is a value."""
        return self.value is not None
