"""Input checks shared by the metric functions; every error names the offending field."""

from __future__ import annotations

import math
from numbers import Integral, Real


def check_count(name: str, value: object) -> int:
    """A non-negative integer (numpy integers accepted, bools refused)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def check_real(name: str, value: object) -> float:
    """A finite real number (bools refused: they are almost always a mistake here)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return result


def check_probability(name: str, value: object) -> float:
    """A finite number in [0, 1]."""
    result = check_real(name, value)
    if not 0.0 <= result <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return result


def check_confidence(value: object) -> float:
    """A confidence level strictly between 0 and 1."""
    result = check_real("confidence", value)
    if not 0.0 < result < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {value!r}")
    return result


def check_successes(successes: object, n: object, *, s_name: str, n_name: str) -> tuple[int, int]:
    """A success count and its trial count, with 0 <= successes <= n."""
    s = check_count(s_name, successes)
    total = check_count(n_name, n)
    if s > total:
        raise ValueError(f"{s_name} ({s}) exceeds {n_name} ({total})")
    return s, total
