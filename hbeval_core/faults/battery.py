"""Batteries: HB-Eval's own, and ``hbeval-battery/1``, which also makes real tool calls fail.

Both build their scenarios with the reference algorithm (``compat.build_scenario_battery``). The
compat battery appends the reference's text context to the question, as the reference does.
``hbeval-battery/1`` hands the agent its task's question unchanged and maps each fault type to
runtime faults (DESIGN.md "Faults"), so an agent meets an actual failing tool rather than a
sentence about one; the context sentences are a separate perturbation family, off unless asked
for (``perturb=["context"]``, see ``perturb``):

==================== ==================================================================
fault type           runtime faults (target "*" = any tool; call positions count every call)
==================== ==================================================================
none                 no plan
tool_failure         error_5xx, status 503, on the first tool call
context_corruption   malformed (wrong_type) values in the first tool result
stochastic           intermittent, probability 0.5, on every call
adversarial          prompt_injection in the first tool result
cascade              cascade: first call times out (2000 ms), the next returns 503
combined             tool_failure on the first call, context_corruption on the second
==================== ==================================================================

The reference fingerprint ``ce481b32763df1ca`` covers the spec content only, not how a battery is
built (spec §8 item 5). The hbeval battery's spec therefore also names the build algorithm, the
shuffle, the domain and task assignment, the plan ids and this runtime table, and its
fingerprint covers all of them. The compat battery keeps the reference spec and fingerprint;
for both, the measurement fingerprint adds the build version and a plan fingerprint that pins
the scenario list itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, TypeVar

from ..fingerprint import fingerprint
from ..vocab import (
    DERIVE_VERSION,
    ERROR_5XX,
    INTERMITTENT,
    MALFORMED,
    PROMPT_INJECTION,
    SCORING_VERSION,
    TIMEOUT,
)
from . import compat
from .compat import (
    DEFAULT_SCENARIOS,
    DEFAULT_SEED,
    DOMAINS,
    FAULT_TYPES,
    MAX_SCENARIOS,
    MIN_SCENARIOS,
    NOMINAL,
    Scenario,
)
from .perturb import (
    PerturbationScenario,
    check_perturb,
    perturbation_scenarios,
    perturbation_spec,
)
from .plans import ANY_TARGET, CascadePlan, CascadeStage, FaultPlan, FaultSpec

BUILD_ALGORITHM: Final = "hbeval-battery/1"
"""Version of the hbeval battery: build algorithm, runtime table and plan ids together."""
COMPAT_BUILD_ALGORITHM: Final = "hbeval-compat/1"
"""Version label of the reference's build algorithm (hb-eval-sdk 2.11.0), as reproduced here."""

BATTERY_HBEVAL: Final = "hbeval"
BATTERY_COMPAT: Final = "compat"
BATTERY_KINDS: Final = (BATTERY_HBEVAL, BATTERY_COMPAT)

CASCADE_TIMEOUT_MS: Final = 2000
"""How long the cascade's first stage waits before timing out (the reference's cascade vector)."""

PLAN_ID_FORMAT: Final = BUILD_ALGORITHM + "/s{index}/{fault_type}"
"""Scenario plan ids; they enter every probability draw, so they are part of the spec."""

T = TypeVar("T")

TASK_ASSIGNMENT: Final = "index_mod_len"
"""Scenario ``i`` runs ``tasks[i mod len(tasks)]`` unless it is pinned to a task."""
MATRIX: Final = "matrix"
"""Every scenario runs on every task (``--matrix``)."""


@dataclass(frozen=True)
class RuntimeTemplate:
    """The runtime faults a fault type maps to, before a trial's seed is known.

    Holds either ``faults`` (a plain plan) or ``stages`` (a cascade), never both.
    """

    faults: tuple[FaultSpec, ...] = ()
    stages: tuple[CascadeStage, ...] = ()

    @property
    def kind(self) -> str:
        """``"cascade_plan"`` or ``"fault_plan"``."""
        return "cascade_plan" if self.stages else "fault_plan"

    def build(self, plan_id: str, seed: int) -> FaultPlan | CascadePlan:
        """The concrete plan for one trial."""
        if self.stages:
            return CascadePlan(id=plan_id, seed=seed, stages=self.stages)
        return FaultPlan(id=plan_id, seed=seed, faults=self.faults)

    def to_dict(self) -> dict[str, Any]:
        """The template as JSON-ready data (no id, no seed)."""
        if self.stages:
            return {"kind": self.kind, "stages": [s.to_dict() for s in self.stages]}
        return {"kind": self.kind, "faults": [f.to_dict() for f in self.faults]}


_TOOL_FAILURE = FaultSpec(
    id="tool_failure", target=ANY_TARGET, mode=ERROR_5XX, http_status=503, on_calls=(0,)
)
_CONTEXT_CORRUPTION = FaultSpec(
    id="context_corruption",
    target=ANY_TARGET,
    mode=MALFORMED,
    malformed_kind="wrong_type",
    on_calls=(0,),
)

RUNTIME_TABLE: Final[Mapping[str, RuntimeTemplate | None]] = MappingProxyType(
    {
        NOMINAL: None,
        "tool_failure": RuntimeTemplate(faults=(_TOOL_FAILURE,)),
        "context_corruption": RuntimeTemplate(faults=(_CONTEXT_CORRUPTION,)),
        "stochastic": RuntimeTemplate(
            faults=(
                FaultSpec(id="stochastic", target=ANY_TARGET, mode=INTERMITTENT, probability=0.5),
            )
        ),
        "adversarial": RuntimeTemplate(
            faults=(
                FaultSpec(
                    id="adversarial", target=ANY_TARGET, mode=PROMPT_INJECTION, on_calls=(0,)
                ),
            )
        ),
        "cascade": RuntimeTemplate(
            stages=(
                CascadeStage(
                    target=ANY_TARGET, mode=TIMEOUT, after_ms=CASCADE_TIMEOUT_MS, on_calls=(0,)
                ),
                CascadeStage(target=ANY_TARGET, mode=ERROR_5XX, http_status=503, on_calls=(1,)),
            )
        ),
        "combined": RuntimeTemplate(
            faults=(_TOOL_FAILURE, replace(_CONTEXT_CORRUPTION, on_calls=(1,)))
        ),
    }
)
"""hbeval-battery/1: fault type -> runtime faults. Part of the battery's fingerprint.

Read-only: changing it changes what the battery measures, which needs a new build version.
"""


def runtime_table() -> dict[str, dict[str, Any] | None]:
    """The runtime table as JSON-ready data, as it appears in the hbeval spec."""
    return {ft: (t.to_dict() if t is not None else None) for ft, t in RUNTIME_TABLE.items()}


def hbeval_spec(perturb: Sequence[str] = ()) -> dict[str, Any]:
    """The hbeval-battery/1 specification: the reference's six keys plus how a battery is built.

    Besides the runtime table it names everything that decides what a seed builds and what each
    scenario injects, which the reference fingerprint leaves out (spec §8 item 5). The question
    reaches the agent unchanged (``question_injection: none``); ``perturb`` adds the requested
    perturbation families (``perturb.perturbation_spec``).
    """
    return {
        **compat.spec(),
        "battery": BATTERY_HBEVAL,
        "build_algorithm": BUILD_ALGORITHM,
        "default_scenarios": DEFAULT_SCENARIOS,
        "selection_rule": "strict",
        "shuffle": "cpython_random_Random(seed).shuffle",
        "domain_assignment": "index_mod_len",
        "task_assignment": "index_mod_len",
        "question_injection": "none",
        "plan_id_format": PLAN_ID_FORMAT,
        "decision": "sha256(seed:plan_id:target:attempt)[:8]/0xFFFFFFFF<p",
        "runtime_faults": runtime_table(),
        **perturbation_spec(perturb),
    }


def hbeval_spec_fingerprint(perturb: Sequence[str] = ()) -> str:
    """Fingerprint of ``hbeval_spec()`` (lower-case, 16 hex, the shared fingerprint function)."""
    return fingerprint(hbeval_spec(perturb))


def derive_trial_seed(seed: int, scenario_index: int, trial_index: int) -> int:
    """A trial's plan seed from the battery seed, scenario and trial (first 8 hex of SHA-256).

    Each trial of a stochastic scenario then meets its own, reproducible fault schedule.
    """
    key = f"{seed}:{scenario_index}:{trial_index}".encode()
    return int(hashlib.sha256(key).hexdigest()[:8], 16)


FIXED_SEED_RULE: Final = "sha256(when_seed:trial_index)[:8]"
"""How a scenario with its own seed (a battery file's ``when.seed``) seeds each trial."""


def derive_fixed_seed(when_seed: int, trial_index: int) -> int:
    """A trial's plan seed from a scenario's own seed and the trial index (first 8 hex of SHA-256).

    The run's seed does not enter, so the draws are the same in every run; the trial index
    does, so the trials of one run draw differently.
    """
    key = f"{compat.require_seed(when_seed)}:{trial_index}".encode()
    return int(hashlib.sha256(key).hexdigest()[:8], 16)


def plan_for_trial(scenario: Any, run_seed: int, trial_index: int) -> Any:
    """``scenario``'s plan for trial ``trial_index`` of a run seeded ``run_seed``.

    A scenario that derives its own trial seeds (``trial_seed(run_seed, trial_index)``: a
    battery file's scenario) is asked; any other is seeded with ``derive_trial_seed``.
    """
    own = getattr(scenario, "trial_seed", None)
    if callable(own):
        return scenario.plan(own(run_seed, trial_index))
    return scenario.plan(derive_trial_seed(run_seed, scenario.index, trial_index))


@dataclass(frozen=True)
class BatteryScenario(Scenario):
    """A scenario of a ``Battery``: its question injection and, for hbeval, its runtime plan."""

    battery: str = BATTERY_HBEVAL
    task_id: str | None = None
    """The task this scenario is pinned to (``--matrix``); None: task ``index mod len``."""

    @property
    def targets(self) -> tuple[str, ...]:
        """The tools its runtime faults target (``"*"``: any tool); () without any."""
        template = self.runtime
        if template is None:
            return ()
        targets = [f.target for f in template.faults] + [s.target for s in template.stages]
        return tuple(dict.fromkeys(targets))

    @property
    def runtime(self) -> RuntimeTemplate | None:
        """The runtime faults this scenario injects (None for compat and nominal scenarios)."""
        if self.battery != BATTERY_HBEVAL:
            return None
        return RUNTIME_TABLE[self.fault_type]

    @property
    def plan_id(self) -> str | None:
        """The id of this scenario's plans (None when it has no runtime faults)."""
        if self.runtime is None:
            return None
        return PLAN_ID_FORMAT.format(index=self.index, fault_type=self.fault_type)

    @property
    def question_context(self) -> bool:
        """Whether the question carries the fault context sentence: only in the compat battery."""
        return self.battery == BATTERY_COMPAT

    def question(self, base: str) -> str:
        """``base`` unchanged (hbeval), or with the reference's fault context appended (compat)."""
        if not self.question_context:
            return base
        return compat.inject_fault(base, self.fault_type)

    def plan(self, trial_seed: int) -> FaultPlan | CascadePlan | None:
        """This scenario's runtime plan for one trial, or None when it injects nothing."""
        template, plan_id = self.runtime, self.plan_id
        if template is None or plan_id is None:
            return None
        return template.build(plan_id, compat.require_seed(trial_seed))

    def runtime_summary(self) -> dict[str, Any] | None:
        """``{"plan_id", "kind", "faults" | "stages"}``, or None without runtime faults."""
        template = self.runtime
        if template is None:
            return None
        return {"plan_id": self.plan_id, **template.to_dict()}

    def to_dict(self) -> dict[str, Any]:
        """The reference's four fields, plus ``"runtime"`` for an hbeval scenario."""
        data = super().to_dict()
        if self.battery == BATTERY_HBEVAL:
            data["runtime"] = self.runtime_summary()
        if self.task_id is not None:
            data["task"] = self.task_id
        return data


def _strict_names(names: Iterable[str] | None, valid: tuple[str, ...], what: str) -> list[str]:
    """The caller's names in their order, or the full set; unknown names raise."""
    if names is None:
        return list(valid)
    if isinstance(names, str):
        # A bare string would be iterated character by character: say so instead.
        raise ValueError(f"{what}s must be a list of names such as [{valid[0]!r}] (got {names!r})")
    chosen = list(names)
    bad = [n for n in chosen if n not in valid]
    if bad:
        raise ValueError(
            f"unknown {what} {', '.join(repr(b) for b in bad)}; valid {what}s: {', '.join(valid)}"
        )
    # An empty selection means "no narrowing", as with the CLI's repeatable flags given zero times.
    return chosen or list(valid)


def _strict_count(n_scenarios: object) -> int:
    if (
        isinstance(n_scenarios, bool)
        or not isinstance(n_scenarios, int)
        or not MIN_SCENARIOS <= n_scenarios <= MAX_SCENARIOS
    ):
        raise ValueError(
            f"n_scenarios must be a whole number from {MIN_SCENARIOS} to {MAX_SCENARIOS} "
            f"(got {n_scenarios!r})"
        )
    return n_scenarios


class MeasuredBattery:
    """What every battery kind (built-in or a user's file) shares: its measurement fingerprint."""

    seed: int

    @property
    def build_version(self) -> str:
        raise NotImplementedError

    def spec_fingerprint(self) -> str:
        raise NotImplementedError

    def plan_fingerprint(self) -> str:
        raise NotImplementedError

    def measurement_fingerprint(
        self,
        trials: int,
        *,
        scoring_version: str = SCORING_VERSION,
        derive_version: str = DERIVE_VERSION,
    ) -> str:
        """The measurement fingerprint of running this battery ``trials`` times per scenario."""
        return measurement_fingerprint(
            self.spec_fingerprint(),
            self.build_version,
            self.plan_fingerprint(),
            self.seed,
            trials,
            scoring_version,
            derive_version,
        )


@dataclass(frozen=True)
class Battery(MeasuredBattery):
    """A built battery: its scenarios, its spec and the fingerprints that identify it.

    Build with ``Battery.hbeval(...)`` (strict selection, runtime faults) or
    ``Battery.compat(...)`` (the reference, byte for byte: clamping and silent fallback).
    """

    kind: str
    seed: int
    scenarios: tuple[BatteryScenario | PerturbationScenario, ...]
    fault_types: tuple[str, ...] = field(default=FAULT_TYPES)
    """The active fault-type selection (caller's order)."""
    domains: tuple[str, ...] = field(default=DOMAINS)
    """The active domain selection (caller's order)."""
    perturb: tuple[str, ...] = ()
    """The perturbation families added after the fault scenarios (hbeval only)."""
    assignment: str = TASK_ASSIGNMENT
    """How scenarios meet tasks: ``index_mod_len``, or ``matrix`` (every scenario x task)."""

    @classmethod
    def hbeval(
        cls,
        n_scenarios: int = DEFAULT_SCENARIOS,
        seed: int = DEFAULT_SEED,
        fault_types: Iterable[str] | None = None,
        domains: Iterable[str] | None = None,
        perturb: Iterable[str] | None = None,
    ) -> Battery:
        """Build ``hbeval-battery/1``; unknown names or an out-of-range size raise ValueError.

        ``perturb`` names perturbation families to add (``["context"]``); none by default.
        """
        seed = compat.require_seed(seed)
        n = _strict_count(n_scenarios)
        faults = _strict_names(fault_types, FAULT_TYPES, "fault type")
        doms = _strict_names(domains, DOMAINS, "domain")
        families = check_perturb(perturb)
        built = cls._build(BATTERY_HBEVAL, n, seed, faults, doms)
        if not families:
            return built
        extra = perturbation_scenarios(families, len(built.scenarios), doms)
        return replace(built, scenarios=(*built.scenarios, *extra), perturb=families)

    @classmethod
    def compat(
        cls,
        n_scenarios: int = DEFAULT_SCENARIOS,
        seed: int = DEFAULT_SEED,
        fault_types: Iterable[str] | None = None,
        domains: Iterable[str] | None = None,
    ) -> Battery:
        """Build the reference battery: size clamped to 6..60, unknown names dropped silently."""
        seed = compat.require_seed(seed)
        n = compat.clamp_scenarios(n_scenarios)
        faults, doms = compat.normalise_selection(fault_types, domains)
        return cls._build(BATTERY_COMPAT, n, seed, faults, doms)

    @classmethod
    def build(
        cls,
        battery: str = BATTERY_HBEVAL,
        n_scenarios: int = DEFAULT_SCENARIOS,
        seed: int = DEFAULT_SEED,
        fault_types: Iterable[str] | None = None,
        domains: Iterable[str] | None = None,
        perturb: Iterable[str] | None = None,
    ) -> Battery:
        """Build the battery named ``battery`` ("hbeval" or "compat")."""
        if battery == BATTERY_HBEVAL:
            return cls.hbeval(n_scenarios, seed, fault_types, domains, perturb)
        if battery == BATTERY_COMPAT:
            if check_perturb(perturb):
                raise ValueError(
                    "the compat battery appends the context sentences to every scenario "
                    "already; perturb the hbeval battery instead (--battery hbeval --perturb "
                    "context)"
                )
            return cls.compat(n_scenarios, seed, fault_types, domains)
        raise ValueError(f"battery must be one of {', '.join(BATTERY_KINDS)} (got {battery!r})")

    @classmethod
    def _build(cls, kind: str, n: int, seed: int, faults: list[str], doms: list[str]) -> Battery:
        pool = compat.fault_pool(n, faults, seed)
        scenarios = tuple(
            BatteryScenario(
                index=i,
                domain=doms[i % len(doms)],
                fault_type=ft,
                is_nominal=ft == NOMINAL,
                battery=kind,
            )
            for i, ft in enumerate(pool)
        )
        return cls(kind, seed, scenarios, tuple(faults), tuple(doms))

    def __len__(self) -> int:
        return len(self.scenarios)

    def __iter__(self) -> Iterator[BatteryScenario | PerturbationScenario]:
        return iter(self.scenarios)

    @property
    def build_version(self) -> str:
        """The build-algorithm version that enters the measurement fingerprint."""
        return BUILD_ALGORITHM if self.kind == BATTERY_HBEVAL else COMPAT_BUILD_ALGORITHM

    @property
    def selection(self) -> dict[str, list[str]] | None:
        """``{"fault_types", "domains"}`` when narrowed, None for the full set."""
        if self.fault_types == FAULT_TYPES and self.domains == DOMAINS:
            return None
        return {"fault_types": list(self.fault_types), "domains": list(self.domains)}

    def spec(self) -> dict[str, Any]:
        """The specification its fingerprint covers: ``compat.spec()`` or ``hbeval_spec()``."""
        if self.kind != BATTERY_HBEVAL:
            return compat.spec()
        spec = hbeval_spec(self.perturb)
        if self.assignment != TASK_ASSIGNMENT:
            spec["task_assignment"] = self.assignment
        return spec

    def spec_fingerprint(self) -> str:
        """Fingerprint of ``spec()``: ``ce481b32763df1ca`` for compat."""
        return fingerprint(self.spec())

    def plan_fingerprint(self) -> str:
        """Fingerprint of every scenario's position, label, fault type and runtime plan.

        Trial seeds are left out (the measurement fingerprint carries the battery seed); the
        scenario list is in, so the size and selection are pinned too.
        """
        return fingerprint(
            {
                "build_algorithm": self.build_version,
                "scenarios": [plan_entry(s) for s in self.scenarios],
            }
        )

    def matrix(self, task_ids: Sequence[str]) -> Battery:
        """This battery run as the scenario x task matrix: every scenario pinned to each task."""
        if self.kind != BATTERY_HBEVAL:
            raise ValueError(
                "--matrix: the compat battery assigns tasks as the reference does; use the "
                "hbeval battery"
            )
        return replace(
            self, scenarios=matrix_scenarios(self.scenarios, task_ids), assignment=MATRIX
        )

    def trial_plan(
        self, scenario: BatteryScenario | PerturbationScenario, trial_index: int
    ) -> FaultPlan | CascadePlan | None:
        """``scenario``'s plan for trial ``trial_index``, seeded with ``derive_trial_seed``."""
        plan: FaultPlan | CascadePlan | None = plan_for_trial(scenario, self.seed, trial_index)
        return plan

    def to_dict(self) -> dict[str, Any]:
        """The ``hbeval battery build --json`` document."""
        return {
            "fingerprint": self.spec_fingerprint(),
            "battery": self.kind,
            "build_algorithm": self.build_version,
            "plan_fingerprint": self.plan_fingerprint(),
            "seed": self.seed,
            "n_scenarios": len(self.scenarios),
            "selection": self.selection,
            **({"perturb": list(self.perturb)} if self.perturb else {}),
            "scenarios": [s.to_dict() for s in self.scenarios],
        }


def measurement_fingerprint(
    spec_fp: str,
    build_version: str,
    plan_fp: str,
    seed: int,
    trials: int,
    scoring_version: str,
    derive_version: str,
) -> str:
    """What a set of results was measured under; results under different ones never compare.

    The shared fingerprint of ``{"battery_spec", "build_algorithm", "fault_plans", "seed",
    "trials", "scoring_version", "derive_version"}``. Package versions belong in the manifest.
    """
    compat.require_seed(seed)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a whole number >= 1 (got {trials!r})")
    return fingerprint(
        {
            "battery_spec": spec_fp,
            "build_algorithm": build_version,
            "fault_plans": plan_fp,
            "seed": seed,
            "trials": trials,
            "scoring_version": scoring_version,
            "derive_version": derive_version,
        }
    )


S = TypeVar("S")


def matrix_scenarios(scenarios: Sequence[S], task_ids: Sequence[str]) -> tuple[S, ...]:
    """Each scenario once per task id, pinned to it and numbered anew (scenario-major order)."""
    ids = list(dict.fromkeys(task_ids))
    if not ids:
        raise ValueError("--matrix needs at least one task")
    out: list[S] = []
    for s in scenarios:
        for task_id in ids:
            out.append(replace(s, index=len(out), task_id=task_id))  # type: ignore[type-var]
    return tuple(out)


def plan_entry(scenario: Any) -> dict[str, Any]:
    """A scenario's entry in a plan fingerprint (its pinned task only when pinned)."""
    entry: dict[str, Any] = {
        "index": scenario.index,
        "domain": scenario.domain,
        "fault_type": scenario.fault_type,
        "runtime": scenario.runtime_summary(),
    }
    task_id = getattr(scenario, "task_id", None)
    if task_id is not None:
        entry["task"] = task_id
    return entry


def task_for(scenario: Scenario, tasks: Sequence[T]) -> T:
    """The task a scenario runs: the one it is pinned to, else ``tasks[i mod len(tasks)]``."""
    if not tasks:
        raise ValueError("tasks must hold at least one task")
    pinned = getattr(scenario, "task_id", None)
    if pinned is not None:
        for task in tasks:
            if getattr(task, "id", None) == pinned:
                return task
        known = ", ".join(str(getattr(t, "id", "?")) for t in tasks)
        raise ValueError(
            f"scenario {scenario.index} ({scenario.fault_type}) is pinned to task {pinned!r}, "
            f"which the tasks do not hold (tasks: {known})"
        )
    return tasks[scenario.index % len(tasks)]


__all__ = [
    "BATTERY_COMPAT",
    "BATTERY_HBEVAL",
    "BATTERY_KINDS",
    "BUILD_ALGORITHM",
    "CASCADE_TIMEOUT_MS",
    "COMPAT_BUILD_ALGORITHM",
    "FIXED_SEED_RULE",
    "MATRIX",
    "PLAN_ID_FORMAT",
    "RUNTIME_TABLE",
    "TASK_ASSIGNMENT",
    "Battery",
    "BatteryScenario",
    "RuntimeTemplate",
    "derive_fixed_seed",
    "derive_trial_seed",
    "hbeval_spec",
    "hbeval_spec_fingerprint",
    "matrix_scenarios",
    "measurement_fingerprint",
    "plan_entry",
    "plan_for_trial",
    "runtime_table",
    "task_for",
]
