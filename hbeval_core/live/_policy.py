"""The monitor's advice and its configuration: directives, breaches, policy rules, Safe Halt.

Everything here is checked once, when a ``Monitor`` is made; errors name the field and the fix.
The per-step evaluation of the circuit breakers (``update_tool_states``) and of the policy
engine (``choose_directive``) lives here too, so the monitor's step loop stays small.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..vocab import (
    DEFAULT_THRESHOLDS,
    DIRECTIVE_ESCALATE,
    DIRECTIVE_HALT,
    DIRECTIVE_REPLAN,
    DIRECTIVE_RETRY,
    LIVE_METRICS,
    POLICY_ACTIONS,
)

__all__ = [
    "PRECEDENCE",
    "Breach",
    "Directive",
    "PolicyRule",
    "SafeHaltError",
    "checked_floors",
    "choose_directive",
    "default_floors",
    "parse_halt_policy",
    "parse_tool_policy",
    "update_tool_states",
]

PRECEDENCE = {DIRECTIVE_HALT: 4, DIRECTIVE_ESCALATE: 3, DIRECTIVE_RETRY: 2, DIRECTIVE_REPLAN: 1}
_DEFAULT_MAX_FIRES = 3
_DEFAULT_FAILURES_BEFORE_OPEN = 3
_DEFAULT_PROBE_AFTER_STEPS = 10


class SafeHaltError(RuntimeError):
    """Raised at a tool boundary after an enforced Safe Halt; no tool runs after it."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = dict(record)
        super().__init__(str(record.get("reason", "Safe Halt")))


@dataclass(slots=True)
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


def checked_floors(thresholds: Mapping[str, Any]) -> dict[str, float]:
    floors = dict(thresholds)
    for name, floor in floors.items():
        _check_metric(name, f"thresholds key {name!r}")
        _check_number(floor, f"thresholds[{name!r}]")
    return {k: float(v) for k, v in floors.items()}


_DEFAULT_FLOORS: list[dict[str, float]] = []


def default_floors() -> dict[str, float]:
    """``DEFAULT_THRESHOLDS`` checked once (a monitor per trial is made while scoring)."""
    if not _DEFAULT_FLOORS:
        _DEFAULT_FLOORS.append(checked_floors(DEFAULT_THRESHOLDS))
    return _DEFAULT_FLOORS[0]


def parse_halt_policy(policy: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``halt_policy`` checked: ``{"metric", "below", "for_steps"}`` or None."""
    if policy is None:
        return None
    if not isinstance(policy, Mapping):
        raise ValueError(
            "halt_policy must be a dict like {'metric': 'frr', 'below': 0.5, 'for_steps': 3}"
        )
    metric = _check_metric(policy.get("metric"), "halt_policy['metric']")
    if "below" not in policy:
        raise ValueError("halt_policy['below'] is required: the value the metric must fall under")
    below = _check_number(policy["below"], "halt_policy['below']")
    for_steps = _check_positive_int(policy.get("for_steps", 3), "halt_policy['for_steps']")
    return {"metric": metric, "below": below, "for_steps": for_steps}


def parse_tool_policy(tool_policy: Mapping[str, int] | bool | None) -> dict[str, int] | None:
    """``tool_policy`` checked: the circuit breaker's two settings, or None when off."""
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


def update_tool_states(
    tools: dict[str, dict[str, Any]], tp: Mapping[str, int], idx: int, action: str, success: bool
) -> None:
    """One step through the per-action circuit breakers (closed -> open -> half_open)."""
    st = tools.setdefault(action, {"state": "closed", "failures": 0, "opened_at_step": None})
    if success:
        st.update(state="closed", failures=0, opened_at_step=None)
    else:
        st["failures"] += 1
        if (st["state"] == "closed" and st["failures"] >= tp["failures_before_open"]) or st[
            "state"
        ] == "half_open":
            st["state"] = "open"
            st["opened_at_step"] = idx
    for other in tools.values():
        opened = other["opened_at_step"]
        if (
            other["state"] == "open"
            and opened is not None
            and idx - opened >= tp["probe_after_steps"]
        ):
            other["state"] = "half_open"


def choose_directive(
    rules: list[PolicyRule],
    runs: list[int],
    fires: list[int],
    retried: dict[str, int],
    value_of: Callable[[str], float | None],
    idx: int,
    action: str,
) -> Directive | None:
    """The policy engine on one step: the most severe directive any rule fires, if any.

    ``runs`` and ``fires`` (one per rule) and ``retried`` (per action) are the engine's state,
    updated in place. A rule's run of steps resets when its metric is undefined.
    """
    chosen: Directive | None = None
    for i, rule in enumerate(rules):
        value = value_of(rule.metric)
        if value is None or value >= rule.below:
            runs[i] = 0  # the policy engine resets on undefined, unlike halt_policy
            continue
        runs[i] += 1
        run = runs[i]
        if run < rule.for_steps:
            continue
        if rule.max_fires is not None and fires[i] >= rule.max_fires:
            continue
        fires[i] += 1
        act = rule.action
        reason = f"{rule.metric.upper()} stayed below {rule.below} for {run} consecutive steps"
        target = None
        if act == DIRECTIVE_RETRY and action:
            if retried.get(action, 0) >= 2:
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
        if chosen is None or PRECEDENCE[d.action] > PRECEDENCE[chosen.action]:
            chosen = d
    if chosen is not None and chosen.action == DIRECTIVE_RETRY and chosen.target:
        retried[chosen.target] = retried.get(chosen.target, 0) + 1
    return chosen


_HALT_RE = re.compile(r"^\s*(pei|frr|irs|ti|csi)\s*<\s*([0-9.]+)\s*(?:(?:x|for)\s*(\d+))?\s*$")


def parse_halt(text: str) -> dict[str, Any]:
    """Parse ``frr<0.5x3`` (metric, bound, consecutive steps) into a halt policy."""
    m = _HALT_RE.match(text)
    if m is None:
        raise ValueError(f"--halt-policy {text!r} is not METRIC<BOUNDxSTEPS, e.g. 'frr<0.5x3'")
    return {"metric": m.group(1), "below": float(m.group(2)), "for_steps": int(m.group(3) or 3)}
