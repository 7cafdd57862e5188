"""Clustered intervals computed by hand, independently of hbeval's metrics package.

A rate over trials grouped by scenario: the pooled ratio, its cluster-robust (sandwich)
variance, the effective n = p(1-p)/variance capped at the trials and at the scenarios, and
Wilson's score interval at that n (z 1.96, the reference's table value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def wilson_at(p: float, n: float, z: float = 1.96) -> tuple[float, float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (0.0 if p <= 0 else max(0.0, centre - half), 1.0 if p >= 1 else min(1.0, centre + half))


def effective_n(groups: list[list[int]]) -> float:
    n, m = sum(map(len, groups)), len(groups)
    p = sum(map(sum, groups)) / n
    v = m / (m - 1) * sum((sum(g) - p * len(g)) ** 2 for g in groups) / n**2 if m > 1 else 0.0
    return min(n, m, p * (1 - p) / v) if v > 0 and 0 < p < 1 else float(m)


def clustered_wilson(groups: list[list[int]], z: float = 1.96) -> tuple[float, float]:
    p = sum(map(sum, groups)) / sum(map(len, groups))
    return wilson_at(p, effective_n(groups), z)


def frr_success(trial: Mapping[str, Any]) -> int:
    """FRR's success: passed, no duplicated side effect, no silent corruption."""
    verdict = trial.get("verdict") or {}
    signals = verdict.get("signals") or {}
    duplicates = (verdict.get("side_effects") or {}).get("duplicate_count") or 0
    return int(
        trial.get("outcome") == "pass"
        and not duplicates
        and signals.get("silent_corruption") is not True
    )


def by_scenario(
    trials: Iterable[Mapping[str, Any]],
    keep: Callable[[Mapping[str, Any]], bool],
    success: Callable[[Mapping[str, Any]], int],
) -> list[list[int]]:
    groups: dict[Any, list[int]] = {}
    for t in trials:
        if t.get("outcome") in ("pass", "fail", "timeout") and keep(t):
            groups.setdefault(t.get("scenario_index"), []).append(success(t))
    return list(groups.values())


def faulted_groups(report: Mapping[str, Any]) -> list[list[int]]:
    """FRR's trials of a report (its JSON), grouped by scenario."""
    return by_scenario(
        report["trials"], lambda t: (t.get("verdict") or {}).get("faulted") is True, frr_success
    )
