"""Checks of a trial bundle (``record_trial_bundle``), shared by both stores.

A bundle is everything the runner writes when a trial ends: its attempts, each attempt's
events, the trial record and its metrics. :func:`prepare_bundle` runs every check the separate
calls run (``check_trial``, ``check_attempt``, the event serialisation, ``metric_rows``), plus
the ones only a bundle needs (every attempt belongs to the bundle's trial, no attempt number
twice), before anything is written; the stores then write it in one step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hbeval_core.events import EventBase

from ._codec import EncodedEvents, encode_events
from ._validate import check_attempt, check_index, check_trial, metric_rows
from .errors import DuplicateRecordError
from .records import AttemptRecord, TrialRecord


@dataclass(frozen=True)
class EventBatch:
    """One attempt's events in a bundle, serialised (and so checked) once."""

    attempt: int | None
    events: list[EventBase]
    kinds: list[str]
    bodies: list[str]


@dataclass(frozen=True)
class Bundle:
    """A checked bundle, ready to write."""

    trial: TrialRecord
    verdict: str | None
    attempts: tuple[AttemptRecord, ...]
    batches: tuple[EventBatch, ...]
    metrics: list[tuple[str, float | None, str | None]]

    @property
    def event_count(self) -> int:
        """How many events the bundle holds."""
        return sum(len(b.bodies) for b in self.batches)


def prepare_bundle(
    trial: TrialRecord,
    attempts: Sequence[AttemptRecord],
    events_by_attempt: Mapping[int | None, Iterable[EventBase]] | None,
    metrics: Mapping[str, float | None] | None,
    undefined: Mapping[str, str] | None,
) -> Bundle:
    """Check a bundle (errors name the part at fault); nothing is written here."""
    verdict = check_trial(trial)
    if isinstance(attempts, (str, bytes)) or not isinstance(attempts, Sequence):
        raise ValueError(f"attempts must be a sequence of AttemptRecord, got {attempts!r}")
    seen: set[int] = set()
    for i, attempt in enumerate(attempts):
        try:
            check_attempt(attempt)
        except ValueError as exc:
            raise ValueError(f"attempts[{i}]: {exc}") from None
        for name in ("run_id", "trial_key"):
            if getattr(attempt, name) != getattr(trial, name):
                raise ValueError(
                    f"attempts[{i}].{name} is {getattr(attempt, name)!r} but the bundle's trial "
                    f"has {name}={getattr(trial, name)!r}; a bundle holds one trial"
                )
        if attempt.attempt in seen:
            raise DuplicateRecordError(
                f"attempts[{i}]: attempt {attempt.attempt} of trial {trial.trial_key!r} appears "
                "twice in the bundle; attempt numbers are never reused"
            )
        seen.add(attempt.attempt)
    batches: list[EventBatch] = []
    if events_by_attempt is not None:
        if not isinstance(events_by_attempt, Mapping):
            raise ValueError(
                "events_by_attempt must map an attempt number (or None) to that attempt's "
                f"events, got {type(events_by_attempt).__name__}"
            )
        for label, events in events_by_attempt.items():
            if label is not None:
                check_index("events_by_attempt key", label)
            # Rows encoded once already (the runner's) are taken as they are, not encoded again.
            batch = events if isinstance(events, EncodedEvents) else list(events)
            try:
                kinds, bodies = encode_events(batch)
            except ValueError as exc:
                raise ValueError(f"events_by_attempt[{label!r}]: {exc}") from None
            if bodies:
                batches.append(EventBatch(label, batch, kinds, bodies))
    if metrics is None:
        if undefined:
            raise ValueError("undefined reasons given without metrics; pass metrics too")
        rows: list[tuple[str, float | None, str | None]] = []
    else:
        rows = metric_rows(metrics, {} if undefined is None else undefined)
    return Bundle(trial, verdict, tuple(attempts), tuple(batches), rows)
