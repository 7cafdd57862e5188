"""Finding 5: a value that cannot be stored never takes a battery down.

On main a lone surrogate in a tool argument aborted the battery (``status=failed``, no report,
most trials never ran, resuming failed the same way); an integer over 4,300 digits did the
same. Now such values are replaced before scoring and recording, and the trace says what was
changed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hbeval.runner.run import run_battery
from hbeval.store import (
    RUN_COMPLETED,
    InMemoryStore,
    open_store,
    sanitise_value,
    storable_events,
)
from hbeval.store._codec import encode_events
from hbeval_core.events import ToolEnd, ToolStart
from hbeval_core.vocab import ATTR_SANITISED
from hbeval_plain import think, tool

from ._agents import TASK, BadRepr, battery, deep_list, hostile_values


@tool
def lookup(order_id: str, extra: Any = None) -> Any:
    return {"order_id": order_id, "status": "shipped", "echo": extra}


def _agent_sending(value: Any) -> Any:
    def agent(question: str) -> str:
        think("look it up", tool_calls=[("lookup", {"order_id": "A1"})])
        lookup("A1", extra=value)
        return "A1 is shipped"

    return agent


@pytest.mark.parametrize("name", sorted(hostile_values()))
def test_a_hostile_argument_and_result_never_stop_the_battery(name: str, tmp_path: Any) -> None:
    value = hostile_values()[name]
    with open_store(str(tmp_path / "hb.db")) as store:
        report = run_battery(
            None, _agent_sending(value), [TASK], battery(), trials=2, store=store, run_id="r"
        )
        assert store.get_run("r").status == RUN_COMPLETED  # type: ignore[union-attr]
        assert report.run.trial_count == 12
        assert report.outcomes["infra_error"] == 0
        # Every trial is stored, readable, and its events decode as JSON.
        assert len(store.list_trials("r")) == 12
        events = list(store.iter_events("r", "s000-t0"))
        assert next(e.kind for e in events) == "run_start"
        # Resuming the finished run is a no-op that still returns the report.
        again = run_battery(
            None, _agent_sending(value), [TASK], battery(), trials=2, store=store, run_id="r"
        )
        assert again.run.trial_count == 12


@pytest.mark.parametrize(
    ("value", "expected", "note"),
    [
        ("a\ud800b", "a\ufffdb", "lone surrogates replaced by U+FFFD"),
        (float("inf"), "inf", "stored as text"),
        (
            -(10**5000) - 7,
            "-100000000000...000000000007 (integer of 5001 digits, truncated)",
            "integer over 4300 digits truncated",
        ),
        (BadRepr(), "<unrepresentable tests.adversarial._agents.BadRepr>", "replaced"),
    ],
    ids=["surrogate", "infinity", "huge_int", "bad_repr"],
)
def test_each_replacement_is_named_in_the_trace(value: Any, expected: Any, note: str) -> None:
    ev = ToolStart(run_id="r", call_id="c1", tool="lookup", args={"order_id": "A1", "x": value})
    with pytest.raises(ValueError, match=r"events\[0\]"):
        encode_events([ev])  # the store alone still refuses it, naming the event
    (clean,), notes = storable_events([ev])
    assert clean.args == {"order_id": "A1", "x": expected}  # type: ignore[attr-defined]
    assert len(notes) == 1 and notes[0].startswith("events[0] args.x: ") and note in notes[0]
    assert clean.attrs[ATTR_SANITISED] == [notes[0].removeprefix("events[0] ")]
    encode_events([clean])  # now storable


def test_deep_nesting_is_cut_and_storable_events_are_left_alone() -> None:
    ok = ToolEnd(run_id="r", call_id="c1", tool="lookup", result={"a": [1, 2.5, "x"]})
    deep = ToolEnd(run_id="r", call_id="c2", tool="lookup", result=deep_list())
    out, notes = storable_events([ok, deep])
    assert out[0] is ok
    assert len(notes) == 1 and "nested deeper than 100 levels" in notes[0]
    _kinds, bodies = encode_events(out)
    depth, node = 0, json.loads(bodies[1])["result"]
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    assert depth == 100 and "nested deeper" in node


def test_sanitise_value_leaves_clean_values_identical() -> None:
    value = {"a": [1, {"b": "c"}], "n": None, "f": 1.5}
    clean, notes = sanitise_value(value)
    assert clean is value and notes == []


def test_memory_store_and_sqlite_both_keep_the_sanitised_trial() -> None:
    store = InMemoryStore()
    report = run_battery(
        None, _agent_sending("x\udfffy"), [TASK], battery(), trials=1, store=store, run_id="m"
    )
    assert report.run.trial_count == 6
    starts = [e for e in store.iter_events("m", "s000-t0") if e.kind == "tool_start"]
    assert starts and starts[0].args["extra"] == "x\ufffdy"  # type: ignore[attr-defined]
    assert ATTR_SANITISED in starts[0].attrs
