"""The derivation rules are written once (``live._rules``) and every deriving function is made of them.

``Deriver.feed``, ``Deriver.feed_raw`` and the scoring loop's ``fold_structs`` and
``fold_dicts`` are each made from a frame and ``_rules.RULES``. These tests show that one edit
of a rule changes all four alike (so none can keep an old copy), that the dict shape reads each
field as the event model defines it, that a rule reading a field no model has fails when the
functions are made, that every name the made functions read is given to them, and that no other
code writes a run's derivation state (no hand-written twin of a rule). That the four give the
model path's steps is ``test_scoreloop.py``'s, ``test_score_blocks.py``'s and
``test_score_dict_blocks.py``'s.
"""

from __future__ import annotations

import ast
import builtins
import dis
import inspect
import io
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

from hbeval_core.events import ModelEnd, ToolCall, ToolEnd, ToolStart, read_events
from hbeval_core.events._fast import fast_lines, line_blocks, twin_adapter
from hbeval_core.events._structs import struct_chunks, struct_decoder, struct_types
from hbeval_core.live import _rules, _scoreloop, derive
from hbeval_core.live.derive import Deriver
from hbeval_core.vocab import MODEL_START

from .test_scoreloop import generated

HOUSE = Path(derive.__file__).resolve().parents[1]  # hbeval_core

# A rule change for the tests: a model call after a step makes the next step a replan.
CHANGED = _rules.RULES[MODEL_START] + "st.pending_replan = True\n"


def steps_of_each(lines: list[str]) -> dict[str, list[Any]]:
    """The step tuples each of the four functions, made afresh from the rules, derives."""
    raw = [line.encode() for line in lines]
    feed = derive._make_method("feed")
    feed_raw = derive._make_method("feed_raw")
    out: dict[str, list[Any]] = {}

    def run(name: str, each: Callable[[Deriver, Any], Any], events: Any) -> None:
        deriver = Deriver()
        deriver._as_tuples = True
        steps = (each(deriver, ev) for ev in events)
        # Explicit steps come as records even in tuple mode; the loops take their tuples.
        out[name] = [s if s.__class__ is tuple else s.as_tuple() for s in steps if s is not None]

    run("feed", feed, read_events(io.StringIO("".join(f"{x}\n" for x in lines))))
    run(
        "feed_raw",
        lambda d, ev: feed_raw(d, ev) if ev.__class__ is dict else feed(d, ev),
        fast_lines(raw),
    )
    loops: list[tuple[str, Callable[[Deriver, list[Any]], None]]] = []
    if struct_decoder() is not None:
        fold = _scoreloop._make_loop("fold_structs")
        types = struct_types()
        loops.append(("fold_structs", lambda d, got: fold(struct_chunks(iter(raw), 0), d, types, got.extend, [], 7)))  # fmt: skip
    fold_d = _scoreloop._make_loop("fold_dicts")
    validate = twin_adapter().validator.validate_json
    loops.append(("fold_dicts", lambda d, got: fold_d(line_blocks(iter(raw)), 0, d, validate, got.extend, [], 7)))  # fmt: skip
    for name, loop in loops:
        deriver = Deriver()
        deriver._as_tuples = True
        got: list[Any] = []
        loop(deriver, got)
        out[name] = got
    return out


@pytest.mark.parametrize("seed", range(2))
def test_one_edit_of_a_rule_changes_all_four_functions(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = generated(seed)
    before = steps_of_each(lines)
    monkeypatch.setitem(_rules.RULES, MODEL_START, CHANGED)
    after = steps_of_each(lines)
    assert len(after) == (4 if struct_decoder() is not None else 3)
    want = after["feed"]
    assert all(steps == want for steps in after.values()), {k: len(v) for k, v in after.items()}
    assert all(steps == before["feed"] for steps in before.values())
    replans = sum(t[5] for t in want)
    assert replans > sum(t[5] for t in before["feed"]) + 50


@pytest.mark.parametrize(
    ("model", "field", "attr", "dict_read"),
    [
        (ToolStart, "run_id", "ev.run_id", "ev['run_id']"),
        (ToolStart, "args", "ev.args", "(ev.get('args') or {})"),
        (ToolEnd, "status", "ev.status", "ev.get('status', 'ok')"),
        (ModelEnd, "text", "ev.text", "ev.get('text')"),
        (ModelEnd, "tool_calls", "ev.tool_calls", "(ev.get('tool_calls') or [])"),
    ],
)
def test_the_dict_shape_reads_each_field_as_its_model_defines_it(
    model: Any, field: str, attr: str, dict_read: str
) -> None:
    assert _rules.field_read("attr", "ev", model, field) == attr
    assert _rules.field_read("dict", "ev", model, field) == dict_read
    assert _rules.field_read("dict", "call", ToolCall, "args") == "(call.get('args') or {})"


@pytest.mark.parametrize(
    ("read", "message"),
    [("ev.nothing", "has no such field"), ("ev.messages", "_READ_COLLECTIONS")],
)
@pytest.mark.parametrize("shape", ["attr", "dict"])
def test_a_rule_reading_what_no_event_gives_fails_when_made(
    read: str, message: str, shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(_rules.RULES, MODEL_START, f"{CHANGED}x = {read}\n")
    with pytest.raises(TypeError, match=message):
        derive._make_method("feed" if shape == "attr" else "feed_raw")
    with pytest.raises(TypeError, match=message):
        _scoreloop._make_loop("fold_structs" if shape == "attr" else "fold_dicts")


def globals_read(code: CodeType) -> set[str]:
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= globals_read(const)
    return names


def made_functions() -> dict[str, Any]:
    return {
        "feed": Deriver.feed,
        "feed_raw": Deriver.feed_raw,
        "fold_structs": _scoreloop._made("fold_structs"),
        "fold_dicts": _scoreloop._made("fold_dicts"),
    }


@pytest.mark.parametrize("name", ["feed", "feed_raw", "fold_structs", "fold_dicts"])
def test_every_name_a_made_function_reads_is_given_and_its_source_is_shown(name: str) -> None:
    fn = made_functions()[name]
    # A macro left unexpanded, or a name the rules use that the frame does not give, would
    # only fail when its branch first runs.
    unbound = globals_read(fn.__code__) - fn.__globals__.keys() - vars(builtins).keys()
    assert unbound == set()
    source = inspect.getsource(fn)
    assert source == _rules.SOURCES[name]
    assert source.startswith(f"def {name}(")


def test_no_code_outside_the_rules_writes_a_runs_derivation_state() -> None:
    # A hand-written twin of a rule would set these fields of a run's state (derive._RunState).
    fields = set(derive._RunState.__slots__)
    found = []
    for path in sorted(HOUSE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and node.attr in fields
                and not (isinstance(node.value, ast.Name) and node.value.id == "self")
            ):
                found.append(f"{path.relative_to(HOUSE)}:{node.lineno} sets .{node.attr}")
    assert found == []
    rules = "".join(_rules.RULES.values()) + "".join(_rules._PARTS.values())
    for name in ("pending", "pending_replan", "last_failed_action", "model_since_failure"):
        assert f"st.{name} =" in rules  # where they are set instead
