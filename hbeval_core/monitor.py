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
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from .derive import Deriver, StepRecord
from .vocab import (
    ADAPT_PLAN_COOLDOWN,
    ADAPT_PLAN_MIN_STEP,
    ADAPT_PLAN_PEI_FLOOR,
    CSI,
    DEFAULT_THRESHOLDS,
    DERIVE_VERSION,
    DIRECTIVE_ESCALATE,
    DIRECTIVE_HALT,
    DIRECTIVE_REPLAN,
    DIRECTIVE_RETRY,
    FRR,
    IRS,
    LIVE_METRICS,
    METRIC_VERSIONS,
    NO_FAULT_OBSERVED,
    NO_JUDGED_STEP,
    NO_STEPS,
    PEI,
    PEI_V1,
    PEI_V2,
    PEI_V2_HANDLED,
    PEI_VERSIONS,
    POLICY_ACTIONS,
    SINGLE_RUN,
    TI,
    TRIGGER_POLICY,
    TRIGGER_POLICY_ENGINE,
)

if TYPE_CHECKING:
    from .events import EventBase

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

_PRECEDENCE = {DIRECTIVE_HALT: 4, DIRECTIVE_ESCALATE: 3, DIRECTIVE_RETRY: 2, DIRECTIVE_REPLAN: 1}
_DEFAULT_MAX_FIRES = 3
_DEFAULT_FAILURES_BEFORE_OPEN = 3
_DEFAULT_PROBE_AFTER_STEPS = 10


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


class SafeHaltError(RuntimeError):
    """Raised at a tool boundary after an enforced Safe Halt; no tool runs after it."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = dict(record)
        super().__init__(str(record.get("reason", "Safe Halt")))


@dataclass
class Breach:
    """A run of consecutive steps on which one metric stayed below its floor."""

    metric: str
    threshold: float
    first_step: int
    last_step: int
    min_value: float
    last_value: float

    @property
    def steps(self) -> int:
        """How many steps the interval covers."""
        return self.last_step - self.first_step + 1

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "metric": self.metric,
            "threshold": self.threshold,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "steps": self.steps,
            "min_value": self.min_value,
            "last_value": self.last_value,
        }


@dataclass
class Directive:
    """Advice from the monitor: replan, retry, escalate or halt, with the evidence behind it."""

    action: str
    reason: str
    step_index: int
    metric: str | None = None
    metric_value: float | None = None
    threshold: float | None = None
    consecutive_steps: int | None = None
    target: str | None = None
    policy: dict[str, Any] = field(default_factory=dict)
    precedents: list[Any] = field(default_factory=list)
    occurred_at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "action": self.action,
            "reason": self.reason,
            "step_index": self.step_index,
            "metric": self.metric,
            "metric_value": self.metric_value,
            "threshold": self.threshold,
            "consecutive_steps": self.consecutive_steps,
            "target": self.target,
            "policy": dict(self.policy),
            "precedents": list(self.precedents),
            "occurred_at": self.occurred_at,
        }


@dataclass(frozen=True)
class PolicyRule:
    """``when <metric> < below for for_steps consecutive steps then <action>``."""

    metric: str
    below: float
    action: str
    for_steps: int = 1
    max_fires: int | None = _DEFAULT_MAX_FIRES

    @classmethod
    def parse(cls, raw: Any, index: int = 0) -> PolicyRule:
        """Validate one rule in the reference's dict form; errors name the field and the fix."""
        if isinstance(raw, PolicyRule):
            return raw
        where = f"policy[{index}]"
        if not isinstance(raw, Mapping):
            raise ValueError(
                f"{where} must be a dict like "
                "{'when': {'metric': 'frr', 'below': 0.5, 'for_steps': 3}, 'then': 'halt'}"
            )
        when = raw.get("when")
        if not isinstance(when, Mapping):
            raise ValueError(f"{where}['when'] must be a dict with metric, below and for_steps")
        action = str(raw.get("then", "")).strip().lower()
        if action not in POLICY_ACTIONS:
            raise ValueError(
                f"{where}['then'] must be one of {', '.join(POLICY_ACTIONS)}; got {action!r}"
            )
        metric = _check_metric(when.get("metric"), f"{where}['when']['metric']")
        below = _check_number(when.get("below"), f"{where}['when']['below']")
        for_steps = _check_positive_int(when.get("for_steps", 1), f"{where}['when']['for_steps']")
        max_fires: int | None
        if action == DIRECTIVE_HALT:
            max_fires = None  # terminal: firing twice is meaningless, not dangerous
        else:
            max_fires = _check_positive_int(
                raw.get("max_fires", _DEFAULT_MAX_FIRES), f"{where}['max_fires']"
            )
        return cls(
            metric=metric, below=below, action=action, for_steps=for_steps, max_fires=max_fires
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "metric": self.metric,
            "below": self.below,
            "for_steps": self.for_steps,
            "action": self.action,
            "max_fires": self.max_fires,
        }


def _check_metric(value: Any, name: str) -> str:
    metric = str(value or "").strip().lower()
    if metric not in LIVE_METRICS:
        raise ValueError(f"{name} must be one of {', '.join(LIVE_METRICS)}; got {value!r}")
    return metric


def _check_number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} is required and must be a number; got {value!r}")
    number = float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return number


def _check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    return value


def _checked_floors(thresholds: Mapping[str, Any]) -> dict[str, float]:
    floors = dict(thresholds)
    for name, floor in floors.items():
        _check_metric(name, f"thresholds key {name!r}")
        _check_number(floor, f"thresholds[{name!r}]")
    return {k: float(v) for k, v in floors.items()}


_DEFAULT_FLOORS: list[dict[str, float]] = []


def _default_floors() -> dict[str, float]:
    """``DEFAULT_THRESHOLDS`` checked once (a monitor per trial is made while scoring)."""
    if not _DEFAULT_FLOORS:
        _DEFAULT_FLOORS.append(_checked_floors(DEFAULT_THRESHOLDS))
    return _DEFAULT_FLOORS[0]


class Monitor:
    """Live HB-Eval metrics over the steps of one run.

    ``Monitor()`` needs no arguments: default thresholds (PEI 0.70, FRR 0.65, IRS 0.60, TI 3.00),
    PEI v2 labelled "2.0", no halt policy. Feed it with ``record_step(...)`` (the reference's
    signature) or ``observe(event)`` (events folded into steps by hb-derive/1). Thread-safe:
    parallel tool calls may feed one monitor.
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
    ) -> None:
        if pei_version not in PEI_VERSIONS:
            raise ValueError(
                f"pei_version must be one of {', '.join(PEI_VERSIONS)}; got {pei_version!r}"
            )
        self.thresholds: dict[str, float] = (
            dict(_default_floors()) if thresholds is None else _checked_floors(thresholds)
        )
        self.pei_version = pei_version
        self.enforce = enforce
        self.strict = strict
        self.adapt_plan = adapt_plan
        self._on_breach = on_breach
        self._on_halt = on_halt
        self._on_directive = on_directive
        self._precedents = precedents
        self._halt_policy = self._parse_halt_policy(halt_policy)
        self._rules = [PolicyRule.parse(r, i) for i, r in enumerate(policy)] if policy else []
        self._tool_policy = self._parse_tool_policy(tool_policy)
        self._lock = threading.Lock()
        self._derive_lock = threading.Lock()
        self._deriver = Deriver()
        # Tallies (O(1) per step).
        self._n = 0
        self._n_replans = 0
        self._n_traceable = 0
        self._n_episodes = 0
        self._in_episode = False
        self._n_transitions = 0
        self._n_faulted = 0
        self._n_faulted_ok = 0
        self._n_judged = 0
        self._n_deliberate = 0
        self._seen: set[int] = set()
        """Distinct actions so far, as ``action_fingerprint`` values (see there)."""
        self._pei: float | None = None
        self._frr: float | None = None
        self._irs: float | None = None
        # Breaches as intervals; the open one per metric is extended while breaches continue.
        self.breaches: list[Breach] = []
        self._open_breach: dict[str, Breach] = {}
        self.breach_count = 0
        # Halt and directives.
        self._halt_run = 0
        self.halted = False
        self.halt_record: dict[str, Any] | None = None
        self.directives: list[Directive] = []
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

    # ------------------------------------------------------------------ configuration
    @staticmethod
    def _parse_halt_policy(policy: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if policy is None:
            return None
        if not isinstance(policy, Mapping):
            raise ValueError(
                "halt_policy must be a dict like {'metric': 'frr', 'below': 0.5, 'for_steps': 3}"
            )
        metric = _check_metric(policy.get("metric"), "halt_policy['metric']")
        if "below" not in policy:
            raise ValueError(
                "halt_policy['below'] is required: the value the metric must fall under"
            )
        below = _check_number(policy["below"], "halt_policy['below']")
        for_steps = _check_positive_int(policy.get("for_steps", 3), "halt_policy['for_steps']")
        return {"metric": metric, "below": below, "for_steps": for_steps}

    @staticmethod
    def _parse_tool_policy(tool_policy: Mapping[str, int] | bool | None) -> dict[str, int] | None:
        if tool_policy is None or tool_policy is False:
            return None
        raw: Mapping[str, Any] = {} if tool_policy is True else tool_policy
        return {
            "failures_before_open": _check_positive_int(
                raw.get("failures_before_open", _DEFAULT_FAILURES_BEFORE_OPEN),
                "tool_policy['failures_before_open']",
            ),
            "probe_after_steps": _check_positive_int(
                raw.get("probe_after_steps", _DEFAULT_PROBE_AFTER_STEPS),
                "tool_policy['probe_after_steps']",
            ),
        }

    # ------------------------------------------------------------------ feeding
    def observe(self, event: EventBase) -> StepRecord | None:
        """Fold one event through hb-derive/1; a completed step is recorded and returned."""
        if self._one_lock:
            # No callback can run while a step is recorded, so deriving and recording under
            # the one lock cannot re-enter: one acquisition per event instead of two per step.
            with self._lock:
                step = self._deriver.feed(event)
                if step is not None:
                    self._record(
                        step.action,
                        step.success,
                        step.had_fault,
                        step.recovered_intentionally,
                        step.traceable,
                        step.replanned,
                        step.handled_deliberately,
                    )
            return step
        with self._derive_lock:
            step = self._deriver.feed(event)
        if step is not None:
            if self._direct:  # record_step as defined here: skip its keyword parsing
                with self._lock:
                    self._record(
                        step.action,
                        step.success,
                        step.had_fault,
                        step.recovered_intentionally,
                        step.traceable,
                        step.replanned,
                        step.handled_deliberately,
                    )
            else:  # a subclass that overrides record_step sees every step, as it always did
                self.record_step(**step.fields())
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
        spec §2.1.
        """
        with self._lock:
            self._record(
                action,
                success,
                had_fault,
                recovered_intentionally,
                traceable,
                replanned,
                handled_deliberately,
            )

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
        """``record_step``'s work, called with the lock held.

        This is the hot path (a million steps a second is the budget), so the arithmetic is
        inlined and the tallies are read and written once each.
        """
        idx = self._n
        n = idx + 1
        self._n = n
        if replanned:
            self._n_replans += 1
        if traceable:
            self._n_traceable += 1
        opened_here = False
        in_episode = self._in_episode
        if had_fault:
            if not in_episode:
                self._n_episodes += 1
                self._in_episode = in_episode = True
                opened_here = True
            self._n_faulted += 1
            if success:
                self._n_faulted_ok += 1
            if recovered_intentionally is not None or handled_deliberately is not None:
                self._n_judged += 1
                if recovered_intentionally or handled_deliberately:
                    self._n_deliberate += 1
        elif in_episode:
            self._in_episode = in_episode = False
        # A plan transition: a declared re-plan, or a new successful action taken inside an
        # open fault episode by a step that did not open it (the reference's observed rule).
        seen = self._seen
        new_action = False
        if action:
            key = action_fingerprint(action)
            if key not in seen:
                seen.add(key)
                new_action = True
        if replanned or (new_action and in_episode and success and not opened_here):
            self._n_transitions += 1
        elif (
            self._handled_counts
            and opened_here
            and success
            and (recovered_intentionally or handled_deliberately)
        ):
            # PEI 2.0+hb.1: a step that meets a fault and handles it deliberately in the same
            # step (a correct one-step refusal) adapted; v2 would score it 0.0 (spec §8.2).
            self._n_transitions += 1

        if self._v1:
            pei = 1.0 - self._n_replans / n
        else:
            pei = 1.0 - abs(self._n_episodes - self._n_transitions) / n
        if pei < 0.0:
            pei = 0.0
        prev_pei = self._pei
        self._pei = pei
        n_faulted = self._n_faulted
        frr = self._n_faulted_ok / n_faulted if n_faulted else None
        self._frr = frr
        n_judged = self._n_judged
        irs = self._n_deliberate / n_judged if n_judged else None
        self._irs = irs
        # TI is rounded lazily (see _ti): rounding only matters for a breach near the floor.
        raw_ti = 5.0 * self._n_traceable / n

        f_pei, f_frr, f_irs, f_ti = self._floors
        if f_pei is not None and pei < f_pei:
            self._breach(PEI, pei, f_pei, idx)
        if f_frr is not None and frr is not None and frr < f_frr:
            self._breach(FRR, frr, f_frr, idx)
        if f_irs is not None and irs is not None and irs < f_irs:
            self._breach(IRS, irs, f_irs, idx)
        if f_ti is not None and raw_ti < f_ti + 0.01:
            ti = round(raw_ti, 2)
            if ti < f_ti:
                self._breach(TI, ti, f_ti, idx)

        if self._halt_policy is not None and not self.halted:
            self._evaluate_halt_policy(idx)
        if self._rules or self._tool_policy is not None:
            self._evaluate_policies(idx, action, success)
        if self.adapt_plan and prev_pei is not None and prev_pei >= ADAPT_PLAN_PEI_FLOOR > pei:
            self._adapt_plan(idx, prev_pei, pei)

    def _breach(self, metric: str, value: float, floor: float, idx: int) -> None:
        self.breach_count += 1
        b = self._open_breach.get(metric)
        if b is not None and b.last_step == idx - 1:
            b.last_step = idx
            b.last_value = value
            if value < b.min_value:
                b.min_value = value
        else:
            b = Breach(metric, floor, idx, idx, value, value)
            self.breaches.append(b)
            self._open_breach[metric] = b
        if self._on_breach is not None:
            self._call(self._on_breach, metric, value, floor, self)

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
        # exactly as the reference (3.125 -> 3.12).
        n = self._n
        return round(5.0 * self._n_traceable / n, 2) if n else None

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
        tp = self._tool_policy
        if tp is not None and action:
            st = self._tools.setdefault(
                action, {"state": "closed", "failures": 0, "opened_at_step": None}
            )
            if success:
                st.update(state="closed", failures=0, opened_at_step=None)
            else:
                st["failures"] += 1
                if (st["state"] == "closed" and st["failures"] >= tp["failures_before_open"]) or st[
                    "state"
                ] == "half_open":
                    st["state"] = "open"
                    st["opened_at_step"] = idx
            for other in self._tools.values():
                opened = other["opened_at_step"]
                if (
                    other["state"] == "open"
                    and opened is not None
                    and idx - opened >= tp["probe_after_steps"]
                ):
                    other["state"] = "half_open"
        chosen: Directive | None = None
        for i, rule in enumerate(self._rules):
            value = self._value(rule.metric)
            if value is None or value >= rule.below:
                self._rule_runs[i] = 0  # the policy engine resets on undefined, unlike halt_policy
                continue
            self._rule_runs[i] += 1
            run = self._rule_runs[i]
            if run < rule.for_steps:
                continue
            if rule.max_fires is not None and self._rule_fires[i] >= rule.max_fires:
                continue
            self._rule_fires[i] += 1
            act = rule.action
            reason = f"{rule.metric.upper()} stayed below {rule.below} for {run} consecutive steps"
            target = None
            if act == DIRECTIVE_RETRY and action:
                if self._retried.get(action, 0) >= 2:
                    # Two failed retries of the same action are evidence retrying does not work.
                    act = DIRECTIVE_ESCALATE
                    reason = f"{action!r} failed repeatedly after retry; escalating instead of retrying again"
                else:
                    target = action
            d = Directive(
                action=act,
                reason=reason,
                step_index=idx,
                metric=rule.metric,
                metric_value=value,
                threshold=rule.below,
                consecutive_steps=run,
                target=target,
                policy=rule.as_dict(),
            )
            if chosen is None or _PRECEDENCE[d.action] > _PRECEDENCE[chosen.action]:
                chosen = d
        if chosen is None:
            return
        if chosen.action == DIRECTIVE_RETRY and chosen.target:
            self._retried[chosen.target] = self._retried.get(chosen.target, 0) + 1
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
        self.directives.append(d)
        if self._pending is None or _PRECEDENCE[d.action] >= _PRECEDENCE[self._pending.action]:
            self._pending = d
        if self._on_directive is not None:
            self._call(self._on_directive, d, self)

    # ------------------------------------------------------------------ reading
    @property
    def step_count(self) -> int:
        """Steps recorded so far."""
        return self._n

    @property
    def metrics(self) -> dict[str, float | None]:
        """Live metrics ``{pei, frr, irs, ti, csi}``; None where undefined (see ``undefined``)."""
        with self._lock:
            return {PEI: self._pei, FRR: self._frr, IRS: self._irs, TI: self._ti, CSI: None}

    @property
    def undefined(self) -> dict[str, str]:
        """Reason code of every undefined metric."""
        with self._lock:
            return self._undefined_locked()

    def _undefined_locked(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self._n == 0:
            out[PEI] = NO_STEPS
            out[TI] = NO_STEPS
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
        return self._pending

    def take_directive(self) -> Directive | None:
        """Read and clear the pending directive (consumed on read, so nobody acts on it twice)."""
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
        metrics = self.metrics
        return {
            "metrics": metrics,
            "undefined": self.undefined,
            "metric_versions": self.metric_versions,
            "derive_version": DERIVE_VERSION,
            "step_count": self._n,
            "thresholds": dict(self.thresholds),
            "breach_count": self.breach_count,
            "breaches": [b.as_dict() for b in self.breaches],
            "halted": self.halted,
            "halt_record": self.halt_record,
            "halt_policy": self._halt_policy,
            "policy": [r.as_dict() for r in self._rules],
            "directives": [d.as_dict() for d in self.directives],
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
    # callbacks, if any, run under it exactly as they do under record_step).
    feed, record, lock = m._deriver.feed, m._record, m._lock
    keep = steps.append if steps is not None else None
    for ev in events:
        step = feed(ev)
        if step is None:
            continue
        with lock:
            record(
                step.action,
                step.success,
                step.had_fault,
                step.recovered_intentionally,
                step.traceable,
                step.replanned,
                step.handled_deliberately,
            )
        if keep is not None:
            keep(step)
    return m
