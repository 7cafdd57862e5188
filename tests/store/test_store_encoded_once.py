"""A trial's events are encoded once: the rows the runner's check made are the rows stored.

``storable_events`` encodes a trial's events when it looks for secrets and values the store
cannot hold, and returns them as ``EncodedEvents``; the stores write those rows instead of
encoding the events again. Every test here compares the rows of that path, read back with the
database's own driver, with the rows of the path that encodes inside the store (plain lists of
events, the separate calls), over events chosen to be awkward: unicode and escapes, floats
spelled differently by different encoders, values only ``dump_event`` can write, NaN and lone
surrogates (rewritten), secrets (redacted), an oversized result (cut), and an undefined metric
stored as NULL with its reason.
"""

from __future__ import annotations

import copy
import enum
import json
import math
import pickle
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hbeval.store import (
    AttemptRecord,
    InMemoryStore,
    PostgresStore,
    Redactor,
    SQLiteStore,
    TrialRecord,
    make_trial_key,
    storable_events,
)
from hbeval.store._codec import EncodedEvents, encode_events, encoded_events
from hbeval_core.events import (
    EventBase,
    ModelEnd,
    RunEnd,
    RunStart,
    ToolCall,
    ToolEnd,
    ToolStart,
    Usage,
    dump_event,
)

from .test_store_recorder import RUN, run_record

KEY = make_trial_key(3, 1)


class Colour(enum.Enum):
    RED = "red"


def awkward_trace(run_id: str) -> list[EventBase]:
    """Events that take every branch of the encoder and of the storability check."""
    return [
        RunStart(run_id=run_id, seq=0, agent_id="a", input="Réserve ✈ 东京 👩‍👩‍👧 \u2028 עברית"),
        ModelEnd(
            run_id=run_id,
            seq=1,
            call_id="m0",
            text='quotes " back\\slash \t tab \x01 control',
            tool_calls=[ToolCall(id="c0", name="search", args={"q": "x", "n": 2**40})],
            usage=Usage(input_tokens=10, output_tokens=2),
            latency_ms=1e-7,
        ),
        ToolStart(
            run_id=run_id,
            seq=2,
            call_id="c0",
            tool="search",
            args={"tiny": 5e-324, "big": 1e16, "neg0": -0.0, "third": 1 / 3, "none": None},
        ),
        # Values only dump_event writes (orjson would spell them differently): an enum, a
        # tuple, an int past 64 bits.
        ToolEnd(
            run_id=run_id,
            seq=3,
            call_id="c0",
            tool="search",
            result={"colour": Colour.RED, "pair": (1, 2), "huge": 2**70},
        ),
        # Rewritten before storing: a NaN, a lone surrogate, a secret, an oversized result.
        ToolStart(run_id=run_id, seq=4, call_id="c1", tool="fetch", args={"x": math.nan}),
        ToolStart(run_id=run_id, seq=5, call_id="c2", tool="fetch", args={"s": "bad \ud800"}),
        ToolStart(
            run_id=run_id,
            seq=6,
            call_id="c3",
            tool="login",
            args={"api_key": "hunter2-is-long-enough", "user": "ann"},
        ),
        ToolEnd(run_id=run_id, seq=7, call_id="c3", tool="login", result="é" * 40_000),
        RunEnd(run_id=run_id, seq=8, output="done ✓"),
    ]


def records(key: str = KEY) -> tuple[TrialRecord, list[AttemptRecord]]:
    trial = TrialRecord(
        run_id=RUN,
        trial_key=key,
        task_id="t",
        scenario_index=3,
        trial_index=1,
        outcome="fail",
        verdict={"passed": False, "note": "ünïcode", "score": 0.1 + 0.2},
        attempts=2,
    )
    attempts = [
        AttemptRecord(run_id=RUN, trial_key=key, attempt=0, outcome="infra_error", infra=True),
        AttemptRecord(run_id=RUN, trial_key=key, attempt=1, outcome="fail", error="boom ✗"),
    ]
    return trial, attempts


METRICS: dict[str, float | None] = {"pei": 0.25, "frr": None, "irs": 1e-9}
UNDEFINED = {"frr": "no_fault_observed"}


def storable(events: list[EventBase]) -> list[EventBase]:
    clean, _ = storable_events(events, redactor=Redactor())
    return clean


def write_separately(store: Any, trial: TrialRecord, attempts: list[AttemptRecord]) -> None:
    """The path that encodes inside the store: plain lists of events, one call per record."""
    store.start_run(run_record())
    for att in attempts:
        store.record_attempt(att)
        events = list(storable(awkward_trace(f"{RUN}/{KEY}/a{att.attempt}")))
        assert type(events) is list
        store.record_events(RUN, trial.trial_key, events, attempt=att.attempt)
    store.record_trial(trial)
    store.record_metrics(RUN, trial.trial_key, METRICS, UNDEFINED)


def write_bundle(store: Any, trial: TrialRecord, attempts: list[AttemptRecord]) -> None:
    """The runner's path: events encoded once by ``storable_events``, one bundle."""
    store.start_run(run_record())
    by_attempt: dict[int | None, Any] = {}
    for att in attempts:
        events = storable(awkward_trace(f"{RUN}/{KEY}/a{att.attempt}"))
        assert isinstance(events, EncodedEvents) and events.rows() is not None
        by_attempt[att.attempt] = events
    store.record_trial_bundle(trial, attempts, by_attempt, metrics=METRICS, undefined=UNDEFINED)


TABLES = {
    "runs": "SELECT * FROM runs ORDER BY run_id",
    "trials": "SELECT run_id, trial_key, task_id, scenario_index, trial_index, fault_type, "
    "domain, outcome, verdict, started_at, ended_at, latency_ms, attempts FROM trials "
    "ORDER BY run_id, trial_key",
    "attempts": "SELECT run_id, trial_key, attempt, outcome, error, error_type, infra, "
    "started_at, ended_at FROM attempts ORDER BY run_id, trial_key, attempt",
    "events": "SELECT run_id, trial_key, seq, attempt, kind, body FROM events "
    "ORDER BY run_id, trial_key, seq",
    "metrics": "SELECT run_id, trial_key, name, value, reason FROM metrics "
    "ORDER BY run_id, trial_key, name",
}


def sqlite_rows(path: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every stored row, read with plain sqlite3 (text columns must be TEXT, not BLOB)."""
    conn = sqlite3.connect(path)
    try:
        out = {name: conn.execute(sql).fetchall() for name, sql in TABLES.items()}
        types = conn.execute("SELECT DISTINCT typeof(body) FROM event_rows").fetchall()
        assert types == [("text",)]
    finally:
        conn.close()
    return out


def postgres_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {name: conn.execute(sql).fetchall() for name, sql in TABLES.items()}


def test_sqlite_rows_are_the_same_byte_for_byte(tmp_path: Path) -> None:
    trial, attempts = records()
    with SQLiteStore(tmp_path / "separate.db") as store:
        write_separately(store, trial, attempts)
    with SQLiteStore(tmp_path / "bundle.db") as store:
        write_bundle(store, trial, attempts)
    separate = sqlite_rows(str(tmp_path / "separate.db"))
    bundle = sqlite_rows(str(tmp_path / "bundle.db"))
    assert bundle == separate
    assert len(separate["events"]) == 2 * len(awkward_trace("x"))
    # Byte for byte, not merely equal strings after some normalisation.
    assert [r[5].encode("utf-8") for r in bundle["events"]] == [
        r[5].encode("utf-8") for r in separate["events"]
    ]
    assert (RUN, KEY, "frr", None, "no_fault_observed") in bundle["metrics"]


def test_the_stored_bodies_are_what_the_encoder_gives(tmp_path: Path) -> None:
    """Rows made once are the rows a fresh encode gives: the store wrote them unchanged."""
    clean = storable(awkward_trace(f"{RUN}/{KEY}"))
    with SQLiteStore(tmp_path / "hb.db") as store:
        store.start_run(run_record())
        assert store.record_events(RUN, KEY, clean) == len(clean)
    stored = sqlite_rows(str(tmp_path / "hb.db"))["events"]
    fresh_kinds, fresh_bodies = encode_events(list(clean))
    assert [(r[4], r[5]) for r in stored] == list(zip(fresh_kinds, fresh_bodies, strict=True))
    # And each body holds what dump_event holds (same JSON content, keys in the same order).
    for row, event in zip(stored, clean, strict=True):
        assert list(json.loads(row[5]).items()) == list(json.loads(dump_event(event)).items())


def test_postgres_stores_the_rows_sqlite_stores(tmp_path: Path, postgres_url: str) -> None:
    trial, attempts = records()
    with SQLiteStore(tmp_path / "separate.db") as store:
        write_separately(store, trial, attempts)
    with PostgresStore(postgres_url) as pg:
        write_bundle(pg, trial, attempts)
    assert postgres_rows(postgres_url) == sqlite_rows(str(tmp_path / "separate.db"))


def test_the_memory_store_keeps_the_same_events() -> None:
    trial, attempts = records()
    separate, bundle = InMemoryStore(), InMemoryStore()
    write_separately(separate, trial, attempts)
    write_bundle(bundle, trial, attempts)
    assert [dump_event(e) for e in bundle.iter_events(RUN)] == [
        dump_event(e) for e in separate.iter_events(RUN)
    ]


def test_storable_events_rewrites_what_it_did_before() -> None:
    """Only the rewritten events change; the notes name each rewrite and its position."""
    events = awkward_trace(f"{RUN}/{KEY}")
    clean, notes = storable_events(events, redactor=Redactor())
    assert [a is b for a, b in zip(clean, events, strict=True)] == [
        True, True, True, True, False, False, False, False, True,
    ]  # fmt: skip
    assert [n.split(" ", 1)[0] for n in notes] == [
        "events[4]", "events[5]", "events[6]", "events[7]",
    ]  # fmt: skip
    stored = [json.loads(b) for b in encode_events(list(clean))[1]]
    assert stored[4]["args"]["x"] == "nan"
    assert stored[5]["args"]["s"] == "bad \ufffd"
    assert stored[6]["args"]["api_key"] == "[REDACTED]"
    cut = stored[7]["attrs"]["result_truncated"]
    assert cut["original_bytes"] == 40_000 * 2  # é is two bytes in UTF-8


def test_a_changed_list_is_encoded_again(tmp_path: Path) -> None:
    clean = storable(awkward_trace(f"{RUN}/{KEY}"))
    assert isinstance(clean, EncodedEvents)
    extra = RunEnd(run_id=f"{RUN}/{KEY}", seq=9, output="after")
    clean.append(extra)
    assert clean.rows() is None
    swapped = storable(awkward_trace(f"{RUN}/{KEY}"))
    swapped[0] = RunStart(run_id=f"{RUN}/{KEY}", seq=0, agent_id="other")
    assert swapped.rows() is None  # type: ignore[attr-defined]
    for events in (clean, swapped):
        assert encode_events(events) == encode_events(list(events))


def test_rows_never_travel_in_a_pickle_or_a_copy() -> None:
    clean = storable(awkward_trace(f"{RUN}/{KEY}"))
    for other in (pickle.loads(pickle.dumps(clean)), copy.copy(clean), copy.deepcopy(clean)):
        assert type(other) is list
        assert [dump_event(e) for e in other] == [dump_event(e) for e in clean]


def test_rows_must_match_the_events_they_claim() -> None:
    events = awkward_trace(f"{RUN}/{KEY}")[:3]
    kinds, bodies = encode_events(events)
    with pytest.raises(ValueError, match="3 events but 2 bodies"):
        encoded_events(events, kinds[:2], bodies[:2])


# ---------------------------------------------------------------- the redactor's batch check
TEXTS = [
    '{"kind":"tool_start","args":{"q":"flights"}}',
    '{"kind":"model_end","usage":{"input_tokens":3,"output_tokens":1}}',
    '{"args":{"api_key":"x"}}',
    '{"args":{"githubToken":"abc"}}',
    '{"headers":{"Authorization":"Bearer abcdefghijklmnopqrstuvwxyz"}}',
    '{"text":"sk-ant-abcdefghijklmnopqrstuvwxyz0123"}',
    '{"text":"AKIAABCDEFGHIJKLMNOP"}',
    '{"text":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlXzEyMw"}',
    '{"args":{"db_password":"pw"}}',
    '{"args":{"PASSWORD":"pw"}}',
    '{"args":{"\u212aey":"kelvin sign folds to k"}}',
    '{"args":{"\u017fecret":"long s folds to s"}}',
    '{"args":{"Ключ":"unicode, no secret"}}',
    '{"args":{"max_tokens":5}}',
    '{"args":{"keyboard":"not a secret name"}}',
    "x" * 70_000,
    "é" * 20_000,
    "",
]


@pytest.mark.parametrize(
    "redactor",
    [
        Redactor(),
        Redactor(names=("ticket_no",), patterns=(r"ORD-\d{5}",)),
        Redactor(builtin=False, max_result_bytes=None),
    ],
    ids=["builtin", "user-rules", "no-builtin"],
)
def test_the_batch_check_answers_as_the_single_one(redactor: Redactor) -> None:
    texts = [*TEXTS, '{"ticket_no":"1"}', '{"order":"ORD-12345"}']
    expected = [redactor.needs_rewrite(t) for t in texts]
    assert redactor.rewrites(texts) == expected
    for i, text in enumerate(texts):  # each alone, and with clean neighbours
        assert redactor.rewrites([TEXTS[0], text, TEXTS[1]]) == [False, expected[i], False]


def test_the_name_check_matches_the_regex_alone() -> None:
    """The ASCII shortcut in the secret-name test gives the regex's answer on every text."""
    from hbeval.store._redact import _NAME_CHARS, _NAME_WORD, _has_name_word

    redactor = Redactor()

    def by_regex(text: str) -> bool:
        for match in _NAME_WORD.finditer(text):
            start = match.start()
            low = max(0, start - 64)
            while start > low and text[start - 1] in _NAME_CHARS:
                start -= 1
            if redactor.secret_name(text[start : match.end()]):
                return True
        return False

    words = ["API_KEY=1", "My-Secret: x", "Credentials", "credentialsX", "tokens", "token_id"]
    words += ["token9", "mytoken", "KEY", "keys", "monkey", "passwd", "PassWord!", "authorization"]
    for text in [*TEXTS, *words, *(w + " tail" for w in words), *("x" + w for w in words)]:
        assert redactor._names_a_secret(text) is by_regex(text), text
        if text.isascii():
            assert _has_name_word(text.lower()) is (_NAME_WORD.search(text) is not None), text


def test_the_shape_prefilter_finds_every_shape_the_regexes_find() -> None:
    """The literal and gate look-ups before each shape's regex skip only text it cannot match."""
    from hbeval.store._redact import _SHAPES

    samples = [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
        "sk-ant-abcdefghijklmnopqrstuvwxyz0123",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "AKIAABCDEFGHIJKLMNOP",
        "ASIAABCDEFGHIJKLMNOP",
        *(f"gh{c}_" + "a" * 36 for c in "pousr"),
        "github_pat_" + "A" * 22,
        "xoxb-1234567890-abc",
        "AIza" + "b" * 35,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlXzEyMw",
        "authorization: Bearer abc",
        "AUTHORIZATION: basic abc",
        "Bearer abcdefghijklmnopqrstuv",
    ]
    texts = [*TEXTS, *samples, *(f'{{"note":"see {s} here"}}' for s in samples)]
    redactor = Redactor(builtin=True)
    for text in texts:
        by_regex = any(re.search(pattern, text) for _, pattern in _SHAPES)
        if by_regex:
            assert redactor.may_hold_secret(text), text
            assert redactor.rewrites([TEXTS[0], text]) == [False, True], text
    for text in samples:  # and the shape itself is replaced
        kinds = redactor.redact_text(text)[1]
        assert kinds and "secret_field" not in kinds, text
