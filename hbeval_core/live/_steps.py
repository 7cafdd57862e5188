"""The monitor's step loop: tallies, the four live metrics and breach intervals, per step.

``fold_steps`` is ``Monitor.record_step``'s work over a batch of steps, called with the
monitor's lock held. It is one loop over local variables: the tallies are loaded once per batch
and stored back once, or before anything outside the loop (a callback, a policy, Adapt-Plan)
may read them. It is long because splitting it into calls would cost more than the arithmetic
it does (a step costs a few hundred nanoseconds; a call costs tens).

Breach intervals are lazy unless an ``on_breach`` callback is set: an open interval holds its
first step and its minimum, and its last step and value are the current ones until a step ends
it (``Monitor.breaches`` reports an open one as a copy ending at the last step). With a callback,
intervals are extended on every breached step, so the callback always sees them whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import blake2b
from typing import TYPE_CHECKING

from ..vocab import ADAPT_PLAN_PEI_FLOOR, FRR, IRS, PEI, TI
from ._policy import Breach

if TYPE_CHECKING:
    from .monitor import Monitor

__all__ = ["RECENT_CHARS", "RECENT_MAX", "StepTuple", "action_fingerprint", "fold_steps"]

RECENT_MAX = 1024
"""How many recently seen actions are remembered as strings (a set cleared when full)."""
RECENT_CHARS = 256
"""Longer actions are only remembered by fingerprint."""

StepTuple = tuple[str, bool, bool, "bool | None", bool, bool, "bool | None"]
"""One step as ``record_step`` takes it: action, success, had_fault, recovered_intentionally,
traceable, replanned, handled_deliberately."""


def action_fingerprint(action: str) -> int:
    """A 64-bit fingerprint of an action, how the Monitor remembers which actions it has seen.

    PEI counts a plan transition when a step takes an action not seen before, so the Monitor
    must remember every distinct action of a run. Holding the strings grows with their length
    (a million distinct tool calls with their arguments took about 200 MB); an int of 64 bits
    costs a few tens of bytes in a set, whatever the action's length. The fingerprint is the
    first 8 bytes of BLAKE2b, the same in every process, so a run is scored the same everywhere.

    Collision odds: two distinct actions share a fingerprint with probability 2**-64; among n
    distinct actions of one run the chance that any two collide is about n**2 / 2**65: 3e-8 for a
    million actions, 3e-12 for ten thousand. A collision would make a new action look seen and
    could lower PEI by one transition; at these odds PEI is exact in practice.
    """
    return int.from_bytes(
        blake2b(action.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
    )


def fold_steps(m: Monitor, batch: Iterable[StepTuple]) -> None:
    """``record_step``'s work over a batch of steps, in order, called with the lock held.

    This is the hot path, so it is one loop over local variables: the tallies are loaded
    once per batch and stored back once, or before anything outside the loop (a callback,
    a policy, Adapt-Plan) may read them. It is long because splitting it into calls would
    cost more than the arithmetic it does.
    """
    # Long because: the hot path, one loop over local variables (see the docstring).
    n = m._n
    n_replans = m._n_replans
    n_traceable = m._n_traceable
    n_episodes = m._n_episodes
    in_episode = m._in_episode
    n_transitions = m._n_transitions
    n_faulted = m._n_faulted
    n_faulted_ok = m._n_faulted_ok
    n_judged = m._n_judged
    n_deliberate = m._n_deliberate
    pei_prev, frr_prev, irs_prev = m._pei, m._frr, m._irs
    seen = m._seen
    recent = m._recent
    v1 = m._v1
    handled_counts = m._handled_counts
    f_pei, f_frr, f_irs, f_ti = m._floors
    lazy = m._on_breach is None
    ob = m._open_by_slot
    every_step = (
        not lazy or m._halt_policy is not None or bool(m._rules) or m._tool_policy is not None
    )
    adapt = m.adapt_plan
    adapt_floor = ADAPT_PLAN_PEI_FLOOR
    fingerprint = action_fingerprint
    ti_min_raw = m._ti_min_raw
    ti_sure = f_ti - 0.01 if f_ti is not None else 0.0
    ti_near = f_ti + 0.01 if f_ti is not None else -1.0  # raw TI at or above: no breach
    for action, success, had_fault, rec, traceable, replanned, handled in batch:
        idx = n
        n += 1
        if replanned:
            n_replans += 1
        if traceable:
            n_traceable += 1
        opened_here = False
        if had_fault:
            if not in_episode:
                n_episodes += 1
                in_episode = opened_here = True
            n_faulted += 1
            if success:
                n_faulted_ok += 1
            if rec is not None or handled is not None:
                n_judged += 1
                if rec or handled:
                    n_deliberate += 1
        elif in_episode:
            in_episode = False
        # A plan transition: a declared re-plan, or a new successful action taken inside
        # an open fault episode by a step that did not open it (the reference's rule).
        # Actions seen lately are known as strings; others by fingerprint (see there).
        new_action = False
        if action and action not in recent:
            key = fingerprint(action)
            if key not in seen:
                seen.add(key)
                new_action = True
            if len(action) <= RECENT_CHARS:
                if len(recent) >= RECENT_MAX:
                    recent.clear()
                recent.add(action)
        if replanned or (new_action and in_episode and success and not opened_here):
            n_transitions += 1
        elif handled_counts and opened_here and success and (rec or handled):
            # PEI 2.0+hb.1: a step that meets a fault and handles it deliberately in the
            # same step (a correct one-step refusal) adapted; v2 would score it 0.0 (§8.2).
            n_transitions += 1

        if v1:
            pei = 1.0 - n_replans / n
        else:
            gap = n_episodes - n_transitions  # |gap| without a call to abs()
            pei = 1.0 - (gap if gap >= 0 else -gap) / n
        if pei < 0.0:
            pei = 0.0
        frr = n_faulted_ok / n_faulted if n_faulted else None
        irs = n_deliberate / n_judged if n_judged else None
        # TI is rounded lazily (see _ti): rounding only matters for a breach near the floor.
        raw_ti = 5.0 * n_traceable / n

        if lazy:
            # Lazy intervals: an open breach holds its first step and its minimum; its
            # last step and value are the current ones until a step ends it (see
            # ``breaches``). This runs on every step of a degraded run.
            if f_pei is not None and pei < f_pei:
                b = ob[0]
                if b is None:
                    _open(m, 0, PEI, pei, f_pei, idx)
                elif pei < b.min_value:
                    b.min_value = pei
            elif ob[0] is not None:
                _close(m, 0, idx, pei_prev)
            if f_frr is not None and frr is not None and frr < f_frr:
                b = ob[1]
                if b is None:
                    _open(m, 1, FRR, frr, f_frr, idx)
                elif frr < b.min_value:
                    b.min_value = frr
            elif ob[1] is not None:
                _close(m, 1, idx, frr_prev)
            if f_irs is not None and irs is not None and irs < f_irs:
                b = ob[2]
                if b is None:
                    _open(m, 2, IRS, irs, f_irs, idx)
                elif irs < b.min_value:
                    b.min_value = irs
            elif ob[2] is not None:
                _close(m, 2, idx, irs_prev)
            # TI's breach uses its rounded value; a raw value more than 0.01 under the
            # floor stays under it when rounded, so most steps skip round(). Its open
            # minimum is kept raw: round() is monotone, so rounding the minimum later
            # gives the minimum of the rounded values.
            breached = False
            if raw_ti < ti_near:  # never when TI has no floor (ti_near is then -1)
                breached = raw_ti < ti_sure or round(raw_ti, 2) < f_ti  # type: ignore[operator]
            if breached:
                if ob[3] is None:
                    _open(m, 3, TI, round(raw_ti, 2), f_ti, idx)  # type: ignore[arg-type]
                    ti_min_raw = raw_ti
                elif raw_ti < ti_min_raw:
                    ti_min_raw = raw_ti
            elif ob[3] is not None:
                prev_traceable = n_traceable - (1 if traceable else 0)
                m._ti_min_raw = ti_min_raw
                _close(m, 3, idx, round(5.0 * prev_traceable / idx, 2))

        crossed = adapt and pei_prev is not None and pei_prev >= adapt_floor > pei
        if every_step or crossed:
            # Something outside this loop reads the monitor now: store the tallies first.
            m._n = n
            m._n_replans = n_replans
            m._n_traceable = n_traceable
            m._n_episodes = n_episodes
            m._in_episode = in_episode
            m._n_transitions = n_transitions
            m._n_faulted = n_faulted
            m._n_faulted_ok = n_faulted_ok
            m._n_judged = n_judged
            m._n_deliberate = n_deliberate
            m._pei, m._frr, m._irs = pei, frr, irs
            m._ti_min_raw = ti_min_raw
            if not lazy:
                _breaches_with_callback(m, idx, pei, frr, irs, raw_ti)
            if m._halt_policy is not None and not m.halted:
                m._evaluate_halt_policy(idx)
            if m._rules or m._tool_policy is not None:
                m._evaluate_policies(idx, action, success)
            if crossed:
                m._adapt_plan(idx, pei_prev, pei)  # type: ignore[arg-type]
            adapt = m.adapt_plan
        pei_prev, frr_prev, irs_prev = pei, frr, irs

    m._n = n
    m._n_replans = n_replans
    m._n_traceable = n_traceable
    m._n_episodes = n_episodes
    m._in_episode = in_episode
    m._n_transitions = n_transitions
    m._n_faulted = n_faulted
    m._n_faulted_ok = n_faulted_ok
    m._n_judged = n_judged
    m._n_deliberate = n_deliberate
    m._pei, m._frr, m._irs = pei_prev, frr_prev, irs_prev
    m._ti_min_raw = ti_min_raw


def _open(m: Monitor, slot: int, metric: str, value: float, floor: float, idx: int) -> None:
    b = Breach(metric, floor, idx, idx, value, value)
    m._open_at[slot] = len(m._breaches)
    m._breaches.append(b)
    m._open_by_slot[slot] = b


def _close(m: Monitor, slot: int, idx: int, prev_value: float | None) -> None:
    # The breach ended on the step before ``idx``, at that step's value.
    b = m._open_by_slot[slot]
    assert b is not None and prev_value is not None
    b.last_step = idx - 1
    b.last_value = prev_value
    if slot == 3 and m._on_breach is None:
        b.min_value = round(m._ti_min_raw, 2)
    m._closed_steps += idx - b.first_step
    m._open_by_slot[slot] = None


def _breaches_with_callback(
    m: Monitor, idx: int, pei: float, frr: float | None, irs: float | None, raw_ti: float
) -> None:
    # With an on_breach callback, each breach is counted and reported before the next
    # metric is looked at, exactly as the callback always saw it.
    f_pei, f_frr, f_irs, f_ti = m._floors
    if f_pei is not None and pei < f_pei:
        _breach(m, 0, PEI, pei, f_pei, idx)
    if f_frr is not None and frr is not None and frr < f_frr:
        _breach(m, 1, FRR, frr, f_frr, idx)
    if f_irs is not None and irs is not None and irs < f_irs:
        _breach(m, 2, IRS, irs, f_irs, idx)
    if f_ti is not None and raw_ti < f_ti + 0.01:
        ti = round(raw_ti, 2)
        if ti < f_ti:
            _breach(m, 3, TI, ti, f_ti, idx)


def _breach(m: Monitor, slot: int, metric: str, value: float, floor: float, idx: int) -> None:
    # Eager intervals, extended on every breached step, so the callback sees them whole.
    m._eager_count += 1
    b = m._open_by_slot[slot]
    if b is not None and b.last_step == idx - 1:
        b.last_step = idx
        b.last_value = value
        if value < b.min_value:
            b.min_value = value
    else:
        _open(m, slot, metric, value, floor, idx)
    if m._on_breach is not None:
        m._call(m._on_breach, metric, value, floor, m)
