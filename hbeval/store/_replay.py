"""Idempotent writes: a record that is already stored exactly as given is not an error.

Workers on many machines may deliver the same result twice (a task retried after its first run
wrote but before it reported back). Records are keyed: a trial on (run, trial key), where the key
is ``make_trial_key(scenario, trial)``, and an attempt on (run, trial key, attempt). A second
insert of a key is accepted as a no-op when what it carries equals what is stored, and refused
with :class:`DuplicateRecordError` when anything differs. The stores try the insert first and
only compare on a clash, so the usual path costs nothing extra; the comparison reads through the
``StoreWriter`` reads, so every store compares the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._bundle import Bundle
from ._codec import encode_events
from .records import AttemptRecord, TrialRecord

if TYPE_CHECKING:
    from .protocol import StoreWriter


def trial_stored_as(store: StoreWriter, trial: TrialRecord) -> bool:
    """True when the store holds ``trial`` (same key) with exactly these values."""
    for stored in store.list_trials(trial.run_id):
        if stored.trial_key == trial.trial_key:
            return stored == trial
    return False


def attempt_stored_as(store: StoreWriter, attempt: AttemptRecord) -> bool:
    """True when the store holds ``attempt`` (same key) with exactly these values."""
    for stored in store.list_attempts(attempt.run_id, attempt.trial_key):
        if stored.attempt == attempt.attempt:
            return stored == attempt
    return False


def bundle_stored_as(store: StoreWriter, bundle: Bundle) -> bool:
    """True when the whole bundle is stored as given, and nothing more of its trial.

    The trial, the set of its attempts, its metrics (with their reasons) and its events (each
    with its attempt label, in order) must all equal the bundle's. The store must have
    ``export_events`` (every store shipped here has).
    """
    trial = bundle.trial
    run_id, key = trial.run_id, trial.trial_key
    if not trial_stored_as(store, trial):
        return False
    if store.list_attempts(run_id, key) != sorted(bundle.attempts, key=lambda a: a.attempt):
        return False
    stored_metrics = store.get_metrics(run_id, key)
    wanted_values = {name: value for name, value, _ in bundle.metrics}
    wanted_reasons = {name: reason for name, _, reason in bundle.metrics if reason is not None}
    if stored_metrics.values != wanted_values or stored_metrics.undefined != wanted_reasons:
        return False
    stored = list(store.export_events(run_id, key))  # type: ignore[attr-defined]
    wanted = [(b.attempt, body) for b in bundle.batches for body in b.bodies]
    if [label for _, label, _ in stored] != [label for label, _ in wanted]:
        return False
    _, stored_bodies = encode_events(ev for _, _, ev in stored)
    return stored_bodies == [body for _, body in wanted]
