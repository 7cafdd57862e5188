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
from typing import TYPE_CHECKING, Any

from ..vocab import ADAPT_PLAN_PEI_FLOOR, FRR, IRS, PEI, TI
from ._policy import Breach
from .derive import UNOBSERVED

if TYPE_CHECKING:
    from .monitor import Monitor

__all__ = [
    "RECENT_CHARS",
    "RECENT_MAX",
    "StepTuple",
    "action_fingerprint",
    "fold_steps",
    "loop_constants",
]

RECENT_MAX = 1024
"""How many recently seen actions are remembered as strings (a set cleared when full)."""
RECENT_CHARS = 256
"""Longer actions are only remembered by fingerprint."""
_INF = float("inf")

StepTuple = tuple[str, bool, bool, "bool | None", bool, bool, "bool | None"]
"""One step as ``record_step`` takes it: action, success, had_fault, recovered_intentionally,
traceable (or ``derive.UNOBSERVED``, falsy), replanned, handled_deliberately."""


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

    This is the hot path, so it is one loop over local variables: the tallies, the open breach
    intervals and their minima are loaded once per batch and stored back once, or before
    anything outside the loop (a callback, a policy, Adapt-Plan) may read them. It is long
    because splitting it into calls would cost more than the arithmetic it does. Work is done
    only where a figure can change: FRR moves on faulted steps only, IRS on judged ones, so
    their breach checks run there (in the order PEI, FRR, IRS, TI, as intervals open).
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
    frr, irs = m._frr, m._irs
    # What a monitor's configuration fixes, worked out once when it was made (a capture
    # folds one step per tool call, so the set-up of a batch counts as much as its loop).
    (
        seen, recent, v1, handled_counts, c_pei, c_frr, c_irs, f_ti, ti_sure, ti_near, lazy,
        every_step,
    ) = m._loop  # fmt: skip
    # PEI = 1 - lost / steps: lost is re-plans (v1) or |episodes - transitions| (v2), kept
    # here and updated only when one of them changes.
    lost = n_replans if v1 else abs(n_episodes - n_transitions)
    # ``lost`` as of the step before (-1 before the first step, so that one is looked at).
    lost_before = lost if n else -1
    crossed = False  # PEI fell below Adapt-Plan's floor on this step
    # PEI crossing from >= the floor to below it on a step triggers Adapt-Plan; with
    # Adapt-Plan off the floor is minus infinity, which nothing crosses.
    adapt_floor = ADAPT_PLAN_PEI_FLOOR if m.adapt_plan else -_INF
    fingerprint = action_fingerprint
    # The open intervals, and the minima of PEI, FRR and IRS's (kept here, stored back below).
    b_pei, b_frr, b_irs, b_ti = m._open_by_slot
    min_pei = b_pei.min_value if b_pei is not None else 0.0
    min_frr = b_frr.min_value if b_frr is not None else 0.0
    min_irs = b_irs.min_value if b_irs is not None else 0.0
    ti_min_raw = m._ti_min_raw
    # Steps whose traceability could not be observed (derived before any model event, see
    # derive.py): while every step so far is one, TI is undefined and cannot breach.
    n_blind = m._n_blind
    unobserved = UNOBSERVED
    for action, success, had_fault, rec, traceable, replanned, handled in batch:
        idx = n
        n += 1
        # A plan transition: a declared re-plan, or a new successful action taken inside a
        # fault episode by a step that did not open it (the reference's rule): a faulted step
        # of an episode that was already open (``in_episode`` still holds the step before's).
        # Actions seen lately are known as strings; others by fingerprint (see there).
        if action and action not in recent:
            key = fingerprint(action)
            if key not in seen:
                seen.add(key)
                if had_fault and in_episode and success and not replanned:
                    n_transitions += 1
                    lost = n_replans if v1 else abs(n_episodes - n_transitions)
            if len(action) <= RECENT_CHARS:
                if len(recent) >= RECENT_MAX:
                    recent.clear()
                recent.add(action)
        if replanned:
            n_replans += 1
            n_transitions += 1
            lost = n_replans if v1 else abs(n_episodes - n_transitions)
        if traceable:
            n_traceable += 1
        elif traceable is unobserved:
            n_blind += 1
        if had_fault:
            if not in_episode:
                n_episodes += 1
                in_episode = True
                if handled_counts and success and (rec or handled) and not replanned:
                    # PEI 2.0+hb.1: a step that meets a fault and handles it deliberately in
                    # the same step (a correct one-step refusal) adapted; v2 would score it
                    # 0.0 (§8.2).
                    n_transitions += 1
                lost = n_replans if v1 else abs(n_episodes - n_transitions)
            n_faulted += 1
            if success:
                n_faulted_ok += 1
            if rec is not None or handled is not None:
                n_judged += 1
                if rec or handled:
                    n_deliberate += 1
                irs = n_deliberate / n_judged
            frr = n_faulted_ok / n_faulted
        elif in_episode:
            in_episode = False

        if lost != lost_before or b_pei is not None:
            # PEI is 1 - lost / steps: with ``lost`` unchanged it can only rise, so a step that
            # changes neither opens no PEI breach, lowers no minimum and crosses no floor;
            # only a step that moves ``lost``, or one inside a PEI breach, is looked at. Both
            # values are computed exactly as on every step before. No max(0.0, .) is needed:
            # episodes, transitions and re-plans each count at most one per step, so ``lost``
            # is at most ``n`` and PEI at least 0.0.
            pei_prev = 1.0 - lost_before / idx if idx else -1.0
            pei = 1.0 - lost / n
            lost_before = lost
            if lazy:
                # Lazy intervals: an open breach holds its first step and its minimum; its
                # last step and value are the current ones until a step ends it (see
                # ``breaches``).
                if pei < c_pei:
                    if b_pei is None:
                        b_pei = _open(m, 0, PEI, pei, c_pei, idx)
                        min_pei = pei
                    elif pei < min_pei:
                        min_pei = pei
                elif b_pei is not None:
                    b_pei.min_value = min_pei
                    _close(m, 0, idx, pei_prev)
                    b_pei = None
            if pei < adapt_floor and pei_prev >= adapt_floor:
                crossed = True
        # TI is rounded lazily (see _ti): rounding only matters for a breach near the floor.
        raw_ti = 5.0 * n_traceable / n

        if lazy:
            # FRR, IRS and TI's lazy intervals, as PEI's above. This runs on every step of a
            # degraded run.
            if had_fault:  # FRR is unchanged on other steps, and so is its breach
                if frr < c_frr:
                    if b_frr is None:
                        b_frr = _open(m, 1, FRR, frr, c_frr, idx)  # type: ignore[arg-type]
                        min_frr = frr  # type: ignore[assignment]
                    elif frr < min_frr:  # type: ignore[operator]
                        min_frr = frr  # type: ignore[assignment]
                elif b_frr is not None:
                    # The value before this step, computed as it was then.
                    b_frr.min_value = min_frr
                    prev = (n_faulted_ok - (1 if success else 0)) / (n_faulted - 1)
                    _close(m, 1, idx, prev)
                    b_frr = None
                if rec is not None or handled is not None:  # IRS moves on judged steps only
                    if irs < c_irs:
                        if b_irs is None:
                            b_irs = _open(m, 2, IRS, irs, c_irs, idx)  # type: ignore[arg-type]
                            min_irs = irs  # type: ignore[assignment]
                        elif irs < min_irs:  # type: ignore[operator]
                            min_irs = irs  # type: ignore[assignment]
                    elif b_irs is not None:
                        b_irs.min_value = min_irs
                        was = 1 if (rec or handled) else 0
                        _close(m, 2, idx, (n_deliberate - was) / (n_judged - 1))
                        b_irs = None
            # Its open minimum is kept raw: round() is monotone, so rounding the minimum
            # later gives the minimum of the rounded values.
            if (
                raw_ti < ti_sure or (raw_ti < ti_near and round(raw_ti, 2) < f_ti)
            ) and n_blind != n:
                if b_ti is None:
                    b_ti = _open(m, 3, TI, round(raw_ti, 2), f_ti, idx)
                    ti_min_raw = raw_ti
                elif raw_ti < ti_min_raw:
                    ti_min_raw = raw_ti
            elif b_ti is not None:
                prev_traceable = n_traceable - (1 if traceable else 0)
                m._ti_min_raw = ti_min_raw
                _close(m, 3, idx, round(5.0 * prev_traceable / idx, 2))
                b_ti = None

        if every_step or crossed:
            # Something outside this loop reads the monitor now: store the tallies first.
            pei = 1.0 - lost / n
            m._n = n
            m._n_replans = n_replans
            m._n_traceable = n_traceable
            m._n_blind = n_blind
            m._n_episodes = n_episodes
            m._in_episode = in_episode
            m._n_transitions = n_transitions
            m._n_faulted = n_faulted
            m._n_faulted_ok = n_faulted_ok
            m._n_judged = n_judged
            m._n_deliberate = n_deliberate
            m._pei, m._frr, m._irs = pei, frr, irs
            m._ti_min_raw = ti_min_raw
            if lazy:
                _store_minima(b_pei, min_pei, b_frr, min_frr, b_irs, min_irs)
            else:
                _breaches_with_callback(m, idx, pei, frr, irs, raw_ti if n_blind != n else None)
            if m._halt_policy is not None and not m.halted:
                m._evaluate_halt_policy(idx)
            if m._rules or m._tool_policy is not None:
                m._evaluate_policies(idx, action, success)
            if crossed:
                crossed = False
                m._adapt_plan(idx, pei_prev, pei)
            adapt_floor = ADAPT_PLAN_PEI_FLOOR if m.adapt_plan else -_INF

    m._n = n
    m._n_replans = n_replans
    m._n_traceable = n_traceable
    m._n_blind = n_blind
    m._n_episodes = n_episodes
    m._in_episode = in_episode
    m._n_transitions = n_transitions
    m._n_faulted = n_faulted
    m._n_faulted_ok = n_faulted_ok
    m._n_judged = n_judged
    m._n_deliberate = n_deliberate
    if n:
        m._pei = 1.0 - lost / n
    m._frr, m._irs = frr, irs
    m._ti_min_raw = ti_min_raw
    if lazy and (b_pei is not None or b_frr is not None or b_irs is not None):
        _store_minima(b_pei, min_pei, b_frr, min_frr, b_irs, min_irs)


def loop_constants(m: Monitor) -> tuple[Any, ...]:
    """What ``fold_steps`` reads of a monitor's configuration, in its order (see there)."""
    f_pei, f_frr, f_irs, f_ti = m._floors
    lazy = m._on_breach is None
    every_step = (
        not lazy or m._halt_policy is not None or bool(m._rules) or m._tool_policy is not None
    )
    return (
        m._seen,
        m._recent,
        m._v1,
        m._handled_counts,
        # A metric without a floor never breaches: nothing is below minus infinity.
        -_INF if f_pei is None else f_pei,
        -_INF if f_frr is None else f_frr,
        -_INF if f_irs is None else f_irs,
        f_ti,
        # TI's breach uses its rounded value; a raw value more than 0.01 under the floor stays
        # under it when rounded, and one at or above the floor plus 0.01 stays at or above it,
        # so most steps skip round(). Neither bound is ever met when TI has no floor.
        f_ti - 0.01 if f_ti is not None else -1.0,
        f_ti + 0.01 if f_ti is not None else -1.0,
        lazy,
        every_step,
    )


def _store_minima(
    b_pei: Breach | None,
    min_pei: float,
    b_frr: Breach | None,
    min_frr: float,
    b_irs: Breach | None,
    min_irs: float,
) -> None:
    # The step loop keeps the open intervals' minima in local variables.
    if b_pei is not None:
        b_pei.min_value = min_pei
    if b_frr is not None:
        b_frr.min_value = min_frr
    if b_irs is not None:
        b_irs.min_value = min_irs


def _open(m: Monitor, slot: int, metric: str, value: float, floor: float, idx: int) -> Breach:
    b = Breach(metric, floor, idx, idx, value, value)
    m._open_at[slot] = len(m._breaches)
    m._breaches.append(b)
    m._open_by_slot[slot] = b
    return b


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
    m: Monitor, idx: int, pei: float, frr: float | None, irs: float | None, raw_ti: float | None
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
    if f_ti is not None and raw_ti is not None and raw_ti < f_ti + 0.01:
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
