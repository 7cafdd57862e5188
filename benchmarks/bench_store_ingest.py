"""SQLite event ingest: ``SQLiteStore.record_events`` vs a bare ``executemany``, side by side.

Builds realistic hb-events/1 traces (tool_start / tool_end / model_end pydantic objects, grouped
into trials), then, interleaved in one process, times:

- ours: ``record_events(run_id, trial_key, batch)`` per batch into a fresh temp-file store
  (validation, serialisation, the run check, seq numbering and one transaction per batch);
- bare: ``executemany`` of rows serialised beforehand with ``dump_event`` into the same schema
  (a fresh store's file, so same table, indexes and pragmas), one transaction per batch;
- floor (context): the store's own multi-row INSERTs of rows serialised beforehand, i.e. ours
  without validation and serialisation.

Prints the median events/s of each by wall clock (``perf_counter``) and per CPU-second of this
process, the ratio ours/bare (the headline), bytes per event on disk, how fast the serialisers
are alone (ours, ``dump_event``, and for reference pydantic-core's own ``to_json`` with
``exclude_defaults``, which is not a drop-in: it does not put ``kind`` first and writes NaN as
null), and the load average: on a shared machine the wall-clock rates fall with other
processes' load, the CPU-time rates and the interleaved ratios much less.

- bare, serialising inside: the same ``executemany``, each event serialised inside the timed
  block with pydantic's own ``model_dump_json(exclude_defaults=True)`` (not a drop-in: ``kind``
  left out, NaN as null; the cheaper of the obvious ways). Against ``ours (encodes)`` this
  compares like with like the other way: both start from pydantic events.
- ours, pre-encoded: ``record_events`` of the same batches handed over as the runner hands a
  trial's events to the store: encoded once beforehand (``storable_events`` encodes them when
  it checks them, and the store writes those rows as they are). Against ``bare`` this compares
  like with like: both start from serialised rows.

Then, per finished trial (one attempt, its events, the trial record, its metrics), interleaved:
``record_trial_bundle`` (one transaction), with plain events and with events encoded once as
the runner passes them, against a plain transaction writing the same rows with ``sqlite3``
(the anchor: rows serialised beforehand, one ``executemany`` of the events, ``BEGIN``/``COMMIT``),
and the separate calls (four transactions) for context. Goals: ours/bare at least 1.0 and
bundles at least 0.9 of the plain transaction, by CPU time.

The table's rows (``headline``, used by ``run_all.py``), events per CPU-second as ours / the
anchor's (median over rounds of each round's ratio, 95% bootstrap interval over rounds), each
timed write into a fresh store file, inside the clock exactly the writes (one transaction per
batch) and, for plain events, the serialisation: encoded events against ``executemany`` and
against the store's own multi-row INSERT alone (rows serialised before the clock for all
three), plain events against both with each event serialised inside the clock by pydantic's
``model_dump_json(exclude_defaults=True)``, and bundles against the plain transaction.

Last, where encoding a plain event goes (with orjson): the per-class builder with and without
its walk of the free-form values, orjson on the built dicts, and the whole ``encode_events``.

    .venv/bin/python benchmarks/bench_store_ingest.py [--events N] [--batch B] [--repeats R]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _table import Row, bootstrap, median_ratio

from hbeval.store import AttemptRecord, RunRecord, SQLiteStore, TrialRecord, make_trial_key
from hbeval.store._codec import (
    _EVENT_INFO,
    _ORJSON_OPTIONS,
    _is_plain,
    _nested,
    encode_events,
    encoded_events,
)
from hbeval.store._validate import check_trial
from hbeval.store.sqlite import _insert_rows
from hbeval_core.events import EventBase, ModelEnd, ToolCall, ToolEnd, ToolStart, Usage, dump_event

RUN_ID = "bench-run"


def build_trials(n_events: int, per_trial: int) -> list[tuple[str, list[EventBase]]]:
    """Trials of ``per_trial`` events each: model_end issuing a call, tool_start, tool_end, ..."""
    trials: list[tuple[str, list[EventBase]]] = []
    made = 0
    scenario = 0
    while made < n_events:
        key = make_trial_key(scenario // 3, scenario % 3)
        run = f"{RUN_ID}/{key}"
        events: list[EventBase] = []
        step = 0
        t = 1_760_000_000.0 + scenario
        while len(events) < per_trial and made + len(events) < n_events:
            call = f"call_{scenario}_{step}"
            events.append(
                ModelEnd(
                    run_id=run,
                    seq=len(events),
                    ts=t,
                    step=step,
                    call_id=f"model_{scenario}_{step}",
                    text="Checking fares before booking; the cheapest direct flight wins.",
                    tool_calls=[
                        ToolCall(
                            id=call, name="search_flights", args={"origin": "SFO", "to": "JFK"}
                        )
                    ],
                    usage=Usage(input_tokens=812 + step, output_tokens=41),
                    latency_ms=640.2,
                )
            )
            events.append(
                ToolStart(
                    run_id=run,
                    seq=len(events),
                    ts=t + 0.64,
                    step=step,
                    call_id=call,
                    tool="search_flights",
                    args={"origin": "SFO", "to": "JFK", "date": "2026-05-01", "limit": 5},
                )
            )
            events.append(
                ToolEnd(
                    run_id=run,
                    seq=len(events),
                    ts=t + 0.76,
                    step=step,
                    call_id=call,
                    tool="search_flights",
                    result={
                        "flights": [{"id": "UA12", "price": 312.5}, {"id": "DL9", "price": 298}]
                    },
                    latency_ms=118.4,
                )
            )
            step += 1
            t += 1.0
        events = events[: n_events - made]
        trials.append((key, events))
        made += len(events)
        scenario += 1
    return trials


def batches_of(
    trials: list[tuple[str, list[EventBase]]], batch: int
) -> list[tuple[str, list[EventBase]]]:
    """Each trial's events cut into batches of at most ``batch`` (a recorder flushing a buffer)."""
    return [(key, evs[i : i + batch]) for key, evs in trials for i in range(0, len(evs), batch)]


def fresh_store(folder: str) -> Path:
    """A new store file with one started run, closed again; returns its path."""
    path = Path(tempfile.mkdtemp(dir=folder)) / "hbeval.db"
    with SQLiteStore(path) as store:
        store.start_run(
            RunRecord(
                run_id=RUN_ID, agent_id="bench", battery="hbeval", measurement_fingerprint="f"
            )
        )
    return path


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.iterdir() if p.name.startswith(path.name))


class Timed:
    """Wall-clock (perf_counter) and process CPU time of a block.

    CPU time counts only this process (kernel time included, so SQLite's writes count), which
    keeps the rates meaningful when the machine is shared with other busy processes.
    """

    def __enter__(self) -> Timed:
        gc.collect()
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def run_ours(folder: str, batches: list[tuple[str, list[EventBase]]]) -> tuple[Timed, int]:
    path = fresh_store(folder)
    store = SQLiteStore(path)
    record = store.record_events
    with Timed() as timed:
        for key, evs in batches:
            record(RUN_ID, key, evs)
    store.close()
    return timed, db_bytes(path)


def raw_connection(folder: str, n_streams: int) -> tuple[sqlite3.Connection, Path]:
    """A fresh store's file opened with plain sqlite3, same pragmas, its trial streams created."""
    path = fresh_store(folder)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = NORMAL")  # WAL is already set in the file
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executemany(
        "INSERT INTO event_streams (stream_id, run_id, trial_key) VALUES (?, ?, ?)",
        [(i, RUN_ID, f"k{i}") for i in range(1, n_streams + 1)],
    )
    return conn, path


def run_bare(folder: str, rows: list[list[tuple[int, int, None, str, str]]]) -> tuple[Timed, int]:
    conn, path = raw_connection(folder, max(r[0][0] for r in rows))
    sql = "INSERT INTO event_rows (stream_id, seq, attempt, kind, body) VALUES (?, ?, ?, ?, ?)"
    with Timed() as timed:
        for batch in rows:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(sql, batch)
            conn.execute("COMMIT")
    conn.close()
    return timed, db_bytes(path)


def run_bare_serialising(
    folder: str, batches: list[tuple[str, list[EventBase]]]
) -> tuple[Timed, int]:
    """The anchor that pays for serialisation too: each event through pydantic's own
    ``model_dump_json(exclude_defaults=True)`` (Rust; the obvious way to write a pydantic event,
    and cheaper than ``dump_event``), then the same ``executemany`` as ``run_bare``."""
    streams: dict[str, int] = {}
    for key, _ in batches:
        streams.setdefault(key, len(streams) + 1)
    conn, path = raw_connection(folder, len(streams))
    sql = "INSERT INTO event_rows (stream_id, seq, attempt, kind, body) VALUES (?, ?, ?, ?, ?)"
    next_seq: dict[str, int] = {}
    with Timed() as timed:
        for key, evs in batches:
            stream, start = streams[key], next_seq.get(key, 0)
            rows = [
                (stream, start + i, None, ev.kind, ev.model_dump_json(exclude_defaults=True))  # type: ignore[attr-defined]
                for i, ev in enumerate(evs)
            ]
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(sql, rows)
            conn.execute("COMMIT")
            next_seq[key] = start + len(evs)
    conn.close()
    return timed, db_bytes(path)


def run_floor(folder: str, pre: list[tuple[int, int, list[str], list[str]]]) -> tuple[Timed, int]:
    conn, path = raw_connection(folder, max(p[0] for p in pre))
    with Timed() as timed:
        for stream, start, kinds, bodies in pre:
            conn.execute("BEGIN IMMEDIATE")
            _insert_rows(conn, stream, None, start, kinds, bodies)
            conn.execute("COMMIT")
    conn.close()
    return timed, db_bytes(path)


def run_floor_serialising(
    folder: str, batches: list[tuple[str, list[EventBase]]]
) -> tuple[Timed, int]:
    """The store's own multi-row INSERTs, each event serialised inside the clock with pydantic's
    ``model_dump_json(exclude_defaults=True)``: the floor for plain events."""
    streams: dict[str, int] = {}
    for key, _ in batches:
        streams.setdefault(key, len(streams) + 1)
    conn, path = raw_connection(folder, len(streams))
    next_seq: dict[str, int] = {}
    with Timed() as timed:
        for key, evs in batches:
            stream, start = streams[key], next_seq.get(key, 0)
            kinds = [ev.kind for ev in evs]  # type: ignore[attr-defined]
            bodies = [ev.model_dump_json(exclude_defaults=True) for ev in evs]
            conn.execute("BEGIN IMMEDIATE")
            _insert_rows(conn, stream, None, start, kinds, bodies)
            conn.execute("COMMIT")
            next_seq[key] = start + len(evs)
    conn.close()
    return timed, db_bytes(path)


def bare_rows(
    batches: list[tuple[str, list[EventBase]]],
) -> list[list[tuple[int, int, None, str, str]]]:
    """The rows ``record_events`` would write, serialised beforehand with ``dump_event``."""
    streams: dict[str, int] = {}
    next_seq: dict[str, int] = {}
    out = []
    for key, evs in batches:
        stream = streams.setdefault(key, len(streams) + 1)
        start = next_seq.get(key, 0)
        out.append(
            [
                (stream, start + i, None, ev.kind, dump_event(ev))  # type: ignore[attr-defined]
                for i, ev in enumerate(evs)
            ]
        )
        next_seq[key] = start + len(evs)
    return out


METRICS: dict[str, float | None] = {"pei": 0.8, "frr": 0.5, "irs": None, "ti": 4.2}
UNDEFINED = {"irs": "no_fault_observed"}


def trial_records(key: str, index: int) -> tuple[AttemptRecord, TrialRecord]:
    attempt = AttemptRecord(run_id=RUN_ID, trial_key=key, attempt=0, outcome="pass")
    trial = TrialRecord(
        run_id=RUN_ID,
        trial_key=key,
        task_id="t",
        scenario_index=index,
        trial_index=0,
        outcome="pass",
        verdict={"passed": True},
    )
    return attempt, trial


def run_per_trial(
    folder: str, trials: list[tuple[str, list[EventBase]]], bundle: bool
) -> tuple[Timed, int]:
    """Record whole trials as the runner does: separate calls, or one bundle per trial."""
    path = fresh_store(folder)
    store = SQLiteStore(path)
    records = [trial_records(key, index) for index, (key, _) in enumerate(trials)]
    with Timed() as timed:
        for (key, evs), (attempt, trial) in zip(trials, records, strict=True):
            if bundle:
                store.record_trial_bundle(
                    trial, [attempt], {0: evs}, metrics=METRICS, undefined=UNDEFINED
                )
            else:
                store.record_attempt(attempt)
                store.record_events(RUN_ID, key, evs, attempt=0)
                store.record_trial(trial)
                store.record_metrics(RUN_ID, key, METRICS, UNDEFINED)
    store.close()
    return timed, db_bytes(path)


def plain_rows(
    trials: list[tuple[str, list[EventBase]]],
) -> list[tuple[tuple[Any, ...], tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """Per trial, the rows a bundle writes (attempt, trial, events, metrics), serialised."""
    out = []
    for index, (key, evs) in enumerate(trials):
        attempt, trial = trial_records(key, index)
        kinds, bodies = encode_events(evs)
        out.append(
            (
                (RUN_ID, key, 0, attempt.outcome, None, None, 0, None, None),
                (RUN_ID, key, trial.task_id, index, 0, None, None, trial.outcome,
                 check_trial(trial), None, None, None, trial.attempts),
                [(i, None, k, b) for i, (k, b) in enumerate(zip(kinds, bodies, strict=True))],
                [(RUN_ID, key, name, value, UNDEFINED.get(name)) for name, value in METRICS.items()],
            )
        )  # fmt: skip
    return out


def run_plain_transaction(
    folder: str,
    trials: list[tuple[str, list[EventBase]]],
    rows: list[
        tuple[tuple[Any, ...], tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]]]
    ],
) -> tuple[Timed, int]:
    """The anchor: each trial's rows written with plain sqlite3 in one transaction."""
    conn, path = raw_connection(folder, 0)
    attempt_sql = (
        "INSERT INTO attempts (run_id, trial_key, attempt, outcome, error, error_type, infra, "
        "started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    trial_sql = (
        "INSERT INTO trials (run_id, trial_key, task_id, scenario_index, trial_index, fault_type, "
        "domain, outcome, verdict, started_at, ended_at, latency_ms, attempts) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    event_sql = (
        "INSERT INTO event_rows (stream_id, seq, attempt, kind, body) VALUES (?, ?, ?, ?, ?)"
    )
    metric_sql = (
        "INSERT INTO metrics (run_id, trial_key, name, value, reason) VALUES (?, ?, ?, ?, ?)"
    )
    with Timed() as timed:
        for (key, _), (attempt, trial, events, metrics) in zip(trials, rows, strict=True):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(attempt_sql, attempt)
            stream = conn.execute(
                "INSERT INTO event_streams (run_id, trial_key) VALUES (?, ?)", (RUN_ID, key)
            ).lastrowid
            conn.executemany(event_sql, [(stream, *row) for row in events])
            conn.execute(trial_sql, trial)
            conn.executemany(metric_sql, metrics)
            conn.execute("COMMIT")
    conn.close()
    return timed, db_bytes(path)


def pre_encoded(trials: list[tuple[str, list[EventBase]]]) -> list[tuple[str, list[EventBase]]]:
    """The same trials with each batch's rows made beforehand, as ``storable_events`` does."""
    return [(key, encoded_events(evs, *encode_events(evs))) for key, evs in trials]


def encode_breakdown(events: list[EventBase], repeats: int) -> dict[str, float]:
    """CPU us per event of each part of ``encode_events`` on plain events, interleaved.

    The per-class builder (attribute reads, the default tests of ``exclude_defaults``, the
    NaN tests, nested models) with and without its walk of the free-form values (``args``,
    ``result``, ``attrs``: every value must be exact JSON data with finite floats), orjson on
    the built dicts, and the whole loop (decoding to text and the lists included).
    """
    builders = [(_EVENT_INFO[type(ev)][0], ev) for ev in events]
    built = [b(ev) for b, ev in builders]  # type: ignore[misc]
    free = [
        v
        for ev in events
        for name in ("args", "result", "attrs")
        if (v := ev.__dict__.get(name)) is not None and v.__class__ not in (str, int)
    ]
    import orjson  # the breakdown is of the orjson path (hbeval[all])

    to_json = partial(orjson.dumps, default=_nested, option=_ORJSON_OPTIONS)

    def builder() -> None:
        for b, ev in builders:
            b(ev)  # type: ignore[misc]

    def walk() -> None:
        for v in free:
            _is_plain(v)

    def orjson_decode() -> None:
        for d in built:
            to_json(d).decode()

    parts: dict[str, Callable[[], object]] = {
        "builder, walk included": builder,
        "walk of free-form values alone": walk,
        "orjson + decode": orjson_decode,
        "encode_events (all)": lambda: encode_events(events),
    }
    got: dict[str, list[float]] = {k: [] for k in parts}
    for _ in range(repeats):
        for name, fn in parts.items():
            with Timed() as timed:
                fn()
            got[name].append(timed.cpu / len(events) * 1e6)
    return {name: statistics.median(v) for name, v in got.items()}


def rate(fn: Callable[[], object], n: int) -> float:
    with Timed() as timed:
        fn()
    return n / timed.wall


def headline(
    n_events: int, rounds: int, *, bundle_trials: int = 400, batch: int = 500
) -> list[Row]:
    """The table's rows: events per CPU-second of ``record_events`` (encoded beforehand and
    plain) against ``executemany`` and the multi-row INSERT floor, and bundles against a plain
    transaction; interleaved rounds, a fresh store file per timed write."""
    batches = batches_of(build_trials(n_events, 1500), batch)
    encoded = pre_encoded(batches)
    rows = bare_rows(batches)
    pre = [(b[0][0], b[0][1], [r[3] for r in b], [r[4] for r in b]) for b in rows]
    small = [(make_trial_key(i, 0), build_trials(45, 45)[0][1]) for i in range(bundle_trials)]
    small_encoded, small_rows = pre_encoded(small), plain_rows(small)
    folder = tempfile.mkdtemp(prefix="hbeval-bench-")
    runs: dict[str, Callable[[], tuple[Timed, int]]] = {
        "ours encoded": lambda: run_ours(folder, encoded),
        "ours plain": lambda: run_ours(folder, batches),
        "executemany": lambda: run_bare(folder, rows),
        "floor": lambda: run_floor(folder, pre),
        "executemany serialising": lambda: run_bare_serialising(folder, batches),
        "floor serialising": lambda: run_floor_serialising(folder, batches),
        "plain transaction": lambda: run_plain_transaction(folder, small, small_rows),
        "bundle encoded": lambda: run_per_trial(folder, small_encoded, bundle=True),
    }
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(rounds + 1):  # the first round warms up
        names = list(runs)
        for name in names[r % len(names) :] + names[: r % len(names)]:
            timed, _ = runs[name]()
            if r:
                cpu[name].append(timed.cpu)
    shutil.rmtree(folder, ignore_errors=True)
    pre_s = "rows serialised before the clock"
    plain_s = "each event serialised inside (ours: encode_events; anchor: model_dump_json)"
    common = f"{n_events:,} events in batches of {batch}, one transaction each; process CPU"
    out = []
    for ours, anchor, label, inside, goal in (
        ("ours encoded", "executemany", "executemany", pre_s, 1.0),
        ("ours encoded", "floor", "the store's multi-row INSERT alone", pre_s, None),
        ("ours plain", "executemany serialising", "executemany", plain_s, 1.0),
        ("ours plain", "floor serialising", "the store's multi-row INSERT alone", plain_s, None),
    ):
        # events per second: ours / anchor = anchor's time / ours.
        point, lo, hi = bootstrap([cpu[anchor], cpu[ours]], median_ratio)
        kind = "encoded beforehand" if ours == "ours encoded" else "plain events"
        out.append(
            Row(f"SQLite record_events, {kind}, events/s", label, f"{inside}; {common}",
                point, lo, hi, "x", goal, better="ge",
                why=INGEST_WHY if ours == "ours plain" else "")
        )  # fmt: skip
    point, lo, hi = bootstrap([cpu["plain transaction"], cpu["bundle encoded"]], median_ratio)
    out.append(
        Row("SQLite record_trial_bundle, encoded, trials/s", "plain sqlite3 transaction (executemany)",
            f"{bundle_trials} trials of 45 events, attempt, trial, 4 metrics, one transaction "
            "each; rows serialised before; process CPU", point, lo, hi, "x", 0.9, better="ge")
    )  # fmt: skip
    return out


INGEST_WHY = (
    "Plain events are encoded inside the store (exclude-defaults builder, a walk of free-form "
    "values for NaN and Enum members, orjson): about 4 us per event against pydantic's "
    "model_dump_json, which is not a drop-in (NaN as null, kind not first)."
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=500, help="events per record_events call")
    ap.add_argument("--per-trial", type=int, default=1500, help="events per trial")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default=None, help="folder for the temp stores (default: system temp)")
    ap.add_argument(
        "--bundle-trials", type=int, default=400, help="small trials for the per-trial comparison"
    )
    args = ap.parse_args()

    trials = build_trials(args.events, args.per_trial)
    batches = batches_of(trials, args.batch)
    encoded = pre_encoded(batches)
    events = [ev for _, evs in trials for ev in evs]
    n = len(events)
    rows = bare_rows(batches)
    pre = [(b[0][0], b[0][1], [r[3] for r in b], [r[4] for r in b]) for b in rows]
    load_before = os.getloadavg()[0]
    folder = tempfile.mkdtemp(prefix="hbeval-bench-", dir=args.dir)

    names = (
        "ours  record_events (encodes)",
        "ours  record_events, pre-encoded",
        "bare  executemany (pre-serialised)",
        "floor multi-row INSERT",
        "bare  executemany, serialising inside",
    )
    runs: dict[str, Callable[[], tuple[Timed, int]]] = {
        names[0]: lambda: run_ours(folder, batches),
        names[1]: lambda: run_ours(folder, encoded),
        names[2]: lambda: run_bare(folder, rows),
        names[3]: lambda: run_floor(folder, pre),
        names[4]: lambda: run_bare_serialising(folder, batches),
    }
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    size: dict[str, int] = {}
    for _ in range(args.repeats):  # interleaved, so drift hits all alike
        for name, run in runs.items():
            timed, size[name] = run()
            wall[name].append(n / timed.wall)
            cpu[name].append(n / timed.cpu)
    ser_fast = statistics.median(rate(lambda: encode_events(events), n) for _ in range(3))
    ser_dump = statistics.median(rate(lambda: [dump_event(e) for e in events], n) for _ in range(3))

    small = [(make_trial_key(i, 0), build_trials(45, 45)[0][1]) for i in range(args.bundle_trials)]
    small_encoded = pre_encoded(small)
    small_rows = plain_rows(small)
    kinds = (
        "plain transaction (sqlite3, pre-serialised)",
        "record_trial_bundle, pre-encoded",
        "record_trial_bundle (encodes)",
        "separate calls (4 transactions)",
    )
    per_trial_runs: dict[str, Callable[[], tuple[Timed, int]]] = {
        kinds[0]: lambda: run_plain_transaction(folder, small, small_rows),
        kinds[1]: lambda: run_per_trial(folder, small_encoded, bundle=True),
        kinds[2]: lambda: run_per_trial(folder, small, bundle=True),
        kinds[3]: lambda: run_per_trial(folder, small, bundle=False),
    }
    per_trial: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(args.repeats):
        for name, run in per_trial_runs.items():
            timed, _ = run()
            per_trial[name].append(timed.cpu / len(small))

    w = {name: statistics.median(v) for name, v in wall.items()}
    c = {name: statistics.median(v) for name, v in cpu.items()}
    print(
        f"{n:,} events ({len(trials)} trials, batches of {args.batch}), "
        f"{args.repeats} interleaved repeats, medians; SQLite {sqlite3.sqlite_version}"
    )
    print(f"{'':38}{'events/s':>10}{'per CPU-s':>11}{'bytes/event':>13}{'/bare CPU':>11}")
    bare = names[2]
    for name in names:
        print(
            f"{name:38}{w[name]:>10,.0f}{c[name]:>11,.0f}{size[name] / n:>13.1f}"
            f"{c[name] / c[bare]:>10.2f}x"
        )
    print(
        f"ratio ours/bare (goal >= 1.0): encoding included {c[names[0]] / c[bare]:.2f} CPU, "
        f"{w[names[0]] / w[bare]:.2f} wall; pre-encoded {c[names[1]] / c[bare]:.2f} CPU, "
        f"{w[names[1]] / w[bare]:.2f} wall"
    )
    print(
        f"both paying for serialisation: ours {c[names[0]] / c[names[4]]:.2f}x CPU the bare "
        "executemany of rows serialised inside with pydantic's model_dump_json"
    )
    print(
        f"serialisation alone (wall): encode_events {ser_fast:,.0f}/s, dump_event "
        f"{ser_dump:,.0f}/s ({ser_fast / ser_dump:.1f}x)"
    )
    t = {name: statistics.median(v) for name, v in per_trial.items()}
    anchor = t[kinds[0]]
    print(
        f"per trial ({len(small)} trials of 45 events, 1 attempt, 4 metrics), CPU us per trial, "
        "and the plain transaction's time / this one's (goal for bundles >= 0.9):"
    )
    for name in kinds:
        print(f"  {name:46}{t[name] * 1e6:>8,.0f} us{anchor / t[name]:>8.2f}x")
    if importlib.util.find_spec("orjson") is not None:
        parts = encode_breakdown([ev for _, evs in trials for ev in evs][:20_000], args.repeats)
        print("where encoding a plain event goes, CPU us per event (medians, interleaved):")
        for name, us in parts.items():
            print(f"  {name:46}{us:>8.3f}")
    print(f"load average (1 min) before / after: {load_before:.2f} / {os.getloadavg()[0]:.2f}")
    for p in Path(folder).rglob("*"):
        if p.is_file():
            p.unlink()
    for p in sorted(Path(folder).rglob("*"), reverse=True):
        p.rmdir()
    os.rmdir(folder)


if __name__ == "__main__":
    main()
