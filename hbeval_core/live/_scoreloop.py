"""The scoring loop of ``fold_trace`` once nothing reads steps one by one: read, derive, fold.

``fold_structs`` (msgspec structs, in blocks from ``events._structs.struct_chunks``) and
``fold_dicts`` (pydantic-validated dicts, in blocks from ``events._fast.line_blocks``) each read
the rest of a JSONL source, derive its steps on the deriver's own state (``derive._RunState``:
the same objects, so the loop may start after ``Deriver.feed`` has run and ``feed`` may go on
after it) and fold them into the monitor in batches. Neither holds a rule of its own: each is
made (``_rules.make``, on first use) from the frame here and the rules in ``_rules``, the same
rules ``Deriver.feed`` and ``feed_raw`` are made from, read by attribute from a struct or as
dict reads from a dict. The kinds that make up nearly every trace (``_rules.HOT_KINDS``: model
and tool events) are derived inline, told apart by the struct's class or the dict's kind; every
other kind, and every line the fast reader refuses (taken exactly as ``read_events`` takes
it), goes through ``Deriver.feed`` (``feed_raw`` for another kind's dict).

What is cheaper than ``feed`` here, and why it gives the same step:

* no call per event or per step (the loop is one function), and from a file one decode call per
  block of lines (``struct_chunks``);
* the run's state and its tables are held in locals while its events follow one another
  (``STATE``), and only the step tuple the monitor folds is built (``StepRecord`` is not);
* the names the rules read are locals of the loop, not globals;
* the struct's class is taken with ``type()`` (a specialised call, cheaper than reading
  ``__class__``), and each rule is inlined where one struct class is seen, so each attribute
  read holds the interpreter's specialised read;
* without msgspec, a file is read in blocks of lines (``events._fast.line_blocks``) and the NaN
  guard is looked up once per block rather than twice per line.

``tests/live/test_scoreloop.py`` proves the steps and the monitor's summary equal the model
path's over generated traces, the malformed-input corpus and the traces the importers make of
the public corpora; ``tests/live/test_score_blocks.py`` and ``test_score_dict_blocks.py`` do so
for files read in blocks; ``tests/live/test_rules.py`` checks how the functions are made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from ..events._fast import slow_event
from ..events._structs import Refused
from ._rules import HOT_KINDS, RULE_CONSTANTS, make
from .derive import _RULE_NAMES, Deriver

__all__ = ["fold_dicts", "fold_structs"]


def fold_structs(
    chunks: Iterable[list[tuple[Any]]],
    deriver: Deriver,
    types: dict[str, Any],
    flush: Callable[[list[Any]], None],
    batch: list[Any],
    size: int,
) -> None:
    """Derive and fold the events of ``chunks`` (``events._structs.struct_chunks``).

    ``types`` are the struct twins by kind (``struct_types``). ``flush(batch)`` folds a full
    batch of ``size`` steps; the last, partial batch is flushed too.
    """
    _made("fold_structs")(chunks, deriver, types, flush, batch, size)


def fold_dicts(
    blocks: Iterable[tuple[list[bytes], bool]],
    lineno: int,
    deriver: Deriver,
    decode: Callable[[bytes], Any],
    flush: Callable[[list[Any]], None],
    batch: list[Any],
    size: int,
) -> None:
    """``fold_structs`` for events validated into dicts (``events._fast``; ``Deriver.feed_raw``).

    ``blocks`` are the lines after line ``lineno`` (``events._fast.line_blocks``); in a block
    that may hold NaN or an infinity, a line that may is read the validated way.
    """
    _made("fold_dicts")(blocks, lineno, deriver, decode, flush, batch, size)


# The frames (``_rules``). The loops are the same but for how a line becomes an event.
_PROLOGUE = """
LOCALS
runs = deriver._runs
v1 = deriver._v1
observing = deriver._observing
memo = {}
cur_run = None
st = st_args = st_links = st_by_id = st_faults = None
steps = 0
"""

_STRUCTS = """
def fold_structs(chunks, deriver, types, flush, batch, size):
    TYPES
    PROLOGUE
    feed = deriver.feed
    try:
        for chunk in chunks:
            for (ev,) in chunk:
                cls = type(ev)
                DISPATCH
                if cls is refused_t:
                    ev = slow_event(ev.raw, ev.line)
                    if ev is None:
                        continue
                FEED
        if batch:
            flush(batch)
    finally:
        deriver._index += steps
"""

_DICTS = """
def fold_dicts(blocks, lineno, deriver, decode, flush, batch, size):
    PROLOGUE
    feed, feed_raw = deriver.feed, deriver.feed_raw
    line_no = lineno
    try:
        for block, guard in blocks:
            for raw in block:
                line_no += 1
                ev = None
                if not guard or (raw.find(b"NaN") < 0 and raw.find(b"Infinity") < 0):
                    try:
                        ev = decode(raw)
                    except ValueError:
                        pass
                if ev is None:
                    ev = slow_event(raw, line_no)
                    if ev is None:
                        continue
                elif ev.__class__ is dict:
                    kind = ev["kind"]
                    DISPATCH
                    FEED_RAW
                    continue
                FEED
        if batch:
            flush(batch)
    finally:
        deriver._index += steps
"""

# Another kind, or a refused line's model: the deriver's own method, on the same state (its
# steps counted first, and the run looked up again after: the event may have ended it).
_HAND_OVER = """
deriver._index += steps
steps = 0
got = {method}(ev)
observing = deriver._observing
cur_run = None
if got is not None:
    batch.append(got if got.__class__ is tuple else got.as_tuple())
    if len(batch) >= size:
        flush(batch)
        batch = []
"""

_NAMES = {**_RULE_NAMES, **RULE_CONSTANTS}

_MACROS = {
    "LOCALS": f"{', '.join(_NAMES)} = rule_values",
    "TYPES": "\n".join(f"{kind}_t = types[{kind!r}]" for kind in HOT_KINDS),
    "PROLOGUE": _PROLOGUE,
    "FEED": _HAND_OVER.format(method="feed"),
    "FEED_RAW": _HAND_OVER.format(method="feed_raw"),
    "STATE": """
if run_id != cur_run:
    st = runs.get(run_id)
    if st is None:
        st = runs[run_id] = run_state()
    cur_run = run_id
    st_args = st.args
    st_links = st.links
    st_by_id = st.by_id
    st_faults = st.faults
""",
    "EMIT": """
steps += 1
batch.append(STEP_TUPLE)
if len(batch) >= size:
    flush(batch)
    batch = []
""",
    "NEXT": "continue",
}

_FRAMES = {
    "fold_structs": (_STRUCTS, "attr", "cls is {kind}_t"),
    "fold_dicts": (_DICTS, "dict", "kind == {kind!r}"),
}


def _make_loop(name: str) -> Callable[..., None]:
    """``fold_structs`` or ``fold_dicts``, made from the rules and its frame (``_rules.make``)."""
    frame, shape, test = _FRAMES[name]
    namespace = {
        "rule_values": tuple(_NAMES.values()),
        "refused_t": Refused,
        "slow_event": slow_event,
    }
    return make(
        name, frame, shape=shape, kinds=HOT_KINDS, test=test, macros=_MACROS, namespace=namespace
    )


_made = cache(_make_loop)
"""Each loop, made on first use."""
