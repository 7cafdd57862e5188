"""The step-derivation rules, written once, and the functions made from them (``make``).

Each kind of event the deriver acts on has one rule here (``RULES``): Python source that reads
the event as ``ev`` (and a model output's tool call as ``call``) by attribute and updates the
run's derivation state (``derive._RunState``; its tables held as ``st_args``, ``st_links``,
``st_by_id`` and ``st_faults``). Four functions derive steps, and each is made from these rules:

* ``Deriver.feed`` (an event read by attribute: a model, or a msgspec struct) and
  ``Deriver.feed_raw`` (the same event as the dict the fast reader validated, ``events._fast``),
  one event per call (derive.py);
* ``fold_structs`` and ``fold_dicts``, the scoring loop over the rest of a file, the rules of
  the commonest kinds inlined in one loop (``_scoreloop``).

What differs between them is their *frame*, written beside each: how events are walked and told
apart, how a run's state is found (a rule's ``STATE`` line: looked up per event, or kept in
locals while one run's events follow one another) and what becomes of a step (``EMIT``: a
``StepRecord`` returned, or the monitor's step tuple added to a batch). ``make`` writes out a
frame with the rules in it, each line that names a macro replaced by the macro's lines, and
compiles it. For the dict shape it spells each read of a field by the event model's own
definition of the field: ``ev.run_id`` (required) is read ``ev["run_id"]``, ``ev.status``
(default ``"ok"``) ``ev.get("status", "ok")``, ``call.args`` (an empty dict by default)
``(call.get("args") or {})``. A rule that reads a field the model lacks, or a defaulted
collection the struct twins leave unset (``events._structs._READ_COLLECTIONS``), fails when
the functions are made. So a rule is changed in one place, and all four functions follow it;
``tests/live/test_rules.py`` shows one edit reaching all four, and the other tests in
``tests/live`` hold them to the model path.

The functions are made when first used (about 2 ms each), so importing the monitor costs
nothing here. ``SOURCES`` keeps the source of each, which ``inspect.getsource`` and tracebacks
show too.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..vocab import (
    FAULT_INJECTED,
    LINK_ID,
    LINK_NONE,
    MODEL_END,
    MODEL_START,
    REPLAN,
    RESULT_SPOILING_EFFECTS,
    RUN_END,
    TOOL_END,
    TOOL_ERROR,
    TOOL_START,
)

__all__ = ["HOT_KINDS", "RULES", "RULE_CONSTANTS", "SOURCES", "STEP_TUPLE", "field_read", "make"]

MEMO_MAX = 4096
"""Action labels remembered (``TOOL_STEP``), by the value of a tool's one argument: ``{value:
(tool, argument name, action)}``, cleared when full, so memory stays flat."""

# The step of a tool call that ended. Before it: ``success`` (False when the call errored)
# and the run's state (STATE). The link is ``derive._link``'s, its first rule (by id) inline;
# a call linked by id has its record retired (``derive._RunState``).
_TOOL_STEP = """
run_id, call_id, tool = ev.run_id, ev.call_id, ev.tool
STATE
args = st_args.pop(call_id, None)
cached = st_links.pop(call_id, None) if st_links else None
if cached is None or cached[0] == link_none:
    # Linked by id when it started (found again, the same), or not linked then: the issuing
    # output may have been recorded since.
    issued = st_by_id.get(call_id)
    if issued is None:
        link_kind, issued = link(st, call_id, tool, args)
        explained = issued is not None and issued[1]
    else:
        issued[0] = True
        link_kind = link_id
        explained = issued[1]
        st_by_id[call_id] = ended[explained]
else:
    link_kind, issued = cached
    explained = issued is not None and issued[1]
if v1:
    traceable = link_kind == link_id and explained
else:
    traceable = link_kind != link_none
faults = st_faults.pop(call_id, None) if st_faults else None
if faults is None:
    had_fault = not success
else:
    had_fault = True
    for _, effect in faults:
        if effect in spoiling:
            success = False
if args is None:
    args = {}
if type(args) is dict and len(args) == 1:
    # One text or integer argument, the commonest shape: its label is remembered by the
    # value alone (a tool's name is a new string on every event, and hashing it costs more
    # than comparing it), and canonical_args spells such a label the same each time.
    for name in args:
        value = args[name]
    value_cls = type(value)
    if value_cls is int or value_cls is str:
        known = memo.get(value)
        if known is not None and known[0] == tool and known[1] == name:
            action = known[2]
        else:
            if len(memo) >= memo_max:
                memo.clear()
            action = f"{tool}({canonical_args(args)})"
            memo[value] = (tool, name, action)
    else:
        action = f"{tool}({canonical_args(args)})"
else:
    action = f"{tool}({canonical_args(args)})"
last_failed = st.last_failed_action
if last_failed is None:
    replanned = st.pending_replan
else:
    replanned = st.pending_replan or (st.model_since_failure and action != last_failed)
    st.last_failed_action = None
if not success:
    st.last_failed_action = action
st.pending_replan = st.model_since_failure = False
EMIT
"""

# One tool call a model output issued (``call``), with ``explained``: its record (``derive``'s
# ``[claimed, explained, name, args, canonical args]``) in ``issued``, its arguments remembered.
_ISSUE = """
call_id = call.id
args = call.args
issued = [False, explained, call.name, args, None]
st_by_id.setdefault(call_id, issued)
st_args.setdefault(call_id, args)
"""

_OBSERVED = """
st.model_since_failure = True
if not observing:
    observing = deriver._observing = True
"""

RULES: dict[str, str] = {
    TOOL_START: """
run_id = ev.run_id
STATE
call_id = ev.call_id
args = ev.args
st_args[call_id] = args
if call_id not in st_links:
    # derive._start_link, its first rule inline: a link by id (not cached).
    issued = st_by_id.get(call_id)
    if issued is None:
        start_link(st, call_id, ev.tool, args)
    else:
        issued[0] = True
""",
    TOOL_END: """
success = ev.status != "error"
TOOL_STEP
""",
    TOOL_ERROR: """
success = False
TOOL_STEP
""",
    MODEL_START: """
run_id = ev.run_id
STATE
OBSERVED
""",
    MODEL_END: """
run_id = ev.run_id
STATE
OBSERVED
calls = ev.tool_calls
if calls:
    text, reasoning = ev.text, ev.reasoning
    explained = bool((text and text.strip()) or (reasoning and reasoning.strip()))
    if len(calls) == 1:
        call = calls[0]
        ISSUE
        st.pending = [issued]
    else:
        pending = []
        for call in calls:
            ISSUE
            pending.append(issued)
        st.pending = pending
""",
    FAULT_INJECTED: """
call_id = ev.call_id
if call_id is not None:
    run_id = ev.run_id
    STATE
    faults = st_faults.get(call_id)
    if faults is None:
        st_faults[call_id] = [(ev.mode, ev.effect)]
    else:
        faults.append((ev.mode, ev.effect))
""",
    REPLAN: """
run_id = ev.run_id
STATE
st.pending_replan = True
""",
    RUN_END: """
runs.pop(ev.run_id, None)
""",
}
"""Each kind's rule (module docstring). Kinds not here derive nothing; ``step`` events, whose
fields are taken verbatim, are ``Deriver._explicit_step``'s."""

HOT_KINDS = (TOOL_START, TOOL_END, TOOL_ERROR, MODEL_START, MODEL_END, FAULT_INJECTED)
"""The kinds the scoring loop derives inline (nearly every event of a trace); it hands any
other to ``Deriver.feed``."""

STEP_TUPLE = (
    "(action, success, had_fault, None, traceable if observing else unobserved, replanned, None)"
)
"""The monitor's step tuple of a derived step (``StepRecord.as_tuple``), for a frame's EMIT."""

_PARTS = {"TOOL_STEP": _TOOL_STEP, "ISSUE": _ISSUE, "OBSERVED": _OBSERVED}

RULE_CONSTANTS: dict[str, Any] = {
    "link_id": LINK_ID,
    "link_none": LINK_NONE,
    "spoiling": RESULT_SPOILING_EFFECTS,
    "memo_max": MEMO_MAX,
}
"""Names the rules read besides derive.py's (``derive._RULE_NAMES``)."""

SOURCES: dict[str, str] = {}
"""The source of each function ``make`` made, by name."""


def make(
    name: str,
    frame: str,
    *,
    shape: str,
    kinds: Sequence[str],
    test: str,
    macros: Mapping[str, str],
    namespace: Mapping[str, Any],
) -> Callable[..., Any]:
    """The function ``name`` of ``frame`` (its source), with the rules of ``kinds`` dispatched.

    A line of a rule or frame that is only a macro's name is replaced by the macro's lines,
    indented as it is. ``frame`` holds a ``DISPATCH`` line, replaced by ``if <test>: <rule>
    NEXT`` for each kind in turn (``test`` formatted with ``kind``: ``"kind == {kind!r}"``).
    ``macros`` are the frame's: ``STATE``, ``EMIT``, ``NEXT`` and any of its own. ``shape`` is
    ``"attr"`` or ``"dict"``: how the rules read an event (module docstring). ``namespace`` is
    the function's globals, with ``RULE_CONSTANTS``.
    """
    if shape not in ("attr", "dict"):
        raise ValueError(f"shape must be 'attr' or 'dict', not {shape!r}")
    models = _models()
    branches = []
    for kind in kinds:
        rule = _expand(RULES[kind], _PARTS)
        rule = _reads(rule, shape, {"ev": models[kind], "call": models["call"]})
        branches.append(f"if {test.format(kind=kind)}:\n{_indent(rule)}\n    NEXT")
    source = _expand(frame, {**macros, "DISPATCH": "\n".join(branches)})
    source = source.replace("STEP_TUPLE", STEP_TUPLE) + "\n"
    filename = f"<hbeval_core.live rules: {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {**RULE_CONSTANTS, **namespace}
    exec(compile(source, filename, "exec"), scope)
    made: Callable[..., Any] = scope[name]
    SOURCES[name] = source
    return made


_READ = re.compile(r"(?<![\w.])(ev|call)\.([A-Za-z_]\w*)")
"""A read of a field of the event (``ev``) or of a model output's tool call (``call``)."""


def _reads(rule: str, shape: str, records: Mapping[str, Any]) -> str:
    """``rule`` with each read of a record's field spelled for ``shape`` (``field_read``)."""
    return _READ.sub(lambda m: field_read(shape, m[1], records[m[1]], m[2]), rule)


def _expand(source: str, macros: Mapping[str, str]) -> str:
    """``source`` with each line that is a macro's name replaced by the macro, expanded too."""
    out = []
    for line in source.strip("\n").splitlines():
        name = line.strip()
        if name in macros:
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + x if x else x for x in _expand(macros[name], macros).splitlines()]
        else:
            out.append(line)
    return "\n".join(out)


def _indent(source: str) -> str:
    return "\n".join("    " + line if line else line for line in source.splitlines())


def field_read(shape: str, var: str, model: Any, field: str) -> str:
    """How ``var.field`` is read in ``shape``, by the definition of ``field`` in ``model``."""
    from ..events._structs import _READ_COLLECTIONS

    info = model.model_fields.get(field)
    if info is None:
        raise TypeError(f"a rule reads {var}.{field}: {model.__name__} has no such field")
    factory = info.default_factory
    if factory is not None and field not in _READ_COLLECTIONS:
        raise TypeError(
            f"a rule reads {model.__name__}.{field}, a defaulted collection the struct twins "
            "leave unset: add it to events._structs._READ_COLLECTIONS"
        )
    if shape == "attr":
        return f"{var}.{field}"
    if info.is_required():
        return f"{var}[{field!r}]"
    if factory is not None:
        empty = {dict: "{}", list: "[]"}.get(factory)
        if empty is None:
            raise TypeError(f"{model.__name__}.{field}: a default made by {factory!r}")
        # Valid: absent, or a collection, which is falsy only when empty.
        return f"({var}.get({field!r}) or {empty})"
    default = info.default
    if default is None:
        return f"{var}.get({field!r})"
    if type(default) not in (str, int, float, bool):
        raise TypeError(f"{model.__name__}.{field}: a default of {default!r}")
    return f"{var}.get({field!r}, {default!r})"


def _models() -> dict[str, Any]:
    """The event models by kind, and ``"call"``: a model output's tool call."""
    from typing import get_args

    from ..events import Event, ToolCall

    models: dict[str, Any] = {"call": ToolCall}
    for model in get_args(get_args(Event)[0]):
        models[model.model_fields["kind"].default] = model
    return models
