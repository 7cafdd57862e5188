"""Rows of the benchmarks' one table, and the bootstrap intervals they carry.

Every headline figure is a statistic of interleaved rounds (each round times hbeval and its
anchor one after the other, so drift common to the round cancels in their ratio). Its interval
is a percentile bootstrap over the rounds: rounds are resampled with replacement (a fixed seed,
so a run is repeatable from its samples), the statistic is taken again on each resample, and the
2.5th and 97.5th percentiles of those are the 95% interval printed beside it.

A row's goal is met when the whole interval is on the goal's side, not met when the whole
interval is on the other side, and unresolved when the interval straddles the goal: then the
rounds could not tell, and more rounds (``--full``) or instruction counts are needed.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

SEED = 20_261_207
RESAMPLES = 2_000


def median_ratio(ours: Sequence[float], anchor: Sequence[float]) -> float:
    """The median over rounds of each round's ours / anchor."""
    return statistics.median(o / a for o, a in zip(ours, anchor, strict=True))


def bootstrap(
    samples: Sequence[Sequence[float]],
    stat: Callable[..., float],
    *,
    seed: int = SEED,
    resamples: int = RESAMPLES,
) -> tuple[float, float, float]:
    """``(stat, low, high)``: ``stat(*samples)`` and its 95% percentile-bootstrap interval.

    ``samples`` are parallel per-round series (the same round index in each); a resample draws
    round indices with replacement and passes every series at those indices, so pairs stay
    paired.
    """
    n = len(samples[0])
    assert all(len(s) == n for s in samples), "series of unequal length"
    point = stat(*samples)
    rng = random.Random(seed)
    got = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        got.append(stat(*([s[i] for i in idx] for s in samples)))
    got.sort()
    return point, got[int(0.025 * (resamples - 1))], got[int(0.975 * (resamples - 1))]


def percentile(xs: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (``q`` in [0, 1])."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


@dataclass
class Row:
    """One row of the table: a figure, its anchor, what the clock holds, the value and goal."""

    figure: str
    anchor: str
    inside: str
    value: float
    low: float
    high: float
    unit: str  # "x" (a ratio), "ms", "/s", "k" (thousands of instructions)
    goal: float | None  # None: context, no goal
    better: str = "le"  # "le": at most the goal is good; "ge": at least
    why: str = ""  # when not met or unresolved: what blocks it / where the time goes
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def met(self) -> str:
        if self.goal is None:
            return "-"
        ok_low = self.high <= self.goal if self.better == "le" else self.low >= self.goal
        bad = self.low > self.goal if self.better == "le" else self.high < self.goal
        return "yes" if ok_low else ("no" if bad else "unresolved")

    def _num(self, x: float) -> str:
        if self.unit in ("/s", "k"):
            return f"{x:,.0f}"
        if self.unit == "x" and x >= 10:
            return f"{x:.1f}"
        return f"{x:.3f}" if self.unit == "ms" else f"{x:.2f}"

    def cells(self) -> list[str]:
        unit = {"x": "x", "ms": " ms", "/s": "/s", "k": "k"}[self.unit]
        value = f"{self._num(self.value)}{unit} [{self._num(self.low)}, {self._num(self.high)}]"
        if self.goal is None:
            goal = "(context)"
        else:
            goal = ("<= " if self.better == "le" else ">= ") + f"{self._num(self.goal)}{unit}"
        return [self.figure, self.anchor, self.inside, value, goal, self.met]


HEADER = ["figure", "anchor", "inside the clock", "value [95% interval]", "goal", "met"]


def markdown(rows: Sequence[Row]) -> str:
    """The table as Markdown (what benchmarks/README.md carries)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r.cells()) + " |" for r in rows]
    return "\n".join(lines)


def notes(rows: Sequence[Row]) -> str:
    """One line per row that is not met or unresolved: why, and where the time goes."""
    out = []
    for r in rows:
        if r.met in ("no", "unresolved") and r.why:
            out.append(f"- {r.figure}: {r.met}. {r.why}")
    return "\n".join(out)
