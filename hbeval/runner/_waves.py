"""``until_decided``: a run's trials in waves, stopping once its verdict is decided.

A wave is one trial of every scenario (trial index ``w`` of each); waves run in order, up to
the run's ``trials``. After each complete wave the trials so far are scored as a report and
``scoring._until_decided.wave_decision`` says whether every check of the verdict is settled at
the stated confidence by an always-valid bound; if so, no further wave starts. Trials already
in the store (a resumed run) count in their waves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..scoring._until_decided import STOP_BUDGET, STOP_DECIDED, STOP_MAX, WaveDecision
from ._attempts import _Job

__all__ = ["WavesOutcome", "run_in_waves"]


@dataclass(frozen=True)
class WavesOutcome:
    """How a run in waves ended: waves run, why it stopped, and the last decision."""

    waves_run: int
    stopped: str
    decision: WaveDecision | None


def run_in_waves(
    pending: Sequence[_Job],
    trials: int,
    execute: Callable[[list[_Job]], None],
    may_start: Callable[[], bool],
    decide: Callable[[int], WaveDecision],
) -> WavesOutcome:
    """Run ``pending`` wave by wave with ``execute``; ``decide(w)`` scores the first ``w`` waves."""
    decision: WaveDecision | None = None
    for wave in range(trials):
        execute([j for j in pending if j.trial_index == wave])
        done = wave + 1
        if not may_start():  # the budget stopped it (the wave may be incomplete)
            return WavesOutcome(done, STOP_BUDGET, decision)
        decision = decide(done)
        if decision.decided:  # at the last wave too: the run ended decided
            return WavesOutcome(done, STOP_DECIDED, decision)
    return WavesOutcome(trials, STOP_MAX, decision)


def check_until_decided(value: Any, executor: str) -> float | None:
    """``until_decided``: None, or a confidence strictly between 0 and 1 on a local executor."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1
    if not ok:
        raise ValueError(
            f"until_decided must be a confidence strictly between 0 and 1 (got {value!r})"
        )
    if executor == "ray":
        raise ValueError("until_decided runs waves on the local executor; drop executor='ray'")
    return float(value)
