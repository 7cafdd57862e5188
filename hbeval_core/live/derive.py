"""Fold a stream of events into steps (derivation ``hb-derive/3``).

A **step** is one tool call's outcome (``tool_end`` or ``tool_error``, injected faults included),
or an explicit ``step`` event whose fields are taken verbatim (the reference-compatible path).

**Links.** Each tool call is linked to the model output that issued it (``CallLinker``):

* ``id``: a ``model_end`` whose ``tool_calls`` carries the call's ``call_id``;
* ``match``: the call carries no id the model gave it (a node that ran ``tool.invoke(args)``
  gets LangChain's run id instead), so it is matched to a pending tool call of the latest
  ``model_end`` that issued any: the first not yet claimed with the same name and the same
  arguments (canonical JSON), else the only one not yet claimed with the same name;
* ``none``: neither found one.

For a tool step:

* ``had_fault``: the call errored (``tool_error``, or ``tool_end`` with status ``error``) or a
  fault was injected into it (a ``fault_injected`` event with the same ``call_id``, which
  adapters emit before the call's end event).
* ``success``: the call returned without error and no fault emptied, corrupted, truncated or
  lost its result (effects in ``vocab.RESULT_SPOILING_EFFECTS``).
* ``replanned``: a ``replan`` event since the previous step, or: the previous step failed, a
  model call happened after it, and this call differs from the failed one in tool or arguments.
* ``traceable``: the call is linked (``id`` or ``match``) to the recorded model output that
  issued it, so the decision traces to a model call and its input. ``link`` says how.
* ``explained``: the issuing output also states a reason, as non-empty text or reasoning
  content (False when the call is not linked). Real tool-calling models often send tool calls
  with no text, so this is reported beside TI as the share of explained calls, not folded
  into it.
* ``recovered_intentionally`` / ``handled_deliberately``: left undefined (``None``). Deliberate
  handling is judged per trial by scoring (signals S1-S6), not per step from the trace.
* ``action``: ``"<tool>(<canonical JSON of the arguments>)"``, so an identical retry repeats an
  action and a changed call is a new one.

**Unobservable traceability** (``hb-derive/3``). A tool step derived before any model event
(``model_start`` or ``model_end``) or explicit step of the trace cannot show whether a model
decided it: there is no model output it could link to. Its ``traceable`` is False as before, but
its ``observed`` is False too, and the monitor leaves TI undefined over them
(``no_model_events``) instead of scoring them 0.0: while every step so far is such a step and no
model event has been seen, TI is undefined; otherwise it is ``round(5 x traceable / steps, 2)``
over every step, as before.
So a trial with tool calls and no model event at all (a plain agent that never calls
``think()``) has TI undefined with reason ``no_model_events``. Explicit ``step`` events carry
their own ``traceable`` flag, so they keep TI defined (the reference's path).

``hb-derive/2`` derived the same steps but scored such a trace TI 0.0; ``Deriver(DERIVE_V2)``
(and ``Monitor(derive_version=DERIVE_V2)``) still does. ``hb-derive/1`` differed in one more
rule: a step was traceable only when linked **by id** to a reply that **stated a reason**.
``derive_steps(events, version=DERIVE_V1)`` still computes it (the reference's published TI
figures were made with it). Changing any rule bumps ``vocab.DERIVE_VERSION``.

**Where the rules are written.** Linking (``_link``, ``CallLinker``'s rules on the deriver's
own records) and the run's state (``_RunState``) are here. What each kind of event does to that
state, and how a tool step's fields follow from it, is written once, in ``_rules.RULES``:
``Deriver.feed`` (events read by attribute) and ``Deriver.feed_raw`` (the same events as the
fast reader's dicts) are made from those rules and the frames below when first used, as the
scoring loop's two functions are (``_scoreloop``), so the four cannot differ.
``inspect.getsource(Deriver.feed)`` shows the function made.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import MethodType
from typing import TYPE_CHECKING, Any

from ..vocab import (
    DERIVE_V1,
    DERIVE_V2,
    DERIVE_VERSION,
    LINK_ID,
    LINK_MATCH,
    LINK_NONE,
    STEP,
)
from ._rules import RULES, make

if TYPE_CHECKING:
    from ..events import EventBase

__all__ = [
    "DERIVE_V1",
    "DERIVE_V2",
    "DERIVE_VERSION",
    "CallLinker",
    "Deriver",
    "Issued",
    "StepRecord",
    "action_label",
    "canonical_args",
    "derive_steps",
]


@dataclass(slots=True)
class StepRecord:
    """One step, as the live metrics see it."""

    index: int
    action: str = ""
    success: bool = True
    had_fault: bool = False
    recovered_intentionally: bool | None = None
    traceable: bool = True
    replanned: bool = False
    handled_deliberately: bool | None = None
    run_id: str | None = None
    tool: str | None = None
    call_id: str | None = None
    fault_modes: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    link: str | None = None
    """How the call was linked to its issuing model output: "id", "match" or "none" (None for
    an explicit step event)."""
    explained: bool | None = None
    """Whether the issuing output stated a reason (None for an explicit step event)."""
    observed: bool = True
    """False for a tool step derived before any model event or explicit step (hb-derive/3):
    whether a model decided it cannot be observed, so TI over such steps alone is undefined."""

    def fields(self) -> dict[str, Any]:
        """The record_step keyword arguments of this step."""
        return {
            "action": self.action,
            "success": self.success,
            "had_fault": self.had_fault,
            "recovered_intentionally": self.recovered_intentionally,
            "traceable": self.traceable,
            "replanned": self.replanned,
            "handled_deliberately": self.handled_deliberately,
        }

    def as_tuple(self) -> tuple[str, bool, bool, bool | None, bool, bool, bool | None]:
        """The same seven values in ``record_step``'s order, for the monitor's step loop.

        An unobserved step's ``traceable`` is ``UNOBSERVED`` (falsy, so it counts as not
        traceable, and the monitor knows TI could not be observed on it).
        """
        return (
            self.action,
            self.success,
            self.had_fault,
            self.recovered_intentionally,
            self.traceable if self.observed else UNOBSERVED,
            self.replanned,
            self.handled_deliberately,
        )


class _Unobserved:
    """The type of ``UNOBSERVED``."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNOBSERVED"


UNOBSERVED: Any = _Unobserved()
"""``traceable`` of a step tuple whose traceability could not be observed (falsy)."""


_encode_str = json.encoder.encode_basestring_ascii
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)  # untyped in typeshed
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_BIG = 10**15  # ints below this print the same through repr and json, whatever the int limits


def canonical_args(args: Any) -> str:
    """Arguments as canonical JSON (sorted keys), so two calls compare by content.

    Exactly ``json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)`` (non-ASCII
    escaped), or ``repr(args)`` when that fails. It runs once per tool step, so the commonest
    shapes skip the encoder's setup: no arguments, and one text or integer argument, are
    spelled out with the encoder's own string escaping; anything else goes through the C
    encoder built exactly as ``json.dumps`` builds it.
    """
    if args.__class__ is dict and len(args) < 2:
        if not args:
            return "{}"
        [(key, value)] = args.items()
        if key.__class__ is str:
            cls = value.__class__
            if cls is str:
                return f"{{{_encode_str(key)}:{_encode_str(value)}}}"
            if cls is int and -_BIG < value < _BIG:
                return f"{{{_encode_str(key)}:{value!r}}}"
    try:
        if _make_encoder is None:  # pragma: no cover - CPython always has the C encoder
            return _CANONICAL.encode(args)
        # What JSONEncoder.encode does for one object: a fresh encoder (and circular-reference
        # memo) per call, so concurrent callers share nothing.
        return "".join(
            _make_encoder({}, str, _encode_str, None, ":", ",", True, False, True)(args, 0)
        )
    except (TypeError, ValueError):
        return repr(args)


def action_label(tool: str, args: Any) -> str:
    """The action string of a tool call: tool name plus canonical JSON of its arguments."""
    return f"{tool}({canonical_args(args)})"


@dataclass(slots=True)
class Issued:
    """One tool call a model output asked for."""

    call_id: str
    name: str
    args: Any
    explained: bool
    """The output stated a reason (text or reasoning)."""
    issuer: Any = None
    """Whatever the caller passed to identify the output (an event index, say)."""
    claimed: bool = False
    _canonical: str | None = None

    @property
    def canonical(self) -> str:
        """The arguments as canonical JSON (computed once)."""
        if self._canonical is None:
            self._canonical = canonical_args(self.args if self.args is not None else {})
        return self._canonical


class CallLinker:
    """Links tool calls to the model output that issued them, by the hb-derive/2 and /3 rules.

    Feed it each model output's tool calls (``issue``) and each tool call as it starts
    (``link``), in trace order, for one run. Used by the deriver and by scoring's evidence, so
    both link a call the same way.
    """

    __slots__ = ("_by_id", "_pending")

    def __init__(self) -> None:
        self._by_id: dict[str, Issued] = {}
        self._pending: list[Issued] = []

    def issue(self, calls: Iterable[Any], explained: bool, issuer: Any = None) -> None:
        """A model output asked for ``calls`` (objects with ``id``, ``name``, ``args``)."""
        self.issue_triples([(c.id, c.name, c.args) for c in calls], explained, issuer)

    def issue_triples(
        self, calls: Iterable[tuple[Any, Any, Any]], explained: bool, issuer: Any = None
    ) -> None:
        """``issue`` for calls given as ``(id, name, args)``."""
        pending: list[Issued] = []
        by_id = self._by_id
        for call_id, name, args in calls:
            issued = Issued(str(call_id), str(name), args, explained, issuer)
            by_id.setdefault(issued.call_id, issued)
            pending.append(issued)
        if pending:
            self._pending = pending

    def issued(self, call_id: str) -> Issued | None:
        """The call a model output issued under ``call_id``, if any (no claim is made)."""
        return self._by_id.get(call_id)

    def link(self, call_id: str, tool: str, args: Any) -> tuple[str, Issued | None]:
        """How the tool call ``call_id`` links to its issuing output: (link kind, issued call)."""
        issued = self._by_id.get(call_id)
        if issued is not None:
            issued.claimed = True
            return LINK_ID, issued
        open_calls = [c for c in self._pending if not c.claimed and c.name == tool]
        if not open_calls:
            return LINK_NONE, None
        if args is not None:
            wanted = canonical_args(args)
            for c in open_calls:
                if c.canonical == wanted:
                    c.claimed = True
                    return LINK_MATCH, c
        if len(open_calls) == 1:
            open_calls[0].claimed = True
            return LINK_MATCH, open_calls[0]
        return LINK_NONE, None


# The deriver's own record of an issued call: a list, cheaper to make than ``Issued`` (one per
# tool call a model output issues), linked by exactly ``CallLinker``'s rules (``_link``).
_CLAIMED, _EXPLAINED, _NAME, _ARGS, _CANON = range(5)
# What a retired record is replaced by in ``_RunState.by_id``: claimed, explained or not. The
# two are shared (never in ``pending``, so only ``_CLAIMED``, already True, is ever set on one).
_ENDED: tuple[list[Any], list[Any]] = ([True, False, "", None, ""], [True, True, "", None, ""])


def _link(st: _RunState, call_id: str, tool: str, args: Any) -> tuple[str, list[Any] | None]:
    """``CallLinker.link`` on a run's own records: (link kind, the issued call's record)."""
    issued = st.by_id.get(call_id)
    if issued is not None:
        issued[_CLAIMED] = True
        return LINK_ID, issued
    open_calls = [c for c in st.pending if not c[_CLAIMED] and c[_NAME] == tool]
    if not open_calls:
        return LINK_NONE, None
    if args is not None:
        wanted = canonical_args(args)
        for c in open_calls:
            canonical = c[_CANON]
            if canonical is None:
                call_args = c[_ARGS]
                canonical = c[_CANON] = canonical_args(call_args if call_args is not None else {})
            if canonical == wanted:
                c[_CLAIMED] = True
                return LINK_MATCH, c
    if len(open_calls) == 1:
        open_calls[0][_CLAIMED] = True
        return LINK_MATCH, open_calls[0]
    return LINK_NONE, None


def _start_link(st: _RunState, call_id: str, tool: str, args: Any) -> None:
    """Link a call as it starts; cached unless by id (``_RunState``)."""
    link = _link(st, call_id, tool, args)
    if link[0] != LINK_ID:
        st.links[call_id] = link


class _RunState:
    """Derivation state of one run; per-call entries are dropped once the call ends.

    ``by_id`` and ``pending`` are ``CallLinker``'s two tables, holding records
    ``[claimed, explained, name, args, canonical args]``. ``links`` caches a call's link from
    its start when it was not by id (a link by id is found again, the same, when it ends).

    ``by_id`` holds every id a model output of the run issued, until the run ends: a call id
    may be used again, and must then link by id to the first output that issued it. A call
    that ends linked by id has its record replaced by a shared one (``_ENDED``: claimed, and
    whether its output was explained), all a later event can still ask of it, while its record
    may stay in ``pending``, claimed, as ``CallLinker`` keeps it. So a long run keeps one small
    entry per ended call instead of its record and arguments, in one table: a model output's
    call is looked up once, and a call's end replaces a value in place rather than moving its
    id from one table to another.
    """

    __slots__ = (
        "args",
        "by_id",
        "faults",
        "last_failed_action",
        "links",
        "model_since_failure",
        "pending",
        "pending_replan",
    )

    def __init__(self) -> None:
        # The None key is never looked up: a dict with a key that is not a str keeps each
        # key's hash in its table, so a lookup that misses (a model output's new call) reads
        # no key strings of this table, which grows with the run.
        self.by_id: dict[str | None, list[Any]] = {None: _ENDED[False]}
        self.pending: list[list[Any]] = []
        self.links: dict[str, tuple[str, list[Any] | None]] = {}
        self.faults: dict[str, list[tuple[str, str]]] = {}
        self.args: dict[str, Any] = {}
        self.pending_replan = False
        self.last_failed_action: str | None = None
        self.model_since_failure = False


# The frames of ``Deriver.feed`` and ``feed_raw`` (``_rules``): one event per call, its run's
# state looked up each time, a step returned (a ``StepRecord``, or in tuple mode the monitor's
# step tuple: set by ``live._trace.fold_trace`` while nothing reads the steps themselves,
# since building a 16-field record only to take 7 of its values costs more than deriving the
# step).
_FEED = '''
def feed(self, event):
    """Consume one event; return the step it completes, if any."""
    ev = event
    kind = ev.kind
    BEGIN
    DISPATCH
    if kind == step_kind:
        return deriver._explicit_step(ev)
    return None
'''

_FEED_RAW = '''
def feed_raw(self, d):
    """``feed`` for an event as a dict the model accepts as it is (``events._fast``).

    Missing keys take the model's defaults. Only for dicts proven by the fast reader's
    checks: anything else must go through the model and ``feed``.
    """
    ev = d
    kind = ev["kind"]
    BEGIN
    DISPATCH
    if kind == step_kind:
        raise ValueError("step events are fed as models (Deriver.feed), not as dicts")
    return None
'''

_FEED_MACROS = {
    "BEGIN": """
deriver = self
runs = deriver._runs
observing = deriver._observing
v1 = deriver._v1
""",
    "STATE": """
st = runs.get(run_id)
if st is None:
    st = runs[run_id] = run_state()
st_args = st.args
st_links = st.links
st_by_id = st.by_id
st_faults = st.faults
""",
    "EMIT": """
index = deriver._index
deriver._index = index + 1
if deriver._as_tuples:
    return STEP_TUPLE
modes = () if faults is None else tuple(m for m, _ in faults)
return StepRecord(
    index, action, success, had_fault, None, traceable, replanned, None, run_id, tool,
    call_id, modes, {}, link_kind, explained, observing,
)
""",
    "NEXT": "return None",
}

_RULE_NAMES: dict[str, Any] = {
    "canonical_args": canonical_args,
    "ended": _ENDED,
    "link": _link,
    "run_state": _RunState,
    "start_link": _start_link,
    "unobserved": UNOBSERVED,
}
"""What the rules call of this module (``_rules``), by the names they use."""

_LABELS: dict[Any, tuple[str, str, str]] = {}
"""The action labels ``feed`` and ``feed_raw`` remember (``_rules.MEMO_MAX``); a label is
checked against its tool and argument name, so sharing it between derivers is safe."""


def _make_method(name: str) -> Callable[..., Any]:
    """``Deriver.feed`` or ``feed_raw``, made from the rules and its frame (``_rules.make``)."""
    frame, shape = (_FEED, "attr") if name == "feed" else (_FEED_RAW, "dict")
    namespace = {**_RULE_NAMES, "StepRecord": StepRecord, "step_kind": STEP, "memo": _LABELS}
    return make(
        name,
        frame,
        shape=shape,
        kinds=tuple(RULES),
        test="kind == {kind!r}",
        macros=_FEED_MACROS,
        namespace=namespace,
    )


class _Made:
    """A method made by ``_make_method`` when first looked up, then set on its class in place
    of this: later calls cost what a plain method's do."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._owner: type | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        self._owner = owner

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        method = _make_method(self._name)
        setattr(self._owner, self._name, method)
        return method if obj is None else MethodType(method, obj)


_KNOWN_VERSIONS = (DERIVE_VERSION, DERIVE_V2, DERIVE_V1)


class Deriver:
    """Streaming hb-derive/3: feed events one at a time, get at most one step back per event.

    Events of several runs may interleave; state is kept per run id and per open call, plus
    each call id a model output issued (a later call may use the id again, and links to the
    same output), until its run ends (``_RunState``).
    ``version=DERIVE_V2`` or ``DERIVE_V1`` applies an earlier rule (see the module docstring).
    ``feed`` and ``feed_raw`` are made from the rules (``_rules``) when first looked up.
    """

    version = DERIVE_VERSION

    def __init__(self, version: str = DERIVE_VERSION) -> None:
        if version not in _KNOWN_VERSIONS:
            raise ValueError(
                f"unknown derivation version {version!r}; known: {', '.join(_KNOWN_VERSIONS)}"
            )
        self.version = version
        self._v1 = version == DERIVE_V1
        self._runs: dict[str, _RunState] = {}
        self._index = 0
        self._observing = version != DERIVE_VERSION
        self._as_tuples = False

    @property
    def steps_derived(self) -> int:
        """How many steps this deriver has produced."""
        return self._index

    @property
    def observing(self) -> bool:
        """Whether a model event or an explicit step has been seen (always, before hb-derive/3).

        Until then, derived tool steps are unobserved (``StepRecord.observed``).
        """
        return self._observing

    if TYPE_CHECKING:

        def feed(self, event: EventBase) -> StepRecord | None:
            """Consume one event; return the step it completes, if any."""

        def feed_raw(self, d: dict[str, Any]) -> StepRecord | None:
            """``feed`` for an event as a dict the model accepts as it is (``events._fast``)."""

    else:
        feed = _Made("feed")
        feed_raw = _Made("feed_raw")

    def _explicit_step(self, ev: Any) -> StepRecord:
        self._observing = True
        step = StepRecord(
            index=self._index,
            action=ev.action,
            success=ev.success,
            had_fault=ev.had_fault,
            recovered_intentionally=ev.recovered_intentionally,
            traceable=ev.traceable,
            replanned=ev.replanned,
            handled_deliberately=ev.handled_deliberately,
            run_id=ev.run_id,
            metadata=dict(ev.metadata),
        )
        self._index += 1
        return step


def derive_steps(
    events: Iterable[EventBase], *, version: str = DERIVE_VERSION
) -> Iterator[StepRecord]:
    """Derive the steps of an event stream, in order (``version`` DERIVE_V1: the old rules)."""
    deriver = Deriver(version)
    feed = deriver.feed
    for ev in events:
        step = feed(ev)
        if step is not None:
            yield step
