"""``--fault MODE[:TOOL][@CALLS]``: the fault language of the proxies, and battery files for them.

``MODE`` is a tool fault mode (``vocab.FAULT_MODES``: the injector applies it), a mode only a
proxy can plant (``vocab.MCP_FAULT_MODES``) or a model fault (``vocab.MODEL_FAULT_MODES``,
planted by ``hbeval proxy openai``; ``TOOL`` is then the model name or glob). ``TOOL`` is a tool name or glob (default ``*``,
every tool). ``CALLS`` lists call positions on that target, 0 being the first
(``@0``, ``@0,2``); without it the fault fires on every call. ``after_ms`` and the other
parameters take their defaults; a battery file sets them per scenario.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from hbeval_core.faults.model import ModelFaultPlan, ModelFaultSpec
from hbeval_core.faults.plans import ANY_TARGET, FaultPlan, FaultSpec, target_matches
from hbeval_core.vocab import FAULT_MODES, MCP_FAULT_MODES, MODEL_FAULT_MODES

__all__ = [
    "FaultSet",
    "FaultSpecError",
    "ProxyFault",
    "parse_fault_spec",
    "plan_of_battery",
    "scenario_fault_set",
]

_SPEC_RE: Final = re.compile(
    r"^(?P<mode>[a-z_0-9]+)(?::(?P<tool>[^@\s]+))?(?:@(?P<calls>[0-9,\s]+))?$"
)
PROXY_PLAN_ID: Final = "hbeval-proxy/1"


class FaultSpecError(ValueError):
    """A ``--fault`` or ``--battery`` the proxy cannot use; the message names it and the fix."""


@dataclass(frozen=True)
class ProxyFault:
    """A fault only the proxy applies (``vocab.MCP_FAULT_MODES``)."""

    id: str
    mode: str
    target: str = ANY_TARGET
    on_calls: tuple[int, ...] | None = None

    def fires(self, tool: str, attempt: int) -> bool:
        """Whether it applies to call ``attempt`` (0-based, per target) of ``tool``."""
        if not target_matches(self.target, tool):
            return False
        return self.on_calls is None or attempt in self.on_calls

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (a receipt's ``intended``)."""
        return {
            "id": self.id,
            "target": self.target,
            "mode": self.mode,
            "on_calls": None if self.on_calls is None else list(self.on_calls),
        }


@dataclass
class FaultSet:
    """What one proxy session plants: a fault plan for the injector and the proxy-only faults."""

    plan: FaultPlan | None = None
    proxy: tuple[ProxyFault, ...] = ()
    source: list[str] = field(default_factory=list)
    """The ``--fault`` texts (or the battery scenario) it came from, for the record."""
    model: ModelFaultPlan | None = None
    """Model faults (``hbeval proxy openai`` plants them on model calls)."""

    @property
    def empty(self) -> bool:
        """True when nothing is planted."""
        return (
            not self.proxy
            and (self.plan is None or not self.plan.faults)
            and (self.model is None or not self.model.faults)
        )


def parse_fault_spec(text: str, index: int = 0) -> FaultSpec | ProxyFault | ModelFaultSpec:
    """One ``MODE[:TOOL][@CALLS]`` as a fault spec (injector modes), a ``ProxyFault`` or a
    ``ModelFaultSpec`` (model modes)."""
    m = _SPEC_RE.match(text.strip())
    if m is None:
        raise FaultSpecError(
            f"--fault {text!r} is not MODE[:TOOL][@CALLS], e.g. 'timeout:lookup_order@0'"
        )
    mode, tool = m.group("mode"), m.group("tool") or ANY_TARGET
    calls: tuple[int, ...] | None = None
    if m.group("calls") is not None:
        parts = [p.strip() for p in m.group("calls").split(",") if p.strip()]
        if not parts:
            raise FaultSpecError(f"--fault {text!r}: @ must be followed by call positions")
        calls = tuple(sorted({int(p) for p in parts}))
    fault_id = f"fault-{index}"
    if mode in MCP_FAULT_MODES:
        return ProxyFault(fault_id, mode, tool, calls)
    if mode in MODEL_FAULT_MODES:
        return ModelFaultSpec(fault_id, mode, tool, calls)
    if mode not in FAULT_MODES:
        raise FaultSpecError(
            f"--fault {text!r}: unknown mode {mode!r}; modes: "
            + ", ".join((*FAULT_MODES, *MCP_FAULT_MODES, *MODEL_FAULT_MODES))
        )
    try:
        return FaultSpec(id=fault_id, target=tool, mode=mode, on_calls=calls)
    except ValueError as exc:
        raise FaultSpecError(f"--fault {text!r}: {exc}") from None


def fault_set(texts: Iterable[str], *, seed: int = 0) -> FaultSet:
    """Every ``--fault`` of a command line, as one session's ``FaultSet``."""
    texts = list(texts)
    specs: list[FaultSpec] = []
    proxy: list[ProxyFault] = []
    model: list[ModelFaultSpec] = []
    for i, text in enumerate(texts):
        parsed = parse_fault_spec(text, i)
        if isinstance(parsed, ProxyFault):
            proxy.append(parsed)
        elif isinstance(parsed, ModelFaultSpec):
            model.append(parsed)
        else:
            specs.append(parsed)
    plan = FaultPlan(id=PROXY_PLAN_ID, seed=seed, faults=specs) if specs else None
    model_plan = ModelFaultPlan(PROXY_PLAN_ID, seed, tuple(model)) if model else None
    return FaultSet(plan, tuple(proxy), texts, model_plan)


def plan_of_battery(path: str, scenario: str | None, *, seed: int = 0) -> FaultSet:
    """The faults of one scenario of a battery file (``--battery FILE [--scenario NAME]``)."""
    from hbeval_core.faults.userbattery import BatteryFileError, load_battery_file

    try:
        battery = load_battery_file(path, seed=seed)
    except BatteryFileError as exc:
        raise FaultSpecError(str(exc)) from None
    faulted = [s for s in battery.file_scenarios if not s.is_nominal]
    names: Sequence[str] = [s.name for s in faulted]
    if scenario is None:
        if len(faulted) != 1:
            raise FaultSpecError(
                f"--battery {path}: name the scenario to plant with --scenario (one of "
                f"{', '.join(names) or 'none'})"
            )
        chosen = faulted[0]
    else:
        match = [s for s in battery.file_scenarios if s.name == scenario]
        if not match:
            raise FaultSpecError(
                f"--scenario {scenario!r}: no such scenario in {path} (one of {', '.join(names)})"
            )
        chosen = match[0]
    # The proxy plants one trial; a scenario with its own seed draws as its trial 0 does.
    trial_seed = seed if chosen.seed is None else chosen.trial_seed(seed, 0)
    return scenario_fault_set(chosen.plan(trial_seed), f"{path}#{chosen.name}")


def scenario_fault_set(plan: Any, source: str) -> FaultSet:
    """A battery scenario's plan for one trial as a ``FaultSet`` (tool or model faults)."""
    if isinstance(plan, ModelFaultPlan):
        return FaultSet(None, (), [source], plan)
    return FaultSet(plan, (), [source])
