"""Live per-step HB-Eval metrics, breaches, Safe Halt, the policy engine and Adapt-Plan.

``Monitor`` keeps O(1) running tallies and recomputes PEI, FRR, IRS and TI after every step,
exactly as the reference SDK's ``MonitorSession.record_step`` does (spec §2.1), but without
keeping a record per step: breaches are stored as intervals, so a long degraded run stays small.

Everything the monitor says is advisory unless ``enforce=True``: then a halt raises
``SafeHaltError`` at the next tool boundary (``check_tool_boundary``), and no tool runs after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..vocab import (
    ADAPT_PLAN_COOLDOWN,
    ADAPT_PLAN_MIN_STEP,
    ADAPT_PLAN_PEI_FLOOR,
    CSI,
    DERIVE_VERSION,
    DIRECTIVE_HALT,
    DIRECTIVE_REPLAN,
    FRR,
    IRS,
    METRIC_VERSIONS,
    NO_FAULT_OBSERVED,
    NO_JUDGED_STEP,
    NO_MODEL_EVENTS,
    NO_STEPS,
    PEI,
    PEI_V1,
    PEI_V2,
    PEI_V2_HANDLED,
    PEI_VERSIONS,
    SINGLE_RUN,
    TI,
    TRIGGER_POLICY,
    TRIGGER_POLICY_ENGINE,
)
from ._policy import (
    PRECEDENCE,
    Breach,
    Directive,
    PolicyRule,
    SafeHaltError,
    checked_floors,
    choose_directive,
    default_floors,
    parse_halt_policy,
    parse_tool_policy,
    update_tool_states,
)
from ._steps import StepTuple, action_fingerprint, fold_steps, loop_constants
from .derive import UNOBSERVED, Deriver, StepRecord

if TYPE_CHECKING:
    from ..events import EventBase

__all__ = [
    "Breach",
    "Directive",
    "Monitor",
    "PolicyRule",
    "SafeHaltError",
    "action_fingerprint",
    "score_events",
]

log = logging.getLogger("hbeval.monitor")

_QUEUE_MAX = 512
"""Steps ``record_step`` may queue before it folds them itself (memory stays flat)."""


class Monitor:
    """Live HB-Eval metrics over the steps of one run.

    ``Monitor()`` needs no arguments: default thresholds (PEI 0.70, FRR 0.65, IRS 0.60, TI 3.00),
    PEI v2 labelled "2.0", no halt policy. Feed it with ``record_step(...)`` (the reference's
    signature) or ``observe(event)`` (events folded into steps by hb-derive/3, or by the rules
    ``derive_version`` names). Thread-safe: parallel tool calls may feed one monitor.
    """

    def __init__(
        self,
        *,
        thresholds: Mapping[str, float] | None = None,
        pei_version: str = PEI_V2,
        halt_policy: Mapping[str, Any] | None = None,
        policy: Sequence[Any] | None = None,
        tool_policy: Mapping[str, int] | bool | None = None,
        enforce: bool = False,
        adapt_plan: bool = True,
        on_breach: Callable[[str, float, float, Monitor], Any] | None = None,
        on_halt: Callable[[dict[str, Any], Monitor], Any] | None = None,
        on_directive: Callable[[Directive, Monitor], Any] | None = None,
        precedents: Callable[[Directive], list[Any]] | None = None,
        strict: bool = False,
        derive_version: str = DERIVE_VERSION,
    ) -> None:
        # Long because: every tally and flag the hot path (``_steps.fold_steps``) reads is an
        # attribute set once here, each with its note; grouping them elsewhere would hide them.
        if pei_version not in PEI_VERSIONS:
            raise ValueError(
                f"pei_version must be one of {', '.join(PEI_VERSIONS)}; got {pei_version!r}"
            )
        self.thresholds: dict[str, float] = (
            dict(default_floors()) if thresholds is None else checked_floors(thresholds)
        )
        self.pei_version = pei_version
        self.enforce = enforce
        self.strict = strict
        self.adapt_plan = adapt_plan
        self._on_breach = on_breach
        self._on_halt = on_halt
        self._on_directive = on_directive
        self._precedents = precedents
        self._halt_policy = parse_halt_policy(halt_policy)
        self._rules = [PolicyRule.parse(r, i) for i, r in enumerate(policy)] if policy else []
        self._tool_policy = parse_tool_policy(tool_policy)
        self._lock = threading.Lock()
        self._derive_lock = threading.Lock()
        self._deriver = Deriver(derive_version)
        # Tallies (O(1) per step).
        self._n = 0
        self._n_replans = 0
        self._n_traceable = 0
        self._n_blind = 0
        """Steps recorded whose traceability could not be observed (see derive.py)."""
        self._n_episodes = 0
        self._in_episode = False
        self._n_transitions = 0
        self._n_faulted = 0
        self._n_faulted_ok = 0
        self._n_judged = 0
        self._n_deliberate = 0
        self._seen: set[int] = set()
        """Distinct actions so far, as ``action_fingerprint`` values (see there)."""
        self._recent: set[str] = set()
        """Actions already in ``_seen``, as strings: at most ``_steps.RECENT_MAX`` short ones, so a
        repeated action skips the fingerprint; cleared when full, so memory stays flat."""
        self._pei: float | None = None
        self._frr: float | None = None
        self._irs: float | None = None
        # Breaches as intervals; the open one per metric is extended while breaches continue.
        self._breaches: list[Breach] = []
        self._open_by_slot: list[Breach | None] = [None, None, None, None]
        """The open breach of PEI, FRR, IRS and TI (in that order), for the step loop."""
        self._open_at: list[int] = [0, 0, 0, 0]
        """Where each open breach sits in ``_breaches``."""
        self._closed_steps = 0
        self._ti_min_raw = 0.0
        """The open TI breach's minimum, unrounded (rounded when reported)."""
        """Breached steps of the closed intervals (see ``breach_count``)."""
        self._eager_count = 0
        # Halt and directives.
        self._halt_run = 0
        self.halted = False
        self.halt_record: dict[str, Any] | None = None
        self._directives: list[Directive] = []
        self._pending: Directive | None = None
        self._last_replan_step: int | None = None
        self._rule_runs: list[int] = [0] * len(self._rules)
        self._rule_fires: list[int] = [0] * len(self._rules)
        self._retried: dict[str, int] = {}
        self._tools: dict[str, dict[str, Any]] = {}
        get = self.thresholds.get
        self._floors = (get(PEI), get(FRR), get(IRS), get(TI))
        self._v1 = pei_version == PEI_V1
        self._handled_counts = pei_version == PEI_V2_HANDLED
        # observe() records through _record directly unless a subclass overrides record_step,
        # and derives and records under one lock when no user code runs inside a record (a
        # callback could feed this monitor again: it must find the derivation lock free).
        self._direct = type(self).record_step is Monitor.record_step
        self._one_lock = self._direct and all(
            hook is None for hook in (on_breach, on_halt, on_directive, precedents)
        )
        # Steps are queued and folded on the next read when nothing else can observe them.
        self._defer = (
            self._one_lock
            and self._halt_policy is None
            and not self._rules
            and self._tool_policy is None
        )
        self._loop = loop_constants(self)
        self._queue: list[StepTuple] = []
        """Steps not folded yet, in order; appended to without the lock (``list.append`` is
        atomic), taken from the front under it."""

    # ------------------------------------------------------------------ feeding
    def observe(self, event: EventBase) -> StepRecord | None:
        """Fold one event into steps (hb-derive/3); a completed step is recorded and returned."""
        if self._defer:
            # Derived and queued under the derivation lock, so steps keep the events' order.
            with self._derive_lock:
                step = self._deriver.feed(event)
                if step is None:
                    return None
                queue = self._queue
                queue.append(step.as_tuple())
            if len(queue) >= _QUEUE_MAX:
                self._drain()
            return step
        if self._one_lock:
            # No callback can run while a step is recorded, so deriving and recording under
            # the one lock cannot re-enter: one acquisition per event instead of two per step.
            with self._lock:
                step = self._deriver.feed(event)
                if step is not None:
                    self._fold((step.as_tuple(),))
            return step
        with self._derive_lock:
            step = self._deriver.feed(event)
        if step is not None:
            if self._direct:  # record_step as defined here: skip its keyword parsing
                with self._lock:
                    self._fold((step.as_tuple(),))
            else:  # a subclass that overrides record_step sees every step, as it always did
                fields = step.fields()
                if not step.observed:  # falsy, as False was; the tally knows it (no_model_events)
                    fields["traceable"] = UNOBSERVED
                self.record_step(**fields)
        return step

    def _observe_folded(self, event: EventBase) -> StepRecord | None:
        """``observe``, but a completed step is folded at once instead of queued.

        For a caller that reads the monitor after every step (live capture asks for new
        directives after each one): queueing would only add a drain to every step. Steps
        queued before it are folded first, so the order is kept.
        """
        if not self._defer:
            return self.observe(event)  # folds every step at once already
        with self._derive_lock:
            step = self._deriver.feed(event)
            if step is not None:
                with self._lock:
                    queue = self._queue
                    if queue:
                        n = len(queue)
                        batch = queue[:n]
                        del queue[:n]
                        batch.append(step.as_tuple())
                        self._fold(batch)
                    else:
                        self._fold((step.as_tuple(),))
        return step

    def record_step(
        self,
        *,
        action: str = "",
        success: bool = True,
        had_fault: bool = False,
        recovered_intentionally: bool | None = None,
        traceable: bool = True,
        replanned: bool = False,
        handled_deliberately: bool | None = None,
        **metadata: Any,
    ) -> None:
        """Record one executed step and recompute the live metrics (the reference's signature).

        The rules are the reference's, spelled out in the module docstring of derive.py and in
        spec §2.1. With no callback and no policy configured, nothing can observe a step until
        the monitor is read, so steps are queued (a bounded queue: memory stays flat) and
        folded in order by the next read; otherwise each step is folded at once.
        ``traceable`` is ``derive.UNOBSERVED`` (falsy) for a tool step derived before any
        model event: ``observe`` passes that to a subclass that overrides this method, so its
        TI stays undefined (``no_model_events``) as the base class's does.
        """
        step = (
            action,
            success,
            had_fault,
            recovered_intentionally,
            traceable,
            replanned,
            handled_deliberately,
        )
        if self._defer:
            queue = self._queue
            queue.append(step)  # list.append is atomic: no lock needed to queue
            if len(queue) < _QUEUE_MAX:
                return
            self._drain()
            return
        with self._lock:
            self._fold((step,))

    def _drain(self) -> None:
        """Fold every queued step, in order (a no-op when nothing is queued)."""
        queue = self._queue
        if not queue:
            return
        with self._lock:
            # Only the first ``n`` steps are taken: others may be appended meanwhile (two C
            # calls, not a Python call per step).
            n = len(queue)
            batch = queue[:n]
            del queue[:n]
            self._fold(batch)

    def _record(
        self,
        action: str,
        success: bool,
        had_fault: bool,
        recovered_intentionally: bool | None,
        traceable: bool,
        replanned: bool,
        handled_deliberately: bool | None,
    ) -> None:
        """Fold one step, with the lock held (kept for callers that record one step)."""
        self._fold(
            (
                (
                    action,
                    success,
                    had_fault,
                    recovered_intentionally,
                    traceable,
                    replanned,
                    handled_deliberately,
                ),
            )
        )

    def _fold(self, batch: Iterable[StepTuple]) -> None:
        """``record_step``'s work over a batch of steps, in order, called with the lock held."""
        fold_steps(self, batch)

    def _value(self, metric: str) -> float | None:
        if metric == PEI:
            return self._pei
        if metric == FRR:
            return self._frr
        if metric == IRS:
            return self._irs
        if metric == TI:
            return self._ti
        return None

    @property
    def _ti(self) -> float | None:
        # TI = round(5 x traceable / steps, 2), Python's round-half-even on the binary float,
        # exactly as the reference (3.125 -> 3.12); undefined while only tool steps were
        # derived and no model event was seen (hb-derive/3: no_model_events).
        n = self._n
        if not n or (self._n_blind == n and not self._deriver.observing):
            return None
        return round(5.0 * self._n_traceable / n, 2)

    def _call(self, fn: Callable[..., Any], *args: Any) -> None:
        # Capture never breaks the user's agent: a failing callback is logged, not raised.
        try:
            fn(*args)
        except Exception:
            if self.strict:
                raise
            log.exception("hbeval monitor callback %r failed", fn)

    # ------------------------------------------------------------------ halt and policies
    def _evaluate_halt_policy(self, idx: int) -> None:
        policy = self._halt_policy
        assert policy is not None
        metric = policy["metric"]
        value = self._value(metric)
        if value is None:
            return  # a gap in measurement is neither a breach nor a recovery
        if value < policy["below"]:
            self._halt_run += 1
        else:
            self._halt_run = 0
            return
        if self._halt_run >= policy["for_steps"]:
            reason = f"{metric.upper()} stayed below {policy['below']} for {self._halt_run} consecutive steps"
            self._halt(
                {
                    "metric": metric,
                    "metric_value": value,
                    "threshold": policy["below"],
                    "consecutive_steps": self._halt_run,
                    "step_index": idx,
                    "policy": dict(policy),
                    "reason": reason,
                    "trigger_source": TRIGGER_POLICY,
                    "occurred_at": time.time(),
                }
            )

    def _halt(self, record: dict[str, Any]) -> None:
        self.halted = True
        self.halt_record = record
        if self._on_halt is not None:
            self._call(self._on_halt, record, self)

    def _evaluate_policies(self, idx: int, action: str, success: bool) -> None:
        if self._tool_policy is not None and action:
            update_tool_states(self._tools, self._tool_policy, idx, action, success)
        chosen = choose_directive(
            self._rules,
            self._rule_runs,
            self._rule_fires,
            self._retried,
            self._value,
            idx,
            action,
        )
        if chosen is None:
            return
        if chosen.action == DIRECTIVE_HALT and not self.halted:
            self._halt(
                {
                    "metric": chosen.metric,
                    "metric_value": chosen.metric_value,
                    "threshold": chosen.threshold,
                    "consecutive_steps": chosen.consecutive_steps,
                    "step_index": idx,
                    "policy": dict(chosen.policy),
                    "reason": chosen.reason,
                    "trigger_source": TRIGGER_POLICY_ENGINE,
                    "occurred_at": chosen.occurred_at,
                }
            )
        self._issue(chosen)

    def _adapt_plan(self, idx: int, prev: float, pei: float) -> None:
        # Called only when PEI crossed from >= the floor to below it on this step.
        floor = ADAPT_PLAN_PEI_FLOOR
        if idx + 1 < ADAPT_PLAN_MIN_STEP:
            return
        if (
            self._last_replan_step is not None
            and idx - self._last_replan_step < ADAPT_PLAN_COOLDOWN
        ):
            return
        self._last_replan_step = idx
        d = Directive(
            action=DIRECTIVE_REPLAN,
            reason=f"PEI fell from {prev:.4g} to {pei:.4g}, below {floor}: re-plan",
            step_index=idx,
            metric=PEI,
            metric_value=pei,
            threshold=floor,
        )
        if self._precedents is not None:
            try:
                d.precedents = list(self._precedents(d))
            except Exception:
                if self.strict:
                    raise
                log.exception("hbeval precedent lookup failed")
        self._issue(d)

    def _issue(self, d: Directive) -> None:
        self._directives.append(d)
        if self._pending is None or PRECEDENCE[d.action] >= PRECEDENCE[self._pending.action]:
            self._pending = d
        if self._on_directive is not None:
            self._call(self._on_directive, d, self)

    # ------------------------------------------------------------------ reading
    @property
    def breaches(self) -> list[Breach]:
        """Every breach interval so far, in the order they opened.

        An interval still open at the last step is returned as a copy that ends there, with
        that step's value (the monitor extends its own record only when the interval ends).
        """
        self._drain()
        out = list(self._breaches)
        if self._on_breach is not None:
            return out  # eager intervals (see _breach) are always whole
        last = self._n - 1
        current = (self._pei, self._frr, self._irs, self._ti)
        for slot, b in enumerate(self._open_by_slot):
            if b is not None:
                value = current[slot]
                low = round(self._ti_min_raw, 2) if slot == 3 else b.min_value
                out[self._open_at[slot]] = Breach(
                    b.metric,
                    b.threshold,
                    b.first_step,
                    last,
                    low,
                    b.last_value if value is None else value,
                )
        return out

    @property
    def directives(self) -> list[Directive]:
        """Every directive issued so far, in order."""
        self._drain()
        return self._directives

    @property
    def breach_count(self) -> int:
        """Breached (metric, step) pairs so far: the steps of every interval, summed."""
        self._drain()
        if self._on_breach is not None:
            return self._eager_count
        n = self._n
        return self._closed_steps + sum(
            n - b.first_step for b in self._open_by_slot if b is not None
        )

    @property
    def step_count(self) -> int:
        """Steps recorded so far."""
        self._drain()
        return self._n

    @property
    def metrics(self) -> dict[str, float | None]:
        """Live metrics ``{pei, frr, irs, ti, csi}``; None where undefined (see ``undefined``)."""
        self._drain()
        with self._lock:
            return {PEI: self._pei, FRR: self._frr, IRS: self._irs, TI: self._ti, CSI: None}

    @property
    def undefined(self) -> dict[str, str]:
        """Reason code of every undefined metric."""
        self._drain()
        with self._lock:
            return self._undefined_locked()

    def _undefined_locked(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self._n == 0:
            out[PEI] = NO_STEPS
            out[TI] = NO_STEPS
        elif self._n_blind == self._n and not self._deriver.observing:
            out[TI] = NO_MODEL_EVENTS
        if self._frr is None:
            out[FRR] = NO_FAULT_OBSERVED
        if self._irs is None:
            out[IRS] = NO_FAULT_OBSERVED if self._n_faulted == 0 else NO_JUDGED_STEP
        out[CSI] = SINGLE_RUN
        return out

    def snapshot(self) -> dict[str, Any]:
        """Metrics, undefined reasons and running counts read at one instant (for exporters).

        ``{"metrics", "undefined", "steps", "faulted_steps", "breaches", "halted"}``; the
        metrics and their reasons always agree, even while other threads record steps.
        """
        self._drain()
        with self._lock:
            return {
                "metrics": {
                    PEI: self._pei,
                    FRR: self._frr,
                    IRS: self._irs,
                    TI: self._ti,
                    CSI: None,
                },
                "undefined": self._undefined_locked(),
                "steps": self._n,
                "faulted_steps": self._n_faulted,
                "breaches": self.breach_count,
                "halted": self.halted,
            }

    @property
    def metric_versions(self) -> dict[str, str]:
        """The versions of the metrics this monitor computes, labelled truthfully."""
        versions = dict(METRIC_VERSIONS)
        versions[PEI] = self.pei_version
        return versions

    @property
    def pending_directive(self) -> Directive | None:
        """The pending directive, without consuming it."""
        self._drain()
        return self._pending

    def take_directive(self) -> Directive | None:
        """Read and clear the pending directive (consumed on read, so nobody acts on it twice)."""
        self._drain()
        with self._lock:
            d, self._pending = self._pending, None
            return d

    @property
    def directive(self) -> dict[str, Any] | None:
        """The pending directive as a dict, consumed on read (the reference's property)."""
        d = self.take_directive()
        return d.as_dict() if d is not None else None

    @property
    def unreliable_tools(self) -> list[str]:
        """Actions whose circuit breaker is open (advisory)."""
        return sorted(t for t, st in self._tools.items() if st["state"] == "open")

    @property
    def tool_states(self) -> dict[str, dict[str, Any]]:
        """Circuit-breaker state per action."""
        return {t: dict(st) for t, st in self._tools.items()}

    def should_halt(self) -> bool:
        """Whether a Safe Halt has been decided."""
        return self.halted

    def halt(self, reason: str = "halted by caller") -> None:
        """Halt by hand (trigger "manual")."""
        self._drain()
        with self._lock:
            if not self.halted:
                self._halt(
                    {
                        "metric": None,
                        "metric_value": None,
                        "threshold": None,
                        "consecutive_steps": None,
                        "step_index": self._n - 1 if self._n else None,
                        "policy": None,
                        "reason": reason,
                        "trigger_source": "manual",
                        "occurred_at": time.time(),
                    }
                )

    def check_tool_boundary(self, tool: str | None = None) -> None:
        """Call before a tool runs: raises ``SafeHaltError`` once an enforced halt was decided."""
        if self.halted and self.enforce and self.halt_record is not None:
            raise SafeHaltError(self.halt_record)

    def summary(self) -> dict[str, Any]:
        """Everything the monitor knows, JSON-ready; undefined metrics are null with reasons."""
        self._drain()
        metrics = self.metrics
        return {
            "metrics": metrics,
            "undefined": self.undefined,
            "metric_versions": self.metric_versions,
            "derive_version": self._deriver.version,
            "step_count": self._n,
            "thresholds": dict(self.thresholds),
            "breach_count": self.breach_count,
            "breaches": [b.as_dict() for b in self.breaches],
            "halted": self.halted,
            "halt_record": self.halt_record,
            "halt_policy": self._halt_policy,
            "policy": [r.as_dict() for r in self._rules],
            "directives": [d.as_dict() for d in self._directives],
            "unreliable_tools": self.unreliable_tools,
        }


def score_events(
    events: Iterable[EventBase],
    monitor: Monitor | None = None,
    *,
    steps: list[StepRecord] | None = None,
    **options: Any,
) -> Monitor:
    """Fold a whole trace into ``monitor`` (a new ``Monitor(**options)`` when None); return it.

    The same result as calling ``monitor.observe(ev)`` for every event: the fast path of
    scoring a stored trace. Each completed step is appended to ``steps`` when a list is given.
    A monitor made here is private to this call, so its events are derived in a tight loop
    without the derivation lock, and steps are recorded under the monitor's lock, so callbacks
    see what they see under ``record_step``; a monitor passed in is fed through ``observe``.
    """
    if monitor is not None and options:
        raise TypeError(
            f"score_events got a monitor and Monitor options ({', '.join(sorted(options))}); "
            "configure the monitor you pass, or pass options only"
        )
    own = monitor is None
    m = Monitor(**options) if monitor is None else monitor
    if not (own and m._direct):  # a monitor others may feed too: exactly as observe does
        observe = m.observe
        for ev in events:
            step = observe(ev)
            if step is not None and steps is not None:
                steps.append(step)
        return m
    # Private to this call: nobody else derives on it, so only recording takes the lock (and
    # callbacks, if any, run under it exactly as they do under record_step). With nothing to
    # call back, steps are folded in batches, as record_step's queue does.
    deriver = m._deriver
    feed, fold, lock = deriver.feed, m._fold, m._lock
    batch: list[StepTuple] = []
    if steps is None and m._defer:
        # Nobody reads the steps and nothing calls back: the deriver hands over each step as
        # the tuple the fold takes, without building its record (an explicit step event
        # still comes as a record).
        deriver._as_tuples = True
        try:
            for ev in events:
                got: Any = feed(ev)  # a step tuple, or a record for an explicit step event
                if got is None:
                    continue
                batch.append(got if got.__class__ is tuple else got.as_tuple())
                if len(batch) >= _QUEUE_MAX:
                    with lock:
                        fold(batch)
                    batch = []
        finally:
            deriver._as_tuples = False
        if batch:
            with lock:
                fold(batch)
        return m
    keep = steps.append if steps is not None else None
    size = _QUEUE_MAX if m._defer else 1
    for ev in events:
        step = feed(ev)
        if step is None:
            continue
        batch.append(step.as_tuple())
        if len(batch) >= size:
            with lock:
                fold(batch)
            batch = []
        if keep is not None:
            keep(step)
    if batch:
        with lock:
            fold(batch)
    return m
