"""Battery files: a user's own scenarios (``hbeval-battery-file/1``), fingerprinted like the built-ins.

A battery file (YAML or JSON) names its scenarios: the fault mode and its parameters, which
tools it hits (names or glob patterns), when (call positions, a probability, optionally a fixed
seed), the text a prompt injection plants, and whether the reference's domain context sentence
is appended to the question (off unless the file turns it on). ``load_battery_file(path, seed=)``
checks every key and value, naming the field on error (``BatteryFileError``), and returns a
``UserBattery`` that ``run_battery`` runs like ``Battery.hbeval``. docs/battery.md has the format
with a worked example.

**Canonical form and fingerprints.** The file is parsed, every default filled in and every
value normalised (attempts sorted and de-duplicated, probability as a float); that canonical
form, with this module's build algorithm and decision rule, is the battery spec and its
fingerprint (the shared ``fingerprint`` function). The plan fingerprint pins each scenario's
position, label and runtime plan, and the measurement fingerprint is built exactly as for the
built-in batteries. Comments, key order and spelling of equal values do not change them.

**Scenarios.** Scenario ``i`` runs task ``tasks[i mod len(tasks)]``; its ``name`` is its fault
type label in reports (breakdowns, delivery, verdict), its ``domain`` a free label (default: the
battery's name). Each entry of ``tools`` becomes one fault spec with that target, so a plan holds
one planned fault per entry; ``when.attempts`` counts the calls that entry matches (``"*"``:
every tool call; ``"lookup_*"``: every call to a tool whose name matches), 0 being the first.
Each trial draws with a seed derived from the run's seed, scenario and trial, unless
``when.seed`` fixes the scenario's seed for every trial and every run seed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from ..fingerprint import fingerprint
from ..vocab import (
    EMPTY_KINDS,
    ERROR_5XX,
    FAULT_MODES,
    HTTP_STATUSES,
    MALFORMED,
    MALFORMED_KINDS,
    MODEL_FAULT_MODES,
    PROMPT_INJECTION,
)
from ..vocab import EMPTY_RESPONSE as EMPTY_RESPONSE_MODE
from .battery import (
    FIXED_SEED_RULE,
    MATRIX,
    TASK_ASSIGNMENT,
    MeasuredBattery,
    derive_fixed_seed,
    derive_trial_seed,
    matrix_scenarios,
    plan_entry,
)
from .compat import FAULT_CONTEXTS, FAULT_TYPES, MAX_SCENARIOS, NOMINAL, require_seed
from .model import ModelFaultPlan, ModelFaultSpec, check_model_param, is_model_mode
from .perturb import (
    PerturbationScenario,
    check_perturb,
    perturbation_scenarios,
    perturbation_spec,
)
from .plans import ANY_TARGET, FaultPlan, FaultSpec

__all__ = [
    "BATTERY_FILE_FORMAT",
    "BATTERY_FILE_LIMIT",
    "BATTERY_USER",
    "USER_BUILD_ALGORITHM",
    "BatteryFileError",
    "UserBattery",
    "UserScenario",
    "is_battery_file",
    "load_battery_file",
    "model_family_battery",
    "parse_battery",
]

BATTERY_FILE_FORMAT: Final = "hbeval-battery-file/1"
"""The ``format`` a battery file declares first."""
BATTERY_FILE_LIMIT = 16 * 1024 * 1024
"""Most bytes read from a battery file (16 MiB); past it (``/dev/zero``?) the file is refused."""
USER_BUILD_ALGORITHM: Final = "hbeval-user-battery/1"
"""How a battery file becomes scenarios and plans; part of every user battery's fingerprint."""
BATTERY_USER: Final = "user"
"""The battery kind reports and the store record for a battery file."""
NOMINAL_MODE: Final = "none"
"""The ``mode`` of a scenario without faults (a nominal baseline)."""
PLAN_ID_FORMAT: Final = USER_BUILD_ALGORITHM + "/{battery}/s{index}/{name}"

_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TOP_KEYS: Final = (
    "format",
    "name",
    "description",
    "domain_context",
    "irreversible_tools",
    "idempotency_keys",
    "perturb",
    "scenarios",
)
_SCENARIO_KEYS: Final = (
    "name",
    "mode",
    "tools",
    "when",
    "params",
    "injection",
    "context",
    "domain",
    "models",
    "tasks",
)
_WHEN_KEYS: Final = ("attempts", "probability", "seed")
_PARAM_KEYS: Final = ("after_ms", "http_status", "empty_kind", "malformed_kind")
_MODE_PARAMS: Final[Mapping[str, tuple[str, tuple[Any, ...]]]] = {
    "http_status": (ERROR_5XX, HTTP_STATUSES),
    "empty_kind": (EMPTY_RESPONSE_MODE, EMPTY_KINDS),
    "malformed_kind": (MALFORMED, MALFORMED_KINDS),
}
_SUFFIXES: Final = (".yaml", ".yml", ".json")


class BatteryFileError(ValueError):
    """A battery file that cannot be used; the message names the field and the fix."""


def is_battery_file(value: str) -> bool:
    """Whether ``--battery VALUE`` names a battery file (by its suffix) rather than a built-in."""
    return value.lower().endswith(_SUFFIXES)


# --------------------------------------------------------------------------- checking
def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _keys(where: str, data: object, allowed: Sequence[str], required: Sequence[str]) -> None:
    if not isinstance(data, Mapping):
        raise BatteryFileError(f"{where}: must be a mapping of keys, got {type(data).__name__}")
    unknown = [str(k) for k in data if k not in allowed]
    if unknown:
        raise BatteryFileError(
            f"{where}.{unknown[0]}: unknown key; allowed keys are {', '.join(allowed)}"
        )
    for key in required:
        if key not in data:
            raise BatteryFileError(f"{where}.{key}: required key is missing")


def _name(where: str, value: object) -> str:
    if not isinstance(value, str) or not _NAME_RE.match(value):
        raise BatteryFileError(
            f"{where}: must be a name of letters, digits, '_', '.' or '-' (at most 64, starting "
            f"with a letter or digit), got {value!r}"
        )
    return value


def _text(where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BatteryFileError(f"{where}: must be a non-empty string, got {value!r}")
    return value


def _tools(where: str, value: object) -> tuple[str, ...]:
    if value is None:
        return (ANY_TARGET,)
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise BatteryFileError(
            f"{where}: must be a list of tool names or glob patterns such as ['lookup_*'], "
            f"got {value!r}"
        )
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or item != item.strip():
            raise BatteryFileError(
                f"{where}[{i}]: must be a tool name or glob pattern without surrounding spaces, "
                f"got {item!r}"
            )
        if item in out:
            raise BatteryFileError(f"{where}[{i}]: {item!r} is listed twice")
        out.append(item)
    return tuple(out)


def _when(where: str, value: object) -> tuple[tuple[int, ...] | None, float, int | None]:
    if value is None:
        return None, 1.0, None
    _keys(where, value, _WHEN_KEYS, ())
    assert isinstance(value, Mapping)
    attempts: tuple[int, ...] | None = None
    raw = value.get("attempts")
    if raw is not None:
        if (
            isinstance(raw, str)
            or not isinstance(raw, Sequence)
            or not raw
            or not all(_is_int(a) and a >= 0 for a in raw)
        ):
            raise BatteryFileError(
                f"{where}.attempts: must be a list of call positions >= 0 such as [0] for the "
                f"first call (omit it for every call), got {raw!r}"
            )
        attempts = tuple(sorted(set(raw)))
    p = value.get("probability", 1.0)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise BatteryFileError(f"{where}.probability: must be a number from 0 to 1, got {p!r}")
    seed = value.get("seed")
    if seed is not None:
        try:
            seed = require_seed(seed)
        except ValueError:
            raise BatteryFileError(
                f"{where}.seed: must be a whole number >= 0, got {seed!r}"
            ) from None
    return attempts, float(p), seed


def _model_params(where: str, value: object, mode: str) -> dict[str, Any]:
    """A model fault's parameters (``model.MODEL_PARAMS``), checked one by one."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BatteryFileError(f"{where}: must be a mapping of parameters, got {value!r}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        try:
            out[str(key)] = check_model_param(where, mode, str(key), item)
        except ValueError as exc:
            raise BatteryFileError(
                str(exc).replace(f"{where}: '{key}'", f"{where}.{key}:")
            ) from None
    return out


def _params(where: str, value: object, mode: str) -> dict[str, Any]:
    if value is None:
        return {}
    if is_model_mode(mode):
        return _model_params(where, value, mode)
    _keys(where, value, _PARAM_KEYS, ())
    assert isinstance(value, Mapping)
    out: dict[str, Any] = {}
    after = value.get("after_ms")
    if after is not None:
        if not _is_int(after) or after < 0:
            raise BatteryFileError(
                f"{where}.after_ms: must be a whole number of milliseconds >= 0, got {after!r}"
            )
        out["after_ms"] = after
    for key, (only_mode, allowed) in _MODE_PARAMS.items():
        if key not in value:
            continue
        if mode != only_mode:
            raise BatteryFileError(
                f"{where}.{key}: applies only to mode {only_mode!r} (this scenario's mode is "
                f"{mode!r})"
            )
        if value[key] not in allowed:
            raise BatteryFileError(
                f"{where}.{key}: must be one of {', '.join(map(str, allowed))}, got {value[key]!r}"
            )
        out[key] = value[key]
    return out


# --------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class UserScenario:
    """One scenario of a battery file, canonical: every default filled in."""

    index: int
    name: str
    mode: str
    tools: tuple[str, ...]
    attempts: tuple[int, ...] | None
    probability: float
    seed: int | None
    params: Mapping[str, Any]
    injection: str | None
    context: str | None
    domain: str
    battery_name: str
    domain_context: bool
    irreversible_tools: tuple[str, ...] = ()
    """The battery's irreversible tools (scoring counts their duplicate side effects)."""
    idempotency_keys: Mapping[str, str] | None = None
    """Tool -> the argument that alone identifies one of its side effects."""
    tasks: tuple[str, ...] | None = None
    """The task ids the file pins this scenario to (``tasks:``); None: not pinned."""
    task_id: str | None = None
    """The one task this (expanded) scenario runs; None: task ``index mod len``."""

    @property
    def targets(self) -> tuple[str, ...]:
        """The tools its faults target (names, globs or ``"*"``); () when nominal or a model
        fault."""
        if self.is_nominal or self.is_model_fault:
            return ()
        return self.tools

    @property
    def is_model_fault(self) -> bool:
        """True for a scenario of the model fault family (``tools`` then holds model targets)."""
        return is_model_mode(self.mode)

    @property
    def fault_type(self) -> str:
        """The label reports group this scenario under: ``none`` when nominal, else its name."""
        return NOMINAL if self.is_nominal else self.name

    @property
    def is_nominal(self) -> bool:
        """True for a scenario without faults (mode ``none``)."""
        return self.mode == NOMINAL_MODE

    @property
    def plan_id(self) -> str | None:
        """The id of this scenario's plans (None when nominal)."""
        if self.is_nominal:
            return None
        return PLAN_ID_FORMAT.format(battery=self.battery_name, index=self.index, name=self.name)

    def specs(self) -> tuple[FaultSpec, ...]:
        """One fault spec per entry of ``tools`` (none when nominal or a model fault)."""
        if self.is_nominal or self.is_model_fault:
            return ()
        return tuple(
            FaultSpec(
                id=f"{self.name}/{i}",
                target=tool,
                mode=self.mode,
                probability=self.probability,
                on_calls=self.attempts,
                text=self.injection,
                **self.params,
            )
            for i, tool in enumerate(self.tools)
        )

    @property
    def question_context(self) -> bool:
        """Whether the question carries a fault context sentence (only when the file asks)."""
        return self.domain_context and self.context is not None

    def question(self, base: str) -> str:
        """``base``, with the reference's context sentence appended only when the file asks."""
        if self.question_context and self.context is not None:
            return base + FAULT_CONTEXTS.get(self.context, "")
        return base

    def model_specs(self) -> tuple[ModelFaultSpec, ...]:
        """One model fault spec per model target (none unless a model fault)."""
        if not self.is_model_fault:
            return ()
        return tuple(
            ModelFaultSpec(
                id=f"{self.name}/{i}",
                mode=self.mode,
                target=target,
                on_calls=self.attempts,
                probability=self.probability,
                params=self.params,
            )
            for i, target in enumerate(self.tools)
        )

    def trial_seed(self, run_seed: int, trial_index: int) -> int:
        """The plan seed of trial ``trial_index``: from ``(when.seed, trial index)`` when the
        scenario fixes its seed (the same in every run, different between trials), else from
        the run's seed, the scenario and the trial."""
        if self.seed is not None:
            return derive_fixed_seed(self.seed, trial_index)
        return derive_trial_seed(run_seed, self.index, trial_index)

    def plan(self, trial_seed: int) -> FaultPlan | ModelFaultPlan | None:
        """This scenario's plan for one trial, seeded ``trial_seed`` (see ``trial_seed``)."""
        plan_id = self.plan_id
        if plan_id is None:
            return None
        seed = require_seed(trial_seed)
        if self.is_model_fault:
            return ModelFaultPlan(id=plan_id, seed=seed, faults=self.model_specs())
        return FaultPlan(id=plan_id, seed=seed, faults=self.specs())

    def runtime_summary(self) -> dict[str, Any] | None:
        """``{"plan_id", "kind", "faults"}`` (and the fixed seed), or None when nominal."""
        if self.is_nominal:
            return None
        summary: dict[str, Any] = {
            "plan_id": self.plan_id,
            "kind": "fault_plan",
            "faults": [s.to_dict() for s in self.specs()],
        }
        if self.is_model_fault:
            summary["kind"] = "model_fault_plan"
            summary["faults"] = [s.to_dict() for s in self.model_specs()]
        if self.seed is not None:
            summary["seed"] = self.seed
        return summary

    def canonical(self) -> dict[str, Any]:
        """The scenario as the battery spec (and its fingerprint) holds it."""
        out = self._canonical()
        if self.tasks is not None:  # only when pinned: other files fingerprint as before
            out["tasks"] = list(self.tasks)
        if self.is_model_fault:
            out["family"] = "model"
            out["models"] = out.pop("tools")
            out.pop("injection")
        return out

    def _canonical(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "tools": list(self.tools),
            "when": {
                "attempts": None if self.attempts is None else list(self.attempts),
                "probability": self.probability,
                "seed": self.seed,
            },
            "params": dict(sorted(self.params.items())),
            "injection": self.injection,
            "context": self.context,
            "domain": self.domain,
        }

    def to_dict(self) -> dict[str, Any]:
        """The scenario as ``hbeval battery build --json`` lists it."""
        return {
            "index": self.index,
            "domain": self.domain,
            "fault_type": self.fault_type,
            "is_nominal": self.is_nominal,
            "runtime": self.runtime_summary(),
            **({"task": self.task_id} if self.task_id is not None else {}),
        }


@dataclass(frozen=True)
class UserBattery(MeasuredBattery):
    """A battery file's scenarios, with the same interface ``run_battery`` uses for built-ins."""

    name: str
    description: str | None
    domain_context: bool
    seed: int
    scenarios: tuple[UserScenario | PerturbationScenario, ...]
    source: str | None = None
    perturb: tuple[str, ...] = ()
    """The perturbation families added after the file's scenarios (``perturb:``)."""
    source_scenarios: tuple[UserScenario, ...] = ()
    """The scenarios as the file names them, before pinned ones meet each of their tasks."""
    assignment: str = TASK_ASSIGNMENT
    """``index_mod_len`` (and the file's pins), or ``matrix`` (``--matrix``)."""

    kind: str = BATTERY_USER
    build_version: str = USER_BUILD_ALGORITHM

    @property
    def fault_types(self) -> tuple[str, ...]:
        """The scenario labels, in file order, without repeats."""
        return tuple(dict.fromkeys(s.fault_type for s in self.file_scenarios))

    @property
    def domains(self) -> tuple[str, ...]:
        """The scenario domains, in file order, without repeats."""
        return tuple(dict.fromkeys(s.domain for s in self.file_scenarios))

    @property
    def file_scenarios(self) -> tuple[UserScenario, ...]:
        """The scenarios the file names (without perturbation scenarios)."""
        return tuple(s for s in self.scenarios if isinstance(s, UserScenario))

    def __len__(self) -> int:
        return len(self.scenarios)

    def spec(self) -> dict[str, Any]:
        """The canonical form: what the battery fingerprint covers."""
        return {
            "battery": BATTERY_USER,
            "format": BATTERY_FILE_FORMAT,
            "build_algorithm": USER_BUILD_ALGORITHM,
            "name": self.name,
            "description": self.description,
            "domain_context": self.domain_context,
            "task_assignment": self.assignment,
            "plan_id_format": PLAN_ID_FORMAT,
            "decision": "sha256(seed:plan_id:target:attempt)[:8]/0xFFFFFFFF<p",
            "scenarios": [s.canonical() for s in self.source_scenarios or self.file_scenarios],
            # Only when set: a file without them fingerprints as it always did.
            **_side_effect_spec(self.file_scenarios),
            **perturbation_spec(self.perturb),
            # Only when a scenario fixes its seed, whose trials it then seeds.
            **(
                {"fixed_seed_rule": FIXED_SEED_RULE}
                if any(s.seed is not None for s in self.file_scenarios)
                else {}
            ),
        }

    def spec_fingerprint(self) -> str:
        """Fingerprint of ``spec()`` (16 lower-case hex, the shared fingerprint function)."""
        return fingerprint(self.spec())

    def plan_fingerprint(self) -> str:
        """Fingerprint of every scenario's position, labels and runtime plan."""
        return fingerprint(
            {
                "build_algorithm": self.build_version,
                "scenarios": [plan_entry(s) for s in self.scenarios],
            }
        )

    def matrix(self, task_ids: Sequence[str]) -> UserBattery:
        """Every scenario the file does not pin run on each task (pinned ones keep their
        tasks), perturbation scenarios too, numbered anew."""
        sources = self.source_scenarios or self.file_scenarios
        ids = tuple(dict.fromkeys(task_ids))
        expanded = _pinned([replace(s, tasks=s.tasks or ids) for s in sources])
        extra = matrix_scenarios(
            [s for s in self.scenarios if not isinstance(s, UserScenario)], ids
        )
        extra = tuple(replace(s, index=len(expanded) + i) for i, s in enumerate(extra))
        return replace(
            self,
            scenarios=(*expanded, *extra),
            source_scenarios=sources,
            assignment=MATRIX,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``hbeval battery build --battery FILE --json`` document."""
        return {
            "fingerprint": self.spec_fingerprint(),
            "battery": self.kind,
            "name": self.name,
            "source": self.source,
            "build_algorithm": self.build_version,
            "plan_fingerprint": self.plan_fingerprint(),
            "seed": self.seed,
            "n_scenarios": len(self.scenarios),
            "selection": None,
            "spec": self.spec(),
            "scenarios": [s.to_dict() for s in self.scenarios],
        }


def _pinned(scenarios: Sequence[UserScenario]) -> list[UserScenario]:
    """Each scenario pinned to tasks once per task (others once), numbered in order."""
    out: list[UserScenario] = []
    for s in scenarios:
        for task_id in s.tasks if s.tasks is not None else (None,):
            out.append(replace(s, index=len(out), task_id=task_id))
    return out


def _task_pins(where: str, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise BatteryFileError(
            f"{where}: must be a list of task ids such as [refund_request], got {value!r}"
        )
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise BatteryFileError(f"{where}[{i}]: must be a task id, got {item!r}")
        if item in out:
            raise BatteryFileError(f"{where}[{i}]: {item!r} is listed twice")
        out.append(item)
    return tuple(out)


def _side_effect_spec(scenarios: Sequence[UserScenario]) -> dict[str, Any]:
    first = scenarios[0] if scenarios else None
    out: dict[str, Any] = {}
    if first is not None and first.irreversible_tools:
        out["irreversible_tools"] = list(first.irreversible_tools)
    if first is not None and first.idempotency_keys:
        out["idempotency_keys"] = dict(sorted(first.idempotency_keys.items()))
    return out


# --------------------------------------------------------------------------- parsing
def _side_effect_rules(data: Mapping[str, Any]) -> tuple[tuple[str, ...], dict[str, str] | None]:
    """The file's ``irreversible_tools`` (names) and ``idempotency_keys`` (tool -> argument)."""
    raw = data.get("irreversible_tools")
    tools: tuple[str, ...] = ()
    if raw is not None:
        if isinstance(raw, (str, Mapping)) or not isinstance(raw, Sequence):
            raise BatteryFileError(
                "battery.irreversible_tools: must be a list of tool names such as [issue_refund]"
            )
        tools = tuple(
            sorted({_text(f"battery.irreversible_tools[{i}]", t) for i, t in enumerate(raw)})
        )
    keys_raw = data.get("idempotency_keys")
    if keys_raw is None:
        return tools, None
    if not isinstance(keys_raw, Mapping) or not keys_raw:
        raise BatteryFileError(
            "battery.idempotency_keys: must map each tool to the argument that carries its "
            "idempotency key, e.g. {issue_refund: request_id}"
        )
    keys: dict[str, str] = {}
    for tool, arg in keys_raw.items():
        where = f"battery.idempotency_keys.{tool}"
        if tool not in tools:
            raise BatteryFileError(
                f"{where}: {tool!r} is not in battery.irreversible_tools; an idempotency key "
                "applies to an irreversible tool, so list it there too"
            )
        keys[str(tool)] = _text(where, arg)
    return tools, keys


def _scenario(
    where: str, data: object, index: int, battery_name: str, domain_context: bool
) -> UserScenario:
    _keys(where, data, _SCENARIO_KEYS, ("name", "mode"))
    assert isinstance(data, Mapping)
    name = _name(f"{where}.name", data["name"])
    if name == NOMINAL:
        raise BatteryFileError(
            f"{where}.name: 'none' is the label of nominal scenarios; choose another name"
        )
    mode = data["mode"]
    if mode != NOMINAL_MODE and mode not in FAULT_MODES and not is_model_mode(mode):
        raise BatteryFileError(
            f"{where}.mode: must be one of "
            f"{', '.join((NOMINAL_MODE, *FAULT_MODES, *MODEL_FAULT_MODES))}, got {mode!r}"
        )
    nominal = mode == NOMINAL_MODE
    targets_key = "models" if is_model_mode(mode) else "tools"
    wrong_key = "tools" if targets_key == "models" else "models"
    if wrong_key in data:
        raise BatteryFileError(
            f"{where}.{wrong_key}: a {'model' if targets_key == 'models' else 'tool'} fault "
            f"names its targets under {targets_key!r}; rename {wrong_key} to {targets_key}"
        )
    if nominal:
        for key in ("tools", "models", "when", "params", "injection"):
            if key in data:
                raise BatteryFileError(
                    f"{where}.{key}: a scenario with mode 'none' injects nothing; remove {key}"
                )
    tools = _tools(f"{where}.{targets_key}", data.get(targets_key))
    attempts, probability, seed = _when(f"{where}.when", data.get("when"))
    params = _params(f"{where}.params", data.get("params"), str(mode))
    injection = data.get("injection")
    if injection is not None:
        if mode != PROMPT_INJECTION:
            raise BatteryFileError(
                f"{where}.injection: applies only to mode 'prompt_injection' (this scenario's "
                f"mode is {mode!r})"
            )
        injection = _text(f"{where}.injection", injection)
    context = data.get("context")
    if context is not None:
        if not domain_context:
            raise BatteryFileError(
                f"{where}.context: set, but the battery's domain_context is false, so no "
                "context is added; set domain_context: true or remove context"
            )
        if context not in FAULT_TYPES or context == NOMINAL:
            raise BatteryFileError(
                f"{where}.context: must name a reference fault type whose context sentence is "
                f"appended ({', '.join(t for t in FAULT_TYPES if t != NOMINAL)}), "
                f"got {context!r}"
            )
    domain = data.get("domain", battery_name)
    domain = _name(f"{where}.domain", domain)
    return UserScenario(
        index=index,
        name=name,
        mode=str(mode),
        tools=() if nominal else tools,
        attempts=attempts,
        probability=probability,
        seed=seed,
        params=params,
        injection=injection,
        context=context,
        domain=domain,
        battery_name=battery_name,
        domain_context=domain_context,
        tasks=_task_pins(f"{where}.tasks", data.get("tasks")),
    )


def parse_battery(data: object, *, seed: int, source: str | None = None) -> UserBattery:
    """Check a parsed battery file and build its ``UserBattery`` (errors name the field)."""
    _keys("battery", data, _TOP_KEYS, ("format", "name", "scenarios"))
    assert isinstance(data, Mapping)
    if data["format"] != BATTERY_FILE_FORMAT:
        raise BatteryFileError(
            f"battery.format: must be {BATTERY_FILE_FORMAT!r}, got {data['format']!r}"
        )
    name = _name("battery.name", data["name"])
    description = data.get("description")
    if description is not None:
        description = _text("battery.description", description)
    domain_context = data.get("domain_context", False)
    if not isinstance(domain_context, bool):
        raise BatteryFileError(
            f"battery.domain_context: must be true or false, got {domain_context!r}"
        )
    raw = data["scenarios"]
    if isinstance(raw, (str, Mapping)) or not isinstance(raw, Sequence) or not raw:
        raise BatteryFileError("battery.scenarios: must be a non-empty list of scenarios")
    if len(raw) > MAX_SCENARIOS:
        raise BatteryFileError(
            f"battery.scenarios: at most {MAX_SCENARIOS} scenarios, got {len(raw)}"
        )
    scenarios = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        scenario = _scenario(f"battery.scenarios[{i}]", item, i, name, domain_context)
        if scenario.name in seen:
            raise BatteryFileError(
                f"battery.scenarios[{i}].name: {scenario.name!r} is used twice; names label "
                "scenarios in reports and must be unique"
            )
        seen.add(scenario.name)
        scenarios.append(scenario)
    irreversible, keys = _side_effect_rules(data)
    if irreversible:
        scenarios = [
            replace(s, irreversible_tools=irreversible, idempotency_keys=keys) for s in scenarios
        ]
    try:
        families = check_perturb(data.get("perturb"), "battery.perturb")
    except ValueError as exc:
        raise BatteryFileError(str(exc)) from None
    try:
        run_seed = require_seed(seed)
    except ValueError as exc:
        raise BatteryFileError(f"--seed: {exc}") from None
    expanded = _pinned(scenarios)
    extra = perturbation_scenarios(families, len(expanded), (name,))
    return UserBattery(
        name,
        description,
        domain_context,
        run_seed,
        (*expanded, *extra),
        source,
        families,
        source_scenarios=tuple(scenarios),
    )


def load_battery_file(path: str | Path, *, seed: int) -> UserBattery:
    """Read a battery file (YAML, or JSON by its ``.json`` suffix) and check it.

    Raises ``BatteryFileError`` naming the field (``battery.scenarios[1].when.attempts: ...``)
    for a file that cannot be read or parsed, an unknown key or a bad value.
    """
    p, limit = Path(path), BATTERY_FILE_LIMIT
    try:
        with p.open("rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise BatteryFileError(f"--battery: cannot read {str(p)!r}: {exc.strerror}") from None
    if len(raw) > limit:
        raise BatteryFileError(
            f"--battery: {str(p)!r} is larger than {limit // (1024 * 1024)} MiB, the most hbeval "
            "reads from a battery file (an endless device such as /dev/zero?)"
        )
    try:
        text = raw.decode("utf-8")
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BatteryFileError(f"--battery: {str(p)!r} is not valid YAML/JSON: {first}") from None
    return parse_battery(data, seed=seed, source=str(p))


def model_family_battery(seed: int) -> UserBattery:
    """The ``--fault-family model`` battery (``model.MODEL_FAMILY_BATTERY``)."""
    from .model import MODEL_FAMILY_BATTERY

    return parse_battery(MODEL_FAMILY_BATTERY, seed=seed, source="hbeval:model-faults")
