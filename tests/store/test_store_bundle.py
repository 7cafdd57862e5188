"""``record_trial_bundle``: a finished trial in one write, on SQLite (a real file) and in memory.

The bundle must store exactly what the separate calls store, refuse exactly what they refuse,
and, being one write, store nothing of itself when any part of it is refused.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hbeval.store import (
    AttemptRecord,
    DuplicateRecordError,
    InMemoryStore,
    PostgresStore,
    Recorder,
    SQLiteStore,
    UnknownRunError,
    make_trial_key,
)
from hbeval_core.events import ToolStart, dump_event
from hbeval_core.vocab import NO_FAULT_OBSERVED

from .test_store_recorder import BACKENDS, RUN, make_store, reopen, run_record, trace, trial

KEY = make_trial_key(0, 0)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Recorder]:
    made = make_store(request, tmp_path)
    made.start_run(run_record())
    yield made
    made.close()


def attempt(number: int, outcome: str = "pass", key: str = KEY, **kw: Any) -> AttemptRecord:
    return AttemptRecord(
        run_id=RUN, trial_key=key, attempt=number, outcome=outcome, started_at=10.0 + number, **kw
    )


METRICS: dict[str, float | None] = {"pei": 0.75, "frr": None, "ti": 5.0}
UNDEFINED = {"frr": NO_FAULT_OBSERVED}


def snapshot(store: Recorder) -> dict[str, Any]:
    """Everything a reader can see of the run, for before/after comparisons."""
    return {
        "trials": store.list_trials(RUN),
        "attempts": store.list_attempts(RUN),
        "events": [dump_event(e) for e in store.iter_events(RUN)],
        "metrics": {
            t.trial_key: store.get_metrics(RUN, t.trial_key) for t in store.list_trials(RUN)
        }
        | {KEY: store.get_metrics(RUN, KEY)},
        "completed": store.completed_trial_keys(RUN),
    }


def test_a_bundle_stores_what_the_separate_calls_store(store: Recorder) -> None:
    first, second = trace(f"{RUN}/{KEY}", 2), trace(f"{RUN}/{KEY}", 3)
    stored = store.record_trial_bundle(
        trial(0, 0, attempts=2),
        [attempt(0, "infra_error", infra=True, error="worker died"), attempt(1)],
        {0: first, 1: second},
        metrics=METRICS,
        undefined=UNDEFINED,
    )
    assert stored == len(first) + len(second)

    separate = InMemoryStore()
    separate.start_run(run_record())
    separate.record_attempt(attempt(0, "infra_error", infra=True, error="worker died"))
    separate.record_events(RUN, KEY, first, attempt=0)
    separate.record_attempt(attempt(1))
    separate.record_events(RUN, KEY, second, attempt=1)
    separate.record_trial(trial(0, 0, attempts=2))
    separate.record_metrics(RUN, KEY, METRICS, UNDEFINED)

    store = reopen(store)
    assert snapshot(store) == snapshot(separate)
    assert [dump_event(e) for e in store.iter_events(RUN, KEY, attempt=1)] == [
        dump_event(e) for e in second
    ]
    assert store.get_metrics(RUN, KEY).undefined == UNDEFINED


def test_bundle_events_continue_after_events_already_stored(store: Recorder) -> None:
    early = trace(f"{RUN}/{KEY}", 1)
    store.record_attempt(attempt(0, "infra_error", infra=True))
    store.record_events(RUN, KEY, early, attempt=0)
    late = trace(f"{RUN}/{KEY}", 2)
    assert store.record_trial_bundle(trial(0, 0, attempts=2), [attempt(1)], {1: late}) == len(late)
    assert [dump_event(e) for e in store.iter_events(RUN, KEY)] == [
        dump_event(e) for e in early + late
    ]
    assert [a.attempt for a in store.list_attempts(RUN, KEY)] == [0, 1]
    assert store.get_metrics(RUN, KEY).values == {}  # no metrics given, none stored


def test_a_bundle_without_events_or_attempts_is_just_the_trial(store: Recorder) -> None:
    assert store.record_trial_bundle(trial(0, 0), [], {0: []}) == 0
    assert store.completed_trial_keys(RUN) == frozenset({KEY})
    assert list(store.iter_events(RUN, KEY)) == []
    if isinstance(store, (SQLiteStore, PostgresStore)):  # an empty batch makes no event stream
        count = store._live().execute("SELECT COUNT(*) FROM event_streams").fetchone()
        assert tuple(count) == (0,)


@pytest.mark.parametrize(
    "clash",
    ["attempt", "trial", "metric"],
)
def test_a_duplicate_anywhere_refuses_the_whole_bundle(store: Recorder, clash: str) -> None:
    other = make_trial_key(1, 0)
    store.record_trial_bundle(
        trial(1, 0), [attempt(0, key=other)], {0: trace(f"{RUN}/{other}", 1)}, metrics={"pei": 1.0}
    )
    if clash == "attempt":
        store.record_attempt(attempt(1))
    elif clash == "trial":
        store.record_trial(trial(0, 0))
    else:
        store.record_metrics(RUN, KEY, {"ti": 4.0})
    before = snapshot(store)
    with pytest.raises(DuplicateRecordError, match="already recorded"):
        store.record_trial_bundle(
            trial(0, 0, attempts=2),
            [attempt(0), attempt(1)],
            {0: trace(f"{RUN}/{KEY}", 2), 1: trace(f"{RUN}/{KEY}", 1)},
            metrics=METRICS,
            undefined=UNDEFINED,
        )
    store = reopen(store)
    assert snapshot(store) == before


def test_a_stored_bundle_delivered_again_is_a_no_op(store: Recorder) -> None:
    args: tuple[Any, ...] = (trial(0, 0), [attempt(0)], {0: trace(f"{RUN}/{KEY}", 1)})
    assert store.record_trial_bundle(*args, metrics={"pei": 1.0}) == len(args[2][0])
    before = snapshot(store)
    assert store.record_trial_bundle(*args, metrics={"pei": 1.0}) == 0  # a retried delivery
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"trial": trial(0, 0, outcome="fail")}, "attempt 0 of trial 's000-t0'"),
        ({"attempts": [attempt(0, "fail")]}, "attempt 0 of trial 's000-t0'"),
        ({"events_by_attempt": {0: trace(f"{RUN}/{KEY}", 2)}}, "attempt 0 of trial 's000-t0'"),
        ({"events_by_attempt": {None: trace(f"{RUN}/{KEY}", 1)}}, "attempt 0 of trial"),
        ({"metrics": {"pei": 0.5}}, "attempt 0 of trial 's000-t0'"),
        ({"metrics": None}, "attempt 0 of trial 's000-t0'"),
        ({"attempts": [attempt(0), attempt(1)]}, "attempt 0 of trial 's000-t0'"),
    ],
)
def test_a_different_bundle_under_a_stored_key_is_refused(
    store: Recorder, change: dict[str, Any], message: str
) -> None:
    """Keyed on (run, scenario, trial, attempt): anything different under the key is refused."""
    events = trace(f"{RUN}/{KEY}", 1)
    store.record_trial_bundle(trial(0, 0), [attempt(0)], {0: events}, metrics={"pei": 1.0})
    before = snapshot(store)
    bundle: dict[str, Any] = {
        "trial": trial(0, 0),
        "attempts": [attempt(0)],
        "events_by_attempt": {0: events},
        "metrics": {"pei": 1.0},
    }
    bundle.update(change)
    with pytest.raises(DuplicateRecordError, match=message):
        store.record_trial_bundle(
            bundle.pop("trial"), bundle.pop("attempts"), bundle.pop("events_by_attempt"), **bundle
        )
    assert snapshot(store) == before


def test_single_records_delivered_again_are_no_ops(store: Recorder) -> None:
    store.record_attempt(attempt(0))
    store.record_attempt(attempt(0))
    store.record_trial(trial(0, 0))
    store.record_trial(trial(0, 0))
    assert store.list_attempts(RUN) == [attempt(0)]
    assert store.list_trials(RUN) == [trial(0, 0)]
    with pytest.raises(DuplicateRecordError, match="attempt 0"):
        store.record_attempt(attempt(0, "fail"))
    with pytest.raises(DuplicateRecordError, match="s000-t0"):
        store.record_trial(trial(0, 0, latency_ms=1.0))


def test_the_first_refusal_is_the_same_in_every_store(store: Recorder) -> None:
    """Attempts are written (and refused) before the trial, the trial before its metrics."""
    store.record_attempt(attempt(0))
    store.record_trial(trial(0, 0))
    with pytest.raises(DuplicateRecordError, match=r"attempt 0 of trial 's000-t0' \(run"):
        store.record_trial_bundle(trial(0, 0), [attempt(0, "fail")])
    with pytest.raises(DuplicateRecordError, match=r"trial 's000-t0' of run 'run-1'"):
        store.record_trial_bundle(trial(0, 0), [attempt(1)])


def test_an_unknown_run_is_refused(store: Recorder) -> None:
    with pytest.raises(UnknownRunError, match="never started"):
        store.record_trial_bundle(trial(0, 0, run_id="nope"), [])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trial": trial(0, 0, outcome="great")}, "outcome must be one of"),
        ({"attempts": [attempt(0, outcome="great")]}, r"attempts\[0\]: outcome must be one of"),
        ({"attempts": [attempt(0, key="s009-t9")]}, r"attempts\[0\]\.trial_key is 's009-t9'"),
        ({"attempts": attempt(0)}, "attempts must be a sequence"),
        ({"events_by_attempt": {-1: []}}, "events_by_attempt key must be an integer >= 0"),
        ({"events_by_attempt": [[]]}, "events_by_attempt must map an attempt number"),
        (
            {
                "events_by_attempt": {
                    0: [ToolStart(run_id="r", call_id="c", tool="t", args={"x": math.nan})]
                }
            },
            r"events_by_attempt\[0\]: events\[0\]: field 'args.x' is NaN or infinite",
        ),
        ({"metrics": {"pei": None}}, "undefined is never zero"),
        ({"metrics": {"pei": math.inf}}, "NaN and infinities are never stored"),
        (
            {"metrics": None, "undefined": {"frr": NO_FAULT_OBSERVED}},
            "undefined reasons given without metrics",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_bundles_are_refused_by_part_and_store_nothing(
    store: Recorder, kwargs: dict[str, Any], message: str
) -> None:
    bundle: dict[str, Any] = {
        "trial": trial(0, 0),
        "attempts": [attempt(0)],
        "events_by_attempt": {0: trace(f"{RUN}/{KEY}", 1)},
        "metrics": {"pei": 1.0},
    }
    bundle.update(kwargs)
    before = snapshot(store)
    with pytest.raises(ValueError, match=message):
        store.record_trial_bundle(
            bundle.pop("trial"), bundle.pop("attempts"), bundle.pop("events_by_attempt"), **bundle
        )
    assert snapshot(store) == before


def test_an_attempt_number_twice_in_one_bundle_is_refused(store: Recorder) -> None:
    with pytest.raises(DuplicateRecordError, match=r"attempts\[1\]: attempt 0 .* twice"):
        store.record_trial_bundle(trial(0, 0), [attempt(0), attempt(0, "fail")])
    assert store.list_attempts(RUN) == []


def test_a_mid_bundle_database_failure_rolls_everything_back(tmp_path: Path) -> None:
    """SQLite: an error after some rows went in (attempts, a first chunk of events) keeps none."""
    store: Recorder = SQLiteStore(tmp_path / "hb.db")
    store.start_run(run_record())
    store.record_trial_bundle(trial(1, 0), [attempt(0, key="s001-t0")], metrics={"pei": 1.0})
    before = snapshot(store)
    conn = sqlite3.connect(tmp_path / "hb.db")
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON event_rows WHEN NEW.seq >= 130 "
        "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    conn.commit()
    conn.close()
    events = trace(f"{RUN}/{KEY}", 40)  # > 130 events: several INSERT chunks, the later refused
    with pytest.raises(sqlite3.IntegrityError, match="disk says no"):
        store.record_trial_bundle(
            trial(0, 0), [attempt(0)], {0: events}, metrics=METRICS, undefined=UNDEFINED
        )
    store = reopen(store)
    assert snapshot(store) == before
    store.close()
