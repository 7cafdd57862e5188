"""The scoring loop of ``fold_trace`` once nothing reads steps one by one: read, derive, fold.

``fold_structs`` (msgspec structs, in blocks from ``events._structs.struct_chunks``) and
``fold_dicts`` (pydantic-validated dicts) each read the rest of a JSONL source, derive its
steps by exactly ``Deriver.feed``'s rules on the deriver's own state (``_RunState``,
``CallLinker``, ``Issued``: the same objects, so the loop may start
after ``feed`` has run and ``feed`` may go on after it) and fold them into the monitor in
batches. Only the step tuple the monitor folds is built (``StepRecord`` is not), and the kinds
that make up nearly every trace (model and tool events) are derived inline, dispatched by the
struct's class or the dict's kind; every other kind, and every line the fast reader refuses
(taken exactly as ``read_events`` takes it), goes through ``Deriver.feed``.

What is cheaper than ``feed`` here, and why it gives the same step:

* no call per event or per step (the loop is one function), and from a file one decode call per
  block of lines (``struct_chunks``);
* the run's tables are held in locals while its events follow one another;
* an action label is remembered for a tool and a single string or integer argument (the
  commonest shape), so a repeated call reuses the same string instead of encoding its arguments
  again (``canonical_args``' own fast shapes, so the string is the same; the monitor then finds
  it with its hash already computed); it is looked up by the argument's value and the tool and
  argument name compared, since the tool's name is a new string on every event and hashing it
  costs more than comparing it;
* a model output with one tool call (the commonest) skips the list of triples and the loop;
* the struct's class is taken with ``type()`` (a specialised call, cheaper than reading
  ``__class__``), and each attribute is read at a place that sees one struct class, where the
  interpreter's specialised read holds;
* without msgspec, a file is read in blocks of lines (``events._fast.line_blocks``) and the NaN
  guard is looked up once per block rather than twice per line.

``tests/live/test_scoreloop.py`` proves the steps and the monitor's summary equal the model
path's over generated traces, the malformed-input corpus and the traces the importers make of
the public corpora; ``tests/live/test_score_blocks.py`` does so for files read in blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..events._fast import slow_event
from ..events._structs import Refused
from ..vocab import (
    FAULT_INJECTED,
    LINK_ID,
    LINK_NONE,
    MODEL_END,
    MODEL_START,
    RESULT_SPOILING_EFFECTS,
    TOOL_END,
    TOOL_ERROR,
    TOOL_START,
)
from .derive import _ENDED, UNOBSERVED, Deriver, _link, _RunState, _start_link, canonical_args

__all__ = ["fold_dicts", "fold_structs"]

_MEMO_MAX = 4096
"""Action labels remembered per loop, by the value of a tool's one argument: ``{value: (tool,
argument name, action)}`` (cleared when full, so memory stays flat)."""


def fold_structs(
    chunks: Iterable[list[tuple[Any]]],
    deriver: Deriver,
    types: dict[str, Any],
    flush: Callable[[list[Any]], None],
    batch: list[Any],
    size: int,
) -> None:
    """Derive and fold the events of ``chunks`` (``events._structs.struct_chunks``).

    ``flush(batch)`` folds a full batch; the last, partial batch is flushed too.
    """
    # Long because: the hot loop of scoring a file, inlined on purpose (a call per event or
    # per step costs a measurable share of a microsecond-per-event path; module docstring).
    tool_start_t, tool_end_t, tool_error_t = types[TOOL_START], types[TOOL_END], types[TOOL_ERROR]
    model_start_t, model_end_t = types[MODEL_START], types[MODEL_END]
    fault_t = types[FAULT_INJECTED]
    refused_t = Refused
    feed = deriver.feed
    link, start_link, run_state, ended = _link, _start_link, _RunState, _ENDED
    runs = deriver._runs
    v1 = deriver._v1
    observing = deriver._observing
    unobserved = UNOBSERVED
    link_id, link_none = LINK_ID, LINK_NONE
    spoiling = RESULT_SPOILING_EFFECTS
    memo: dict[Any, tuple[str, str, str]] = {}
    # The run of the event before, and its state (most traces are one run at a time).
    cur_run: str | None = None
    st: Any = None
    # Its tables (the same objects for the run's life).
    st_args: Any = None
    st_links: Any = None
    st_by_id: Any = None
    st_faults: Any = None
    steps = 0
    try:
        for chunk in chunks:
            for (ev,) in chunk:
                cls = type(ev)
                if cls is tool_start_t:
                    run_id = ev.run_id
                    if run_id != cur_run:
                        st = runs.get(run_id)
                        if st is None:
                            st = runs[run_id] = run_state()
                        cur_run = run_id
                        st_args, st_links, st_by_id = st.args, st.links, st.by_id
                        st_faults = st.faults
                    call_id = ev.call_id
                    args = ev.args
                    st_args[call_id] = args
                    if call_id not in st_links:  # derive._start_link, inline for a link by id
                        issued = st_by_id.get(call_id)
                        if issued is not None:
                            issued[0] = True
                        else:
                            start_link(st, call_id, ev.tool, args)
                    continue
                if cls is tool_end_t or cls is tool_error_t:
                    # Each attribute read sees one struct class (a read that sees two falls
                    # back from the interpreter's specialised slot read to the generic one).
                    if cls is tool_end_t:
                        run_id, call_id, tool = ev.run_id, ev.call_id, ev.tool
                        success = ev.status != "error"
                    else:
                        run_id, call_id, tool = ev.run_id, ev.call_id, ev.tool
                        success = False
                    if run_id != cur_run:
                        st = runs.get(run_id)
                        if st is None:
                            st = runs[run_id] = run_state()
                        cur_run = run_id
                        st_args, st_links, st_by_id = st.args, st.links, st.by_id
                        st_faults = st.faults
                    # Deriver._tool_step's rules, in its order.
                    args = st_args.pop(call_id, None)
                    cached = st_links.pop(call_id, None) if st_links else None
                    if cached is None or cached[0] == link_none:
                        issued = st_by_id.get(call_id)
                        if issued is not None:  # derive._link, inline for a link by id
                            issued[0] = True
                            st_by_id[call_id] = ended[issued[1]]  # retired (derive._RunState)
                            traceable = issued[1] if v1 else True  # linked by id
                        else:
                            link_kind, issued = link(st, call_id, tool, args)
                            if v1:
                                traceable = (
                                    link_kind == link_id and issued is not None and issued[1]
                                )
                            else:
                                traceable = link_kind != link_none
                    else:
                        link_kind, issued = cached
                        if v1:
                            traceable = link_kind == link_id and issued is not None and issued[1]
                        else:
                            traceable = link_kind != link_none
                    had_fault = not success
                    if st_faults:
                        faults = st_faults.pop(call_id, None)
                        if faults is not None:
                            had_fault = True
                            for _, effect in faults:
                                if effect in spoiling:
                                    success = False
                    if args is None:
                        args = {}
                    if type(args) is dict and len(args) == 1:
                        for name in args:
                            value = args[name]
                        value_cls = type(value)
                        if value_cls is int or value_cls is str:
                            # Keyed by the value alone (a new tool string would be hashed each time).
                            known = memo.get(value)
                            if known is not None and known[0] == tool and known[1] == name:
                                action = known[2]
                            else:
                                if len(memo) >= _MEMO_MAX:
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
                        replanned = st.pending_replan or (
                            st.model_since_failure and action != last_failed
                        )
                        st.last_failed_action = None
                    if not success:
                        st.last_failed_action = action
                    st.pending_replan = st.model_since_failure = False
                    steps += 1
                    batch.append(
                        (
                            action,
                            success,
                            had_fault,
                            None,
                            traceable if observing else unobserved,
                            replanned,
                            None,
                        )
                    )
                    if len(batch) >= size:
                        flush(batch)
                        batch = []
                    continue
                if cls is model_start_t:
                    run_id = ev.run_id
                    if run_id != cur_run:
                        st = runs.get(run_id)
                        if st is None:
                            st = runs[run_id] = run_state()
                        cur_run = run_id
                        st_args, st_links, st_by_id = st.args, st.links, st.by_id
                        st_faults = st.faults
                    st.model_since_failure = True
                    if not observing:
                        observing = deriver._observing = True
                    continue
                if cls is model_end_t:
                    run_id = ev.run_id
                    if run_id != cur_run:
                        st = runs.get(run_id)
                        if st is None:
                            st = runs[run_id] = run_state()
                        cur_run = run_id
                        st_args, st_links, st_by_id = st.args, st.links, st.by_id
                        st_faults = st.faults
                    st.model_since_failure = True
                    if not observing:
                        observing = deriver._observing = True
                    calls = ev.tool_calls
                    if calls:
                        # derive._issue, inline.
                        text, reasoning = ev.text, ev.reasoning
                        explained = bool(
                            (text and text.strip()) or (reasoning and reasoning.strip())
                        )
                        if len(calls) == 1:  # the commonest: the same, without the loop
                            c = calls[0]
                            call_id = c.id
                            args = c.args
                            issued = [False, explained, c.name, args, None]
                            st_by_id.setdefault(call_id, issued)  # the first issuer keeps it
                            st_args.setdefault(call_id, args)
                            st.pending = [issued]
                            continue
                        pending = []
                        for c in calls:
                            call_id = c.id
                            args = c.args
                            issued = [False, explained, c.name, args, None]
                            st_by_id.setdefault(call_id, issued)  # the first issuer keeps it
                            st_args.setdefault(call_id, args)
                            pending.append(issued)
                        st.pending = pending
                    continue
                if cls is fault_t:
                    call_id = ev.call_id
                    if call_id is not None:
                        run_id = ev.run_id
                        if run_id != cur_run:
                            st = runs.get(run_id)
                            if st is None:
                                st = runs[run_id] = run_state()
                            cur_run = run_id
                            st_args, st_links, st_by_id = st.args, st.links, st.by_id
                            st_faults = st.faults
                        faults = st_faults.get(call_id)
                        if faults is None:
                            st_faults[call_id] = [(ev.mode, ev.effect)]
                        else:
                            faults.append((ev.mode, ev.effect))
                    continue
                if cls is refused_t:  # exactly read_events' path for it
                    ev = slow_event(ev.raw, ev.line)
                    if ev is None:
                        continue
                # Any other kind, or a refused line's model: Deriver.feed, on the same state.
                deriver._index += steps
                steps = 0
                got: Any = feed(ev)
                observing = deriver._observing
                cur_run = None  # feed may have ended the run
                if got is not None:
                    batch.append(got if got.__class__ is tuple else got.as_tuple())
                    if len(batch) >= size:
                        flush(batch)
                        batch = []
        if batch:
            flush(batch)
    finally:
        deriver._index += steps


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
    # Long because: as fold_structs (module docstring); the same steps, read from dicts.
    feed, feed_raw = deriver.feed, deriver.feed_raw
    link, start_link, run_state, ended = _link, _start_link, _RunState, _ENDED
    runs = deriver._runs
    v1 = deriver._v1
    observing = deriver._observing
    unobserved = UNOBSERVED
    link_id, link_none = LINK_ID, LINK_NONE
    spoiling = RESULT_SPOILING_EFFECTS
    memo: dict[Any, tuple[str, str, str]] = {}
    cur_run: str | None = None
    st: Any = None
    steps = 0
    line_no = lineno
    try:
        for block, guard in blocks:
            for raw in block:
                line_no += 1
                ev: Any = None
                if not guard or (raw.find(b"NaN") < 0 and raw.find(b"Infinity") < 0):
                    try:
                        ev = decode(raw)
                    except ValueError:
                        pass
                if ev is None:  # refused: exactly read_events' path
                    ev = slow_event(raw, line_no)
                    if ev is None:
                        continue
                elif ev.__class__ is dict:
                    kind = ev["kind"]
                    if kind == TOOL_START:
                        run_id = ev["run_id"]
                        if run_id != cur_run:
                            st = runs.get(run_id)
                            if st is None:
                                st = runs[run_id] = run_state()
                            cur_run = run_id
                        call_id = ev["call_id"]
                        args = ev.get("args")
                        if args is None:  # absent: the model's default (null is refused)
                            args = {}
                        st.args[call_id] = args
                        if call_id not in st.links:  # derive._start_link, inline for a link by id
                            issued = st.by_id.get(call_id)
                            if issued is not None:
                                issued[0] = True
                            else:
                                start_link(st, call_id, ev["tool"], args)
                        continue
                    if kind == TOOL_END or kind == TOOL_ERROR:
                        run_id = ev["run_id"]
                        if run_id != cur_run:
                            st = runs.get(run_id)
                            if st is None:
                                st = runs[run_id] = run_state()
                            cur_run = run_id
                        call_id = ev["call_id"]
                        tool = ev["tool"]
                        # Deriver._tool_step's rules, in its order (as in fold_structs).
                        args = st.args.pop(call_id, None)
                        cached = st.links.pop(call_id, None) if st.links else None
                        if cached is None or cached[0] == link_none:
                            by_id = st.by_id
                            issued = by_id.get(call_id)
                            if issued is not None:  # derive._link, inline for a link by id
                                issued[0] = True
                                link_kind = link_id
                                by_id[call_id] = ended[issued[1]]  # retired (derive._RunState)
                            else:
                                link_kind, issued = link(st, call_id, tool, args)
                        else:
                            link_kind, issued = cached
                        if v1:
                            traceable = link_kind == link_id and issued is not None and issued[1]
                        else:
                            traceable = link_kind != link_none
                        success = kind == TOOL_END and ev.get("status") != "error"
                        had_fault = not success
                        if st.faults:
                            faults = st.faults.pop(call_id, None)
                            if faults is not None:
                                had_fault = True
                                for _, effect in faults:
                                    if effect in spoiling:
                                        success = False
                        if args is None:
                            args = {}
                        if type(args) is dict and len(args) == 1:
                            for name in args:
                                value = args[name]
                            value_cls = type(value)
                            if value_cls is int or value_cls is str:
                                # Keyed by the value alone (a new tool string would be hashed each time).
                                known = memo.get(value)
                                if known is not None and known[0] == tool and known[1] == name:
                                    action = known[2]
                                else:
                                    if len(memo) >= _MEMO_MAX:
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
                            replanned = st.pending_replan or (
                                st.model_since_failure and action != last_failed
                            )
                            st.last_failed_action = None
                        if not success:
                            st.last_failed_action = action
                        st.pending_replan = st.model_since_failure = False
                        steps += 1
                        batch.append(
                            (
                                action,
                                success,
                                had_fault,
                                None,
                                traceable if observing else unobserved,
                                replanned,
                                None,
                            )
                        )
                        if len(batch) >= size:
                            flush(batch)
                            batch = []
                        continue
                    if kind == MODEL_START or kind == MODEL_END:
                        run_id = ev["run_id"]
                        if run_id != cur_run:
                            st = runs.get(run_id)
                            if st is None:
                                st = runs[run_id] = run_state()
                            cur_run = run_id
                        st.model_since_failure = True
                        if not observing:
                            observing = deriver._observing = True
                        calls = ev.get("tool_calls") if kind == MODEL_END else None
                        if calls:
                            # derive._issue, inline.
                            text, reasoning = ev.get("text"), ev.get("reasoning")
                            explained = bool(
                                (text and text.strip()) or (reasoning and reasoning.strip())
                            )
                            by_id, st_args = st.by_id, st.args
                            pending = []
                            for c in calls:
                                call_id = c["id"]
                                args = c.get("args", {})
                                issued = [False, explained, c["name"], args, None]
                                by_id.setdefault(call_id, issued)  # the first issuer keeps it
                                st_args.setdefault(call_id, args)
                                pending.append(issued)
                            st.pending = pending
                        continue
                    if kind == FAULT_INJECTED:
                        call_id = ev.get("call_id")
                        if call_id is not None:
                            run_id = ev["run_id"]
                            if run_id != cur_run:
                                st = runs.get(run_id)
                                if st is None:
                                    st = runs[run_id] = run_state()
                                cur_run = run_id
                            faults = st.faults.get(call_id)
                            if faults is None:
                                st.faults[call_id] = [(ev["mode"], ev["effect"])]
                            else:
                                faults.append((ev["mode"], ev["effect"]))
                        continue
                    # Any other kind: Deriver.feed_raw, on the same state.
                    deriver._index += steps
                    steps = 0
                    got: Any = feed_raw(ev)
                    cur_run = None  # feed_raw may have ended the run
                    if got is not None:
                        batch.append(got if got.__class__ is tuple else got.as_tuple())
                        if len(batch) >= size:
                            flush(batch)
                            batch = []
                    continue
                # A model (a refused line's, or a kind the fast reader leaves to the model).
                deriver._index += steps
                steps = 0
                got = feed(ev)
                observing = deriver._observing
                cur_run = None  # feed may have ended the run
                if got is not None:
                    batch.append(got if got.__class__ is tuple else got.as_tuple())
                    if len(batch) >= size:
                        flush(batch)
                        batch = []
        if batch:
            flush(batch)
    finally:
        deriver._index += steps
