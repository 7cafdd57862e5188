"""Fault batteries and runtime fault injection.

- ``compat``: the HB-Eval battery reproduced byte for byte (spec, ``ce481b32763df1ca``, builder).
- ``battery``: ``Battery.hbeval`` / ``Battery.compat``, the hbeval-battery/1 runtime table and the
  measurement fingerprint.
- ``plans``: ``FaultSpec``, ``FaultPlan``, ``CascadePlan`` and the deterministic draw.
- ``runtime``: ``FaultInjector``, the API adapters call at every tool boundary.
- ``clock``: ``SystemClock`` and ``FakeClock`` for time-based faults.
- ``userbattery``: battery files (``hbeval-battery-file/1``): a user's own scenarios, checked
  field by field and fingerprinted like the built-ins (``load_battery_file``).
- ``model``: the model fault family (``ModelFaultSpec``, ``ModelFaultPlan``,
  ``MODEL_FAULT_CATALOGUE``): the model API call itself fails; planted at the HTTP layer.
- ``ledger``: irreversible tools (``declare_irreversible``) and what makes two executions the
  same side effect.
- ``boundary``: ``faultable`` (any function as a faultable tool) and the rules every adapter's
  tool boundary follows (one injection per call, reported in the trial's trace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

# Each name loads its module on first use: building a battery's spec needs neither the event
# model (pydantic) that the tool boundary brings nor the battery-file reader.
_EXPORTS: dict[str, str] = {
    "ANY_TARGET": ".plans",
    "BATTERY_COMPAT": ".battery",
    "BATTERY_FILE_FORMAT": ".userbattery",
    "BATTERY_HBEVAL": ".battery",
    "BATTERY_KINDS": ".battery",
    "BATTERY_USER": ".userbattery",
    "BUILD_ALGORITHM": ".battery",
    "CANARY_TOOL": ".runtime",
    "COMPAT_BUILD_ALGORITHM": ".battery",
    "DOMAINS": ".compat",
    "FAULT_CONTEXTS": ".compat",
    "FAULT_TYPES": ".compat",
    "MAX_SCENARIOS": ".compat",
    "MODEL_FAULT_CATALOGUE": ".model",
    "MIN_SCENARIOS": ".compat",
    "NOMINAL": ".compat",
    "NONE_FRACTION": ".compat",
    "RUNTIME_TABLE": ".battery",
    "USER_BUILD_ALGORITHM": ".userbattery",
    "AsyncClock": "..contract._clock",
    "Battery": ".battery",
    "BatteryFileError": ".userbattery",
    "BatteryScenario": ".battery",
    "CallOutcome": ".runtime",
    "CascadePlan": ".plans",
    "CascadeStage": ".plans",
    "Clock": "..contract._clock",
    "FakeClock": "..contract._clock",
    "FaultDecision": ".runtime",
    "FaultInjector": ".runtime",
    "FaultPlan": ".plans",
    "FaultSpec": ".plans",
    "InjectedCrash": ".runtime",
    "ModelFaultPlan": ".model",
    "ModelFaultSpec": ".model",
    "Plan": ".plans",
    "RuntimeTemplate": ".battery",
    "Scenario": ".compat",
    "SystemClock": "..contract._clock",
    "ToolCallError": ".boundary",
    "UserBattery": ".userbattery",
    "UserScenario": ".userbattery",
    "build_scenario_battery": ".compat",
    "declare_irreversible": ".ledger",
    "declared_irreversible": ".ledger",
    "decide_fires": ".plans",
    "decision_draw": ".plans",
    "derive_trial_seed": ".battery",
    "faultable": ".boundary",
    "hbeval_spec": ".battery",
    "hbeval_spec_fingerprint": ".battery",
    "inject_fault": ".compat",
    "injection_allowed": ".runtime",
    "is_battery_file": ".userbattery",
    "load_battery_file": ".userbattery",
    "measurement_fingerprint": ".battery",
    "normalise_selection": ".compat",
    "parse_battery": ".userbattery",
    "plan_from_dict": ".plans",
    "planted_instruction": ".runtime",
    "render_text": ".runtime",
    "runtime_table": ".battery",
    "spec": ".compat",
    "spec_fingerprint": ".compat",
    "task_for": ".battery",
}

__all__ = [
    "ANY_TARGET",
    "BATTERY_COMPAT",
    "BATTERY_FILE_FORMAT",
    "BATTERY_HBEVAL",
    "BATTERY_KINDS",
    "BATTERY_USER",
    "BUILD_ALGORITHM",
    "CANARY_TOOL",
    "COMPAT_BUILD_ALGORITHM",
    "DOMAINS",
    "FAULT_CONTEXTS",
    "FAULT_TYPES",
    "MAX_SCENARIOS",
    "MIN_SCENARIOS",
    "MODEL_FAULT_CATALOGUE",
    "NOMINAL",
    "NONE_FRACTION",
    "RUNTIME_TABLE",
    "USER_BUILD_ALGORITHM",
    "AsyncClock",
    "Battery",
    "BatteryFileError",
    "BatteryScenario",
    "CallOutcome",
    "CascadePlan",
    "CascadeStage",
    "Clock",
    "FakeClock",
    "FaultDecision",
    "FaultInjector",
    "FaultPlan",
    "FaultSpec",
    "InjectedCrash",
    "ModelFaultPlan",
    "ModelFaultSpec",
    "Plan",
    "RuntimeTemplate",
    "Scenario",
    "SystemClock",
    "ToolCallError",
    "UserBattery",
    "UserScenario",
    "build_scenario_battery",
    "decide_fires",
    "decision_draw",
    "declare_irreversible",
    "declared_irreversible",
    "derive_trial_seed",
    "faultable",
    "hbeval_spec",
    "hbeval_spec_fingerprint",
    "inject_fault",
    "injection_allowed",
    "is_battery_file",
    "load_battery_file",
    "measurement_fingerprint",
    "normalise_selection",
    "parse_battery",
    "plan_from_dict",
    "planted_instruction",
    "render_text",
    "runtime_table",
    "spec",
    "spec_fingerprint",
    "task_for",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

if TYPE_CHECKING:
    from ..contract._clock import AsyncClock, Clock, FakeClock, SystemClock
    from .battery import (
        BATTERY_COMPAT,
        BATTERY_HBEVAL,
        BATTERY_KINDS,
        BUILD_ALGORITHM,
        COMPAT_BUILD_ALGORITHM,
        RUNTIME_TABLE,
        Battery,
        BatteryScenario,
        RuntimeTemplate,
        derive_trial_seed,
        hbeval_spec,
        hbeval_spec_fingerprint,
        measurement_fingerprint,
        runtime_table,
        task_for,
    )
    from .boundary import ToolCallError, faultable
    from .compat import (
        DOMAINS,
        FAULT_CONTEXTS,
        FAULT_TYPES,
        MAX_SCENARIOS,
        MIN_SCENARIOS,
        NOMINAL,
        NONE_FRACTION,
        Scenario,
        build_scenario_battery,
        inject_fault,
        normalise_selection,
        spec,
        spec_fingerprint,
    )
    from .ledger import declare_irreversible, declared_irreversible
    from .model import MODEL_FAULT_CATALOGUE, ModelFaultPlan, ModelFaultSpec
    from .plans import (
        ANY_TARGET,
        CascadePlan,
        CascadeStage,
        FaultPlan,
        FaultSpec,
        Plan,
        decide_fires,
        decision_draw,
        plan_from_dict,
    )
    from .runtime import (
        CANARY_TOOL,
        CallOutcome,
        FaultDecision,
        FaultInjector,
        InjectedCrash,
        injection_allowed,
        planted_instruction,
        render_text,
    )
    from .userbattery import (
        BATTERY_FILE_FORMAT,
        BATTERY_USER,
        USER_BUILD_ALGORITHM,
        BatteryFileError,
        UserBattery,
        UserScenario,
        is_battery_file,
        load_battery_file,
        parse_battery,
    )
