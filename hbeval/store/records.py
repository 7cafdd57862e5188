"""The records a store keeps: runs, trials, attempts, metric sets and saved reports.

These are plain frozen dataclasses. The stores validate them when they are recorded (not when
they are built), so a test can construct a bad record on purpose and watch the store refuse it.
Times are Unix seconds (floats), like event ``ts``; JSON fields are plain dicts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..scoring._report_model import Report

RUN_RUNNING = "running"
"""A run that has started and not finished (or is being resumed)."""
RUN_COMPLETED = "completed"
"""Every planned trial was recorded."""
RUN_FAILED = "failed"
"""The run stopped on an error of the harness."""
RUN_INTERRUPTED = "interrupted"
"""The run was stopped from outside (Ctrl-C, a killed worker); resuming it continues it."""
RUN_STATUSES = (RUN_RUNNING, RUN_COMPLETED, RUN_FAILED, RUN_INTERRUPTED)
"""Every status a run can have."""
RUN_FINAL_STATUSES = (RUN_COMPLETED, RUN_FAILED, RUN_INTERRUPTED)
"""Statuses ``finish_run`` accepts."""


def make_trial_key(scenario_index: int, trial_index: int) -> str:
    """The trial key of a scenario and trial index, e.g. ``make_trial_key(3, 1) == "s003-t1"``."""
    return f"s{scenario_index:03d}-t{trial_index}"


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One battery run: who ran, what was measured, and how it was configured.

    ``measurement_fingerprint`` decides which runs may be compared (and which reports feed CSI);
    ``config`` holds the run's settings as JSON (concurrency, timeout, ...).
    """

    run_id: str
    agent_id: str
    battery: str
    measurement_fingerprint: str
    manifest_hash: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    status: str = RUN_RUNNING
    finished_at: float | None = None


@dataclass(frozen=True, kw_only=True)
class TrialRecord:
    """The final result of one trial: one task x scenario x trial index.

    Recorded once, when the trial is over; ``attempts`` counts every attempt it took (infra
    retries included), each kept as an :class:`AttemptRecord`. ``verdict`` is the scorer's JSON.
    """

    run_id: str
    trial_key: str
    task_id: str
    scenario_index: int
    trial_index: int
    outcome: str
    fault_type: str | None = None
    domain: str | None = None
    verdict: dict[str, Any] | None = None
    started_at: float | None = None
    ended_at: float | None = None
    latency_ms: float | None = None
    attempts: int = 1


@dataclass(frozen=True, kw_only=True)
class AttemptRecord:
    """One attempt at a trial (0-based). Every attempt is kept; none is ever overwritten.

    ``infra`` is true when the attempt failed because of the harness or environment rather than
    the agent (those are the attempts a runner retries).
    """

    run_id: str
    trial_key: str
    attempt: int
    outcome: str
    error: str | None = None
    error_type: str | None = None
    infra: bool = False
    started_at: float | None = None
    ended_at: float | None = None


@dataclass(frozen=True)
class MetricSet:
    """Metric values of a run or a trial; an undefined metric is ``None`` with a reason code.

    ``values`` holds every metric (``None`` for undefined ones); ``undefined`` maps each
    undefined metric to its reason code from ``vocab.UNDEFINED_REASONS``.
    """

    values: dict[str, float | None] = field(default_factory=dict)
    undefined: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ReportRecord:
    """A saved battery report, with the run fields used to find it again.

    ``created_at`` is the run's start time (reports are ordered by it); ``saved_at`` is when the
    report itself was saved.
    """

    report_id: int
    run_id: str
    agent_id: str
    measurement_fingerprint: str
    created_at: float
    saved_at: float
    report: Report
