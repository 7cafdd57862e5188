"""The StoreWriter contract, run on SQLite (a real file), PostgreSQL (a real server) and memory."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hbeval.scoring import Report, build_report
from hbeval.store import (
    AttemptRecord,
    DuplicateRecordError,
    InMemoryStore,
    PostgresStore,
    Recorder,
    RunRecord,
    SQLiteStore,
    StoreError,
    TrialRecord,
    UnknownRunError,
    make_trial_key,
)
from hbeval_core.events import (
    Claim,
    EventBase,
    FaultInjected,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    ToolCall,
    ToolEnd,
    ToolError,
    ToolStart,
    Usage,
    dump_event,
    iter_event_lines,
)
from hbeval_core.vocab import NO_FAULT_OBSERVED, NO_JUDGED_TRIAL

RUN = "run-1"


BACKENDS = ["sqlite", "postgres", "memory"]


def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Recorder:
    """A new, empty store of the backend named by ``request.param``."""
    if request.param == "sqlite":
        return SQLiteStore(tmp_path / "hb.db")
    if request.param == "postgres":
        return PostgresStore(request.getfixturevalue("postgres_url"))
    return InMemoryStore()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Recorder]:
    made = make_store(request, tmp_path)
    yield made
    made.close()


def reopen(store: Recorder) -> Recorder:
    """The same store as a fresh process would see it (a new connection to the database)."""
    if isinstance(store, SQLiteStore):
        store.close()
        return SQLiteStore(store.path)
    if isinstance(store, PostgresStore):
        store.close()
        return PostgresStore(store.url)
    return store


def run_record(run_id: str = RUN, **kw: Any) -> RunRecord:
    fields: dict[str, Any] = {
        "run_id": run_id,
        "agent_id": "agent-a",
        "battery": "hbeval",
        "measurement_fingerprint": "fp-1",
        "manifest_hash": "m-1",
        "config": {"trials": 3, "seed": 42, "note": "héllo"},
        "created_at": 1_760_000_000.25,
    }
    fields.update(kw)
    return RunRecord(**fields)


def trial(scenario: int, index: int, outcome: str = "pass", **kw: Any) -> TrialRecord:
    fields: dict[str, Any] = {
        "run_id": RUN,
        "trial_key": make_trial_key(scenario, index),
        "task_id": f"task-{scenario % 2}",
        "scenario_index": scenario,
        "trial_index": index,
        "outcome": outcome,
        "fault_type": "tool_failure",
        "domain": "travel",
        "verdict": {"verified": outcome == "pass", "signals": {"S2": True}, "score": 0.5},
        "started_at": 10.0,
        "ended_at": 12.5,
        "latency_ms": 2500.0,
    }
    fields.update(kw)
    return TrialRecord(**fields)


def trace(run_id: str, n_calls: int) -> list[EventBase]:
    """A small trace with every common kind, nested models and unicode."""
    events: list[EventBase] = [RunStart(run_id=run_id, agent_id="agent-a", input="Réserve ✈")]
    for i in range(n_calls):
        call = f"c{i}"
        events.append(ModelStart(run_id=run_id, call_id=f"m{i}"))
        events.append(
            ModelEnd(
                run_id=run_id,
                call_id=f"m{i}",
                text="checking",
                tool_calls=[ToolCall(id=call, name="search", args={"q": i})],
                usage=Usage(input_tokens=10, output_tokens=2),
            )
        )
        events.append(ToolStart(run_id=run_id, call_id=call, tool="search", args={"q": i}))
        if i % 3 == 2:
            events.append(
                FaultInjected(run_id=run_id, call_id=call, mode="error_5xx", effect="error")
            )
            events.append(ToolError(run_id=run_id, call_id=call, tool="search", error="503"))
        else:
            events.append(
                ToolEnd(run_id=run_id, call_id=call, tool="search", result={"hits": [i, None]})
            )
    events.append(Claim(run_id=run_id, name="deliberate_handling"))
    events.append(RunEnd(run_id=run_id, output="done"))
    return events


def test_both_stores_implement_the_protocol(store: Recorder) -> None:
    assert isinstance(store, Recorder)


# ------------------------------------------------------------------------------------- runs
def test_run_round_trip_and_listing(store: Recorder) -> None:
    assert store.start_run(run_record()) is True
    assert store.start_run(run_record("run-2", agent_id="agent-b", created_at=2e9)) is True
    assert store.start_run(run_record("run-0", created_at=1e9)) is True
    assert store.get_run(RUN) == run_record()
    assert store.get_run("nope") is None
    assert [r.run_id for r in store.list_runs()] == ["run-2", RUN, "run-0"]  # newest first
    assert [r.run_id for r in store.list_runs(agent_id="agent-a")] == [RUN, "run-0"]

    store.finish_run(RUN, "completed", finished_at=1_760_000_100.0)
    store = reopen(store)
    got = store.get_run(RUN)
    assert got is not None
    assert (got.status, got.finished_at) == ("completed", 1_760_000_100.0)


def test_returned_records_are_copies(store: Recorder) -> None:
    store.start_run(run_record())
    got = store.get_run(RUN)
    assert got is not None
    got.config["trials"] = 99
    again = store.get_run(RUN)
    assert again is not None and again.config["trials"] == 3


def test_resume_reopens_the_same_run_and_refuses_another_measurement(store: Recorder) -> None:
    store.start_run(run_record())
    store.finish_run(RUN, "interrupted")
    store = reopen(store)
    assert store.start_run(run_record(config={"trials": 3, "concurrency": 8})) is False
    got = store.get_run(RUN)
    assert got is not None
    assert got.status == "running" and got.finished_at is None
    assert got.config == run_record().config  # the first config is kept, never overwritten
    with pytest.raises(StoreError, match="measurement_fingerprint"):
        store.start_run(run_record(measurement_fingerprint="fp-2"))
    with pytest.raises(StoreError, match="agent_id"):
        store.start_run(run_record(agent_id="agent-z"))


def test_finish_run_refuses_unknown_runs_and_statuses(store: Recorder) -> None:
    with pytest.raises(UnknownRunError):
        store.finish_run("ghost", "completed")
    store.start_run(run_record())
    with pytest.raises(ValueError, match="status"):
        store.finish_run(RUN, "done")
    with pytest.raises(ValueError, match="status"):
        store.start_run(run_record("run-x", status="weird"))


# ----------------------------------------------------------------------------------- trials
def test_trials_round_trip_and_completed_keys(store: Recorder) -> None:
    store.start_run(run_record())
    records = [trial(1, 0, "fail"), trial(0, 1), trial(0, 0, "infra_error", verdict=None)]
    for t in records:
        store.record_trial(t)
    store = reopen(store)
    assert store.list_trials(RUN) == sorted(
        records, key=lambda t: (t.scenario_index, t.trial_index)
    )
    assert store.completed_trial_keys(RUN) == {"s000-t0", "s000-t1", "s001-t0"}
    assert store.completed_trial_keys("other") == frozenset()


def test_record_trial_refuses_bad_records(store: Recorder) -> None:
    store.start_run(run_record())
    with pytest.raises(ValueError, match="outcome"):
        store.record_trial(trial(0, 0, "won"))
    with pytest.raises(ValueError, match="latency_ms"):
        store.record_trial(trial(0, 0, latency_ms=math.nan))
    with pytest.raises(ValueError, match=r"verdict\.score"):
        store.record_trial(trial(0, 0, verdict={"score": math.inf}))
    with pytest.raises(ValueError, match="scenario_index"):
        store.record_trial(trial(0, 0, scenario_index=-1))
    with pytest.raises(UnknownRunError):
        store.record_trial(trial(0, 0, run_id="ghost"))
    assert store.list_trials(RUN) == []


def test_resume_adds_no_duplicate_trials(store: Recorder) -> None:
    planned = [make_trial_key(s, t) for s in range(4) for t in range(3)]
    store.start_run(run_record())
    for key in planned[:5]:  # the first run is interrupted after five trials
        store.record_trial(trial(int(key[1:4]), int(key[-1])))
    store = reopen(store)

    assert store.start_run(run_record()) is False
    done = store.completed_trial_keys(RUN)
    for key in planned:
        if key not in done:
            store.record_trial(trial(int(key[1:4]), int(key[-1])))
    # A runner that forgot to skip a completed trial is refused; the stored result stays.
    with pytest.raises(DuplicateRecordError, match="s000-t0"):
        store.record_trial(trial(0, 0, "fail"))
    trials = store.list_trials(RUN)
    assert [t.trial_key for t in trials] == planned
    assert trials[0].outcome == "pass"


# --------------------------------------------------------------------------------- attempts
def test_every_attempt_is_kept_and_none_overwritten(store: Recorder) -> None:
    store.start_run(run_record())
    first = AttemptRecord(
        run_id=RUN,
        trial_key="s000-t0",
        attempt=0,
        outcome="infra_error",
        error="connection reset",
        error_type="ConnectionError",
        infra=True,
        started_at=1.0,
        ended_at=2.0,
    )
    second = AttemptRecord(run_id=RUN, trial_key="s000-t0", attempt=1, outcome="pass")
    other = AttemptRecord(run_id=RUN, trial_key="s001-t0", attempt=0, outcome="fail")
    for a in (second, other, first):
        store.record_attempt(a)
    with pytest.raises(DuplicateRecordError, match="attempt 0"):
        store.record_attempt(
            AttemptRecord(run_id=RUN, trial_key="s000-t0", attempt=0, outcome="pass")
        )
    not_a_bool: Any = 1
    with pytest.raises(ValueError, match="infra"):
        store.record_attempt(
            AttemptRecord(
                run_id=RUN, trial_key="s002-t0", attempt=0, outcome="pass", infra=not_a_bool
            )
        )
    store = reopen(store)
    assert store.list_attempts(RUN) == [first, second, other]
    assert store.list_attempts(RUN, "s000-t0") == [first, second]


# ----------------------------------------------------------------------------------- events
def test_events_round_trip_in_order_across_batches(store: Recorder) -> None:
    store.start_run(run_record())
    a, b = trace("r/s000-t0", 7), trace("r/s001-t0", 2)
    assert store.record_events(RUN, "s001-t0", b) == len(b)
    assert store.record_events(RUN, "s000-t0", a[:10]) == 10
    assert store.record_events(RUN, "s000-t0", iter(a[10:])) == len(a) - 10  # any iterable
    assert store.record_events(RUN, "s000-t0", []) == 0
    store = reopen(store)
    assert list(store.iter_events(RUN, "s000-t0")) == a
    assert list(store.iter_events(RUN)) == a + b  # whole run: by trial key, each in order
    assert list(store.iter_events(RUN, "s009-t9")) == []
    assert list(store.iter_events("ghost")) == []


def test_events_keep_their_attempt(store: Recorder) -> None:
    store.start_run(run_record())
    first, retry = trace("r/a0", 1), trace("r/a1", 2)
    store.record_events(RUN, "s000-t0", first, attempt=0)
    store.record_events(RUN, "s000-t0", retry, attempt=1)
    assert list(store.iter_events(RUN, "s000-t0")) == first + retry
    assert list(store.iter_events(RUN, "s000-t0", attempt=1)) == retry
    assert list(store.iter_events(RUN, attempt=0)) == first


def test_odd_values_are_stored_as_dump_event_writes_them(store: Recorder) -> None:
    """Values only pydantic knows how to write come back as ``read_events`` would read them."""
    store.start_run(run_record())
    odd = ToolStart(run_id="r", call_id="c", tool="t", args={"when": datetime(2026, 1, 2)})
    store.record_events(RUN, "s000-t0", [odd])
    got = list(store.iter_events(RUN, "s000-t0"))
    if not isinstance(store, InMemoryStore):  # memory keeps the objects themselves
        assert got == list(iter_event_lines([dump_event(odd)]))
    else:
        assert got == [odd]
    with pytest.raises(ValueError, match=r"events\[0\]: field 'result' is not valid Unicode"):
        store.record_events(
            RUN, "s000-t0", [ToolEnd(run_id="r", call_id="c", tool="t", result="\ud800")]
        )
    with pytest.raises(ValueError, match="error is not valid Unicode"):
        store.record_attempt(
            AttemptRecord(run_id=RUN, trial_key="k", attempt=0, outcome="fail", error="\udfff")
        )
    with pytest.raises(ValueError, match=r"'verdict\.why' is not valid Unicode"):
        store.record_trial(trial(0, 0, verdict={"why": "\ud800"}))
    assert len(list(store.iter_events(RUN))) == 1


def test_long_trace_reads_back_whole(store: Recorder) -> None:
    """More events than one read page, in one batch and then a few more."""
    store.start_run(run_record())
    events = [ToolStart(run_id="r", call_id=f"c{i}", tool="t", seq=i) for i in range(4500)]
    store.record_events(RUN, "s000-t0", events[:4321])
    store.record_events(RUN, "s000-t0", events[4321:])
    assert list(store.iter_events(RUN, "s000-t0")) == events


def test_a_bad_event_stores_none_of_its_batch(store: Recorder) -> None:
    store.start_run(run_record())
    good = trace("r", 2)
    store.record_events(RUN, "s000-t0", good)
    bad_batch: list[Any] = [
        ToolStart(run_id="r", call_id="x", tool="t"),
        ToolStart(run_id="r", call_id="y", tool="t", args={"limit": math.nan}),
        ToolStart(run_id="r", call_id="z", tool="t"),
    ]
    with pytest.raises(ValueError, match=r"events\[1\].*args\.limit"):
        store.record_events(RUN, "s000-t0", bad_batch)
    with pytest.raises(ValueError, match=r"events\[1\] is a dict"):
        store.record_events(RUN, "s000-t0", [good[0], {"kind": "tool_start"}])
    with pytest.raises(UnknownRunError):
        store.record_events("ghost", "s000-t0", good)
    assert list(store.iter_events(RUN)) == good
    # The next good batch continues right after the stored events, with no gap.
    store.record_events(RUN, "s000-t0", good[:1])
    assert list(store.iter_events(RUN)) == [*good, good[0]]
    if isinstance(store, (SQLiteStore, PostgresStore)):
        seqs = [r[0] for r in store._live().execute("SELECT seq FROM events ORDER BY seq")]
        assert seqs == list(range(len(good) + 1))


# ---------------------------------------------------------------------------------- metrics
def test_metrics_round_trip_with_reasons(store: Recorder) -> None:
    store.start_run(run_record())
    store.record_metrics(
        RUN,
        None,
        {"pei": 0.75, "frr": None, "irs": None, "ti": 3},
        {"frr": NO_FAULT_OBSERVED, "irs": NO_JUDGED_TRIAL},
    )
    store.record_metrics(RUN, "s000-t0", {"pei": 1.0})
    store = reopen(store)
    run_level = store.get_metrics(RUN)
    assert run_level.values == {"pei": 0.75, "frr": None, "irs": None, "ti": 3.0}
    assert run_level.undefined == {"frr": NO_FAULT_OBSERVED, "irs": NO_JUDGED_TRIAL}
    assert store.get_metrics(RUN, "s000-t0").values == {"pei": 1.0}
    assert store.get_metrics(RUN, "s000-t0").undefined == {}
    assert store.get_metrics(RUN, "s999-t0").values == {}


@pytest.mark.parametrize(
    ("metrics", "undefined", "match"),
    [
        ({"frr": None}, {}, "'frr' is None without a reason"),
        ({"pei": 0.5}, {"pei": NO_FAULT_OBSERVED}, "'pei' has the value 0.5 and also"),
        ({"irs": None}, {"irs": "because"}, "'irs': unknown undefined reason"),
        ({"pei": 0.5}, {"csi": NO_FAULT_OBSERVED}, "'csi' has an undefined reason but no entry"),
        ({"pei": math.nan}, {}, "metric 'pei' is nan"),
        ({"ti": math.inf}, {}, "metric 'ti' is inf"),
        ({"pei": "0.5"}, {}, "metric 'pei' must be a number"),
    ],
)
def test_metric_contract_is_enforced_by_name(
    store: Recorder, metrics: dict[str, Any], undefined: dict[str, str], match: str
) -> None:
    store.start_run(run_record())
    with pytest.raises(ValueError, match=match):
        store.record_metrics(RUN, None, {"ok": 1.0, **metrics}, undefined)
    assert store.get_metrics(RUN).values == {}  # "ok" was not stored either


def test_stored_metrics_are_never_overwritten(store: Recorder) -> None:
    store.start_run(run_record())
    store.record_metrics(RUN, "s000-t0", {"pei": 0.5})
    with pytest.raises(DuplicateRecordError):
        store.record_metrics(RUN, "s000-t0", {"frr": 0.9, "pei": 0.7})
    assert store.get_metrics(RUN, "s000-t0").values == {"pei": 0.5}  # frr not stored either
    store.record_metrics(RUN, None, {"pei": 0.6})  # the run level is a separate scope
    assert store.get_metrics(RUN).values == {"pei": 0.6}


# ---------------------------------------------------------------------------------- reports
def report_of(
    run_id: str, version: int, agent_id: str = "agent-a", fingerprint: str | None = "fp-1"
) -> Report:
    """A complete report (of no trial) labelled as the run's; ``run.seed`` tells versions apart."""
    run = {
        "run_id": run_id,
        "agent_id": agent_id,
        "seed": version,
        "trials": 1,
        "fingerprints": {"battery_spec": None, "plan": None, "measurement": fingerprint},
    }
    return build_report(run=run, trials=[])


def test_reports_are_kept_and_listed_for_csi(store: Recorder) -> None:
    for i, (agent, fp) in enumerate(
        [("agent-a", "fp-1"), ("agent-a", "fp-1"), ("agent-a", "fp-2"), ("agent-b", "fp-1")]
    ):
        run_id = f"run-{i}"
        store.start_run(
            run_record(run_id, agent_id=agent, measurement_fingerprint=fp, created_at=100.0 - i)
        )
        store.save_report(run_id, report_of(run_id, 1, agent, fp))
    store.save_report("run-0", report_of("run-0", 2))  # re-scored: kept beside v1
    store.finish_run("run-1", "completed", report_of("run-1", 3))
    store = reopen(store)

    got = store.get_report("run-0")
    assert got is not None and got.to_dict() == report_of("run-0", 2).to_dict()
    got = store.get_report("run-1")
    assert got is not None and got.to_dict() == report_of("run-1", 3).to_dict()
    assert store.get_report("nope") is None
    listed = store.list_reports(agent_id="agent-a", measurement_fingerprint="fp-1")
    assert [(r.run_id, r.report.run.seed) for r in listed] == [("run-1", 3), ("run-0", 2)]
    assert all(r.agent_id == "agent-a" and r.measurement_fingerprint == "fp-1" for r in listed)
    assert [r.run_id for r in store.list_reports()] == ["run-3", "run-2", "run-1", "run-0"]
    assert [r.run_id for r in store.list_reports(measurement_fingerprint="fp-1")] == [
        "run-3",
        "run-1",
        "run-0",
    ]


def test_report_refusals(store: Recorder) -> None:
    store.start_run(run_record())
    with pytest.raises(StoreError, match="measurement_fingerprint"):
        store.save_report(RUN, report_of(RUN, 1, fingerprint="fp-other"))
    with pytest.raises(ValueError, match="load_report"):  # a dict is read as a Report first
        store.save_report(RUN, report_of(RUN, 1).to_dict())  # type: ignore[arg-type]
    good = report_of(RUN, 1)
    # NaN cannot pass validation: model_copy puts it in, as code building a report by hand could
    nan = good.model_copy(update={"metrics": good.metrics.model_copy(update={"pei": math.nan})})
    with pytest.raises(ValueError, match=r"report\.metrics\.pei"):
        store.save_report(RUN, nan)
    with pytest.raises(ValueError, match="NaN"):
        store.finish_run(RUN, "completed", nan)
    with pytest.raises(UnknownRunError):
        store.save_report("ghost", report_of("ghost", 1))
    assert store.get_report(RUN) is None
    got = store.get_run(RUN)
    assert got is not None and got.status == "running"  # the failed finish changed nothing


# ---------------------------------------------------------------------------------- threads
def test_concurrent_workers_lose_nothing(store: Recorder) -> None:
    store.start_run(run_record())
    workers, per_worker = 6, 12
    errors: list[BaseException] = []
    start = threading.Barrier(workers)

    def work(w: int) -> None:
        try:
            start.wait()
            for i in range(per_worker):
                key = make_trial_key(w, i)
                store.record_attempt(
                    AttemptRecord(run_id=RUN, trial_key=key, attempt=0, outcome="pass")
                )
                events = trace(f"r/{key}", 2)
                store.record_events(RUN, key, events[:4])
                store.record_events(RUN, key, events[4:])
                store.record_metrics(RUN, key, {"pei": i / per_worker})
                store.record_trial(trial(w, i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    keys = {make_trial_key(w, i) for w in range(workers) for i in range(per_worker)}
    assert store.completed_trial_keys(RUN) == keys
    assert len(store.list_attempts(RUN)) == len(keys)
    for key in keys:
        assert list(store.iter_events(RUN, key)) == trace(f"r/{key}", 2)
