"""Model faults: the model API call itself fails. A fault family of its own.

Tool faults (``plans.FaultSpec``) land at a tool boundary; model faults land on the model call,
at the HTTP layer, so the provider client's own retry and ``Retry-After`` logic runs against
them (``hbeval proxy openai`` plants them; see ``hbeval.proxy._openai``). They never fire at a
tool boundary and are never part of the default batteries (``battery.RUNTIME_TABLE``), whose
fingerprints they leave unchanged.

=====================  ========================================================================
mode                   what the client receives (parameter, default)
=====================  ========================================================================
rate_limit             429 ``rate_limit_exceeded`` with ``Retry-After`` / ``retry-after-ms``
                       (``retry_after_ms``, 1000)
model_error            a 5xx ``server_error`` (``http_status`` 500, 502 or 503; 503)
model_timeout          nothing for ``after_ms`` (1000), then 504 ``timeout``
stream_cut             the upstream's first ``cut_after`` (2) chunks, then the connection closes
                       without the rest (a non-streamed reply: half its body)
malformed_tool_call    the upstream's reply, its tool-call arguments spoiled
                       (``malformed_kind``: ``invalid_json`` (default) or ``wrong_type``)
empty_completion       200, no text and no tool call, ``finish_reason`` ``stop``
context_overflow       400 ``context_length_exceeded`` (not retryable)
=====================  ========================================================================

``target`` is a model name or glob (default ``"*"``: every model call); ``on_calls`` counts the
model calls it matches, 0 being the first, and ``probability`` uses the same deterministic draw
as tool faults (``plans.decide_fires``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from ..fingerprint import fingerprint
from ..vocab import (
    CONTEXT_OVERFLOW,
    EFFECT_ERROR,
    EFFECT_RESULT_ALTERED,
    EMPTY_COMPLETION,
    MALFORMED_TOOL_CALL,
    MODEL_ERROR,
    MODEL_FAULT_MODES,
    MODEL_TIMEOUT,
    RATE_LIMIT,
    STREAM_CUT,
)
from .plans import ANY_TARGET, decide_fires, target_matches

__all__ = [
    "MODEL_ERROR_STATUSES",
    "MODEL_FAMILY_BATTERY",
    "MODEL_FAULTS_NEED_PROXY",
    "MODEL_FAULT_CATALOGUE",
    "MODEL_MALFORMED_KINDS",
    "MODEL_PARAMS",
    "ModelFaultPlan",
    "ModelFaultSpec",
    "check_model_param",
    "has_model_faults",
    "is_model_mode",
    "model_effect",
    "refuse_model_faults",
]

T = TypeVar("T")

MODEL_ERROR_STATUSES: Final = (500, 502, 503)
MODEL_MALFORMED_KINDS: Final = ("invalid_json", "wrong_type")
MAX_RETRY_AFTER_MS: Final = 60_000
"""The longest ``Retry-After`` a plan may ask for (what the openai SDK still honours)."""

MODEL_PARAMS: Final[Mapping[str, tuple[str, int | str, tuple[Any, ...] | None]]] = {
    # parameter: (its mode, default, allowed values or None for a whole number >= 0)
    "retry_after_ms": (RATE_LIMIT, 1000, None),
    "http_status": (MODEL_ERROR, 503, MODEL_ERROR_STATUSES),
    "after_ms": (MODEL_TIMEOUT, 1000, None),
    "cut_after": (STREAM_CUT, 2, None),
    "malformed_kind": (MALFORMED_TOOL_CALL, "invalid_json", MODEL_MALFORMED_KINDS),
}
"""Each mode's one parameter, its default and what it may be."""

MODEL_FAULT_CATALOGUE: Final[Mapping[str, str]] = {
    RATE_LIMIT: "429 rate_limit_exceeded with Retry-After",
    MODEL_ERROR: "a 5xx server_error",
    MODEL_TIMEOUT: "no answer for after_ms, then 504",
    STREAM_CUT: "the first chunks, then the connection closes",
    MALFORMED_TOOL_CALL: "tool-call arguments that are not valid JSON, or of the wrong types",
    EMPTY_COMPLETION: "a reply with no text and no tool call",
    CONTEXT_OVERFLOW: "400 context_length_exceeded",
}
"""The family, mode by mode: what the agent's client receives."""

_EFFECTS: Final = {
    MALFORMED_TOOL_CALL: EFFECT_RESULT_ALTERED,
    EMPTY_COMPLETION: EFFECT_RESULT_ALTERED,
}


def is_model_mode(mode: object) -> bool:
    """Whether ``mode`` belongs to the model fault family."""
    return mode in MODEL_FAULT_MODES


def model_effect(mode: str) -> str:
    """How a model fault reaches the agent (``vocab.FAULT_EFFECTS``)."""
    return _EFFECTS.get(mode, EFFECT_ERROR)


def check_model_param(owner: str, mode: str, key: str, value: object) -> int | str:
    """One parameter of a model fault, checked: right mode, allowed value."""
    if key not in MODEL_PARAMS:
        raise ValueError(
            f"{owner}: unknown parameter {key!r}; model fault parameters: "
            + ", ".join(MODEL_PARAMS)
        )
    only, _, allowed = MODEL_PARAMS[key]
    if mode != only:
        raise ValueError(f"{owner}: {key!r} applies only to mode {only!r} (mode is {mode!r})")
    if allowed is not None:
        if value not in allowed:
            raise ValueError(
                f"{owner}: {key!r} must be one of {', '.join(map(str, allowed))}, got {value!r}"
            )
        return value  # type: ignore[return-value]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{owner}: {key!r} must be a whole number >= 0, got {value!r}")
    if key == "retry_after_ms" and value > MAX_RETRY_AFTER_MS:
        raise ValueError(f"{owner}: 'retry_after_ms' must be at most {MAX_RETRY_AFTER_MS}")
    return value


@dataclass(frozen=True)
class ModelFaultSpec:
    """One model fault: which model calls (``target``, ``on_calls``, ``probability``), what mode.

    ``params`` holds the mode's parameter (``MODEL_PARAMS``) when it differs from its default;
    ``param`` reads it with the default filled in.
    """

    id: str
    mode: str
    target: str = ANY_TARGET
    on_calls: tuple[int, ...] | None = None
    probability: float = 1.0
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        owner = f"ModelFaultSpec {self.id!r}"
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"ModelFaultSpec: field 'id' must be a non-empty string ({self.id!r})")
        if self.mode not in MODEL_FAULT_MODES:
            raise ValueError(
                f"{owner}: field 'mode' must be one of {', '.join(MODEL_FAULT_MODES)} "
                f"(got {self.mode!r})"
            )
        if not isinstance(self.target, str) or not self.target:
            raise ValueError(f"{owner}: field 'target' must be a model name or '*'")
        p = self.probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"{owner}: field 'probability' must be a number in [0, 1] ({p!r})")
        object.__setattr__(self, "probability", float(p))
        if self.on_calls is not None:
            calls = tuple(self.on_calls)
            if not calls or not all(
                isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in calls
            ):
                raise ValueError(
                    f"{owner}: field 'on_calls' must hold call positions >= 0, e.g. (0,)"
                )
            object.__setattr__(self, "on_calls", tuple(sorted(set(calls))))
        checked = {k: check_model_param(owner, self.mode, k, v) for k, v in self.params.items()}
        object.__setattr__(self, "params", dict(sorted(checked.items())))

    def param(self, key: str) -> Any:
        """The mode's parameter ``key``, its default when the plan leaves it out."""
        return self.params.get(key, MODEL_PARAMS[key][1])

    def fires(self, seed: int, plan_id: str, model: str, attempt: int) -> bool:
        """Whether it fires on model call ``attempt`` (0-based, per target) to ``model``."""
        if not target_matches(self.target, model):
            return False
        if self.on_calls is not None and attempt not in self.on_calls:
            return False
        return decide_fires(seed, plan_id, self.target, attempt, self.probability)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (a receipt's ``intended``, a plan's summary)."""
        return {
            "id": self.id,
            "family": "model",
            "target": self.target,
            "mode": self.mode,
            "on_calls": None if self.on_calls is None else list(self.on_calls),
            "probability": self.probability,
            "params": dict(self.params),
        }


@dataclass(frozen=True)
class ModelFaultPlan:
    """A seeded set of model faults for one trial (or one proxy session)."""

    id: str
    seed: int
    faults: tuple[ModelFaultSpec, ...] = ()

    kind: str = "model_fault_plan"

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"ModelFaultPlan: field 'id' must be a non-empty string ({self.id!r})")
        object.__setattr__(self, "faults", tuple(self.faults))
        for f in self.faults:
            if not isinstance(f, ModelFaultSpec):
                raise ValueError(f"ModelFaultPlan {self.id!r}: faults must be ModelFaultSpec")

    def decide(self, model: str, counts: dict[str, int]) -> tuple[ModelFaultSpec, int] | None:
        """The fault (and its call position) for the next call to ``model``; counts advance.

        ``counts`` holds, per target, how many matching model calls were already made in the
        trial; every target the call matches advances, whether or not a fault fires.
        """
        chosen: tuple[ModelFaultSpec, int] | None = None
        positions: dict[str, int] = {}
        for spec in self.faults:
            if not target_matches(spec.target, model):
                continue
            if spec.target not in positions:  # once per call, however many faults share it
                positions[spec.target] = counts.get(spec.target, 0)
                counts[spec.target] = positions[spec.target] + 1
            attempt = positions[spec.target]
            if chosen is None and spec.fires(self.seed, self.id, model, attempt):
                chosen = (spec, attempt)
        return chosen

    def fingerprint(self) -> str:
        """Fingerprint of the plan's id, seed and faults."""
        return fingerprint(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "seed": self.seed,
            "faults": [f.to_dict() for f in self.faults],
        }


MODEL_FAMILY_BATTERY: Final[Mapping[str, Any]] = {
    "format": "hbeval-battery-file/1",
    "name": "model-faults",
    "description": "Every model fault mode once, on the first model call, and a nominal baseline.",
    "scenarios": [
        {"name": "nominal", "mode": "none"},
        *({"name": mode, "mode": mode, "when": {"attempts": [0]}} for mode in MODEL_FAULT_MODES),
    ],
}
"""What ``--fault-family model`` runs: a battery file, fingerprinted like any other."""


MODEL_FAULTS_NEED_PROXY: Final = (
    "the battery plants model faults, which reach an agent at the HTTP layer, not at a tool "
    "boundary: run the agent through `hbeval proxy openai --battery FILE` (its OPENAI_BASE_URL "
    "pointed at the proxy)"
)


def has_model_faults(battery: Any) -> bool:
    """Whether any scenario of ``battery`` plants a model fault."""
    return any(getattr(s, "is_model_fault", False) for s in getattr(battery, "scenarios", ()))


def refuse_model_faults(battery: T, adapter: Any = None) -> T:
    """``battery`` for a run; one with model faults raises unless ``adapter`` delivers them:
    its ``delivers_model_faults`` is true (a process run through the proxy) or its
    ``scripted_model_faults`` is (an in-process adapter whose scripted models raise them,
    ``faults.scripted``)."""
    delivers = getattr(adapter, "delivers_model_faults", False) or getattr(
        adapter, "scripted_model_faults", False
    )
    if has_model_faults(battery) and not delivers:
        raise ValueError(MODEL_FAULTS_NEED_PROXY)
    return battery
