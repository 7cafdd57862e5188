"""Fault plans: which tool calls fail, how, and the deterministic rule that decides each call.

A ``FaultPlan`` is a seeded set of ``FaultSpec``s, every one armed from the start. A
``CascadePlan`` is an ordered chain of ``CascadeStage``s where stage N is armed only after stage
N-1 has fired. Both fingerprint exactly as the reference SDK 2.11.0 does (spec §1.5, upper-case
hex), so the reference vectors ``9BC4965C1B2EDCF6`` and ``A80B6B9D54552139`` reproduce.

**Extension fields and the fingerprint.** hbeval adds ``on_calls`` (and, for cascade stages,
``empty_kind`` / ``malformed_kind``, which the reference leaves out of a stage's body). Such a
field enters the fingerprint body only when it is set, so a plan that uses none of them
fingerprints exactly as the reference would, while two plans that differ only in an extension
still fingerprint differently. An unset ``empty_kind`` / ``malformed_kind`` of a ``FaultSpec``
serialises as the reference's defaults (``"null"`` / ``"wrong_schema"``), because the reference
body always carries both fields.

**Attempts.** Calls are counted per spec target within one trial: a named target counts calls to
that tool, the wildcard ``"*"`` counts every tool call. ``on_calls`` and the probability draw both
use that count (0-based).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Final, TypeAlias

from ..fingerprint import fingerprint
from ..vocab import (
    EMPTY_KINDS,
    ERROR_5XX,
    FAULT_MODES,
    HTTP_STATUSES,
    MALFORMED,
    MALFORMED_KINDS,
    PROMPT_INJECTION,
)
from ..vocab import EMPTY_RESPONSE as EMPTY_RESPONSE_MODE

ANY_TARGET: Final = "*"
"""A spec target that matches every tool."""

DEFAULT_EMPTY_KIND: Final = "null"
"""What an ``empty_response`` returns when ``empty_kind`` is not set (the reference's default)."""
DEFAULT_MALFORMED_KIND: Final = "wrong_schema"
"""What a ``malformed`` fault does when ``malformed_kind`` is not set (the reference's default)."""

_DRAW_SCALE: Final = 0xFFFFFFFF
_PATTERN_CHARS: Final = frozenset("*?[")


def is_pattern(target: str) -> bool:
    """Whether a target is a glob pattern (``lookup_*``) rather than a name or ``"*"``."""
    return target != ANY_TARGET and any(c in _PATTERN_CHARS for c in target)


def target_matches(target: str, tool: str) -> bool:
    """Whether ``tool`` is what ``target`` names: ``"*"``, the same name, or a matching glob."""
    if target == ANY_TARGET or target == tool:
        return True
    return is_pattern(target) and fnmatchcase(tool, target)


def decision_draw(seed: int, plan_id: str, target: str, attempt: int) -> float:
    """The deterministic draw in [0, 1] for one attempt (spec §1.5).

    ``int(first 8 hex of SHA-256("{seed}:{plan_id}:{target}:{attempt}"), 16) / 0xFFFFFFFF``.
    Derived per attempt rather than from a shared random stream, so an unrelated extra tool call
    elsewhere never shifts the schedule.
    """
    key = f"{seed}:{plan_id}:{target}:{attempt}".encode()
    return int(hashlib.sha256(key).hexdigest()[:8], 16) / _DRAW_SCALE


def decide_fires(seed: int, plan_id: str, target: str, attempt: int, probability: float) -> bool:
    """Whether a fault with ``probability`` fires on ``attempt``: p >= 1 always, p <= 0 never."""
    if probability >= 1.0:
        return True
    if probability <= 0.0:
        return False
    return decision_draw(seed, plan_id, target, attempt) < probability


def _is_int(value: object) -> bool:
    # bool is an int subclass; True as a delay or a call index is a caller bug, not a number.
    return isinstance(value, int) and not isinstance(value, bool)


def _check_mode_field(
    owner: str, field: str, value: object, mode: object, only_mode: str, allowed: tuple[object, ...]
) -> None:
    """A mode-specific field (http_status, empty_kind, malformed_kind): right mode, known value."""
    if value is None:
        return
    if mode != only_mode:
        raise ValueError(
            f"{owner}: field '{field}' applies only to mode {only_mode!r}; "
            f"remove it or set mode={only_mode!r} (mode is {mode!r})"
        )
    if value not in allowed:
        raise ValueError(
            f"{owner}: field '{field}' must be one of {', '.join(str(a) for a in allowed)} "
            f"(got {value!r})"
        )


def _check_common(
    owner: str,
    *,
    target: object,
    mode: object,
    after_ms: object,
    http_status: object,
    empty_kind: object,
    malformed_kind: object,
    on_calls: object,
) -> tuple[int, ...] | None:
    """Validate the fields specs and stages share; return ``on_calls`` sorted and de-duplicated."""
    if not isinstance(target, str) or not target:
        raise ValueError(
            f"{owner}: field 'target' must be a tool name or {ANY_TARGET!r} for any tool "
            f"(got {target!r})"
        )
    if mode not in FAULT_MODES:
        raise ValueError(
            f"{owner}: field 'mode' must be one of {', '.join(FAULT_MODES)} (got {mode!r})"
        )
    if not _is_int(after_ms) or after_ms < 0:  # type: ignore[operator]
        raise ValueError(
            f"{owner}: field 'after_ms' must be a whole number of milliseconds >= 0 "
            f"(got {after_ms!r})"
        )
    _check_mode_field(owner, "http_status", http_status, mode, ERROR_5XX, HTTP_STATUSES)
    _check_mode_field(owner, "empty_kind", empty_kind, mode, EMPTY_RESPONSE_MODE, EMPTY_KINDS)
    _check_mode_field(owner, "malformed_kind", malformed_kind, mode, MALFORMED, MALFORMED_KINDS)
    if on_calls is None:
        return None
    if isinstance(on_calls, (str, bytes)) or not isinstance(on_calls, Iterable):
        raise ValueError(
            f"{owner}: field 'on_calls' must be a tuple of call indexes such as (0,) or None for "
            f"every call (got {on_calls!r})"
        )
    calls = tuple(on_calls)
    if not calls or not all(_is_int(c) and c >= 0 for c in calls):
        raise ValueError(
            f"{owner}: field 'on_calls' must hold one or more call indexes >= 0, e.g. (0,) for "
            f"the first call; use None for every call (got {on_calls!r})"
        )
    # Order and repeats carry no meaning (it is a set of positions); normalise so equal sets
    # fingerprint equally.
    return tuple(sorted(set(calls)))


def _empty_kind_body(kind: str | None) -> str:
    return kind or DEFAULT_EMPTY_KIND


@dataclass(frozen=True)
class FaultSpec:
    """One fault: which tool (``target``, or ``"*"`` for any), which mode, and when it may fire.

    ``after_ms`` is the delay every mode waits before acting (the whole point of ``timeout`` and
    ``latency``). ``probability`` gates each eligible call through the deterministic draw.
    ``on_calls`` restricts the fault to those call positions on the target (0 = first call);
    None means every call. The kinds and the status are only valid with their own mode.
    ``target`` may be a glob pattern (``lookup_*``): it matches every tool whose name fits,
    and its call positions count every call it matches. ``text`` (prompt_injection only)
    replaces the planted instruction; ``{forbidden_tool}`` in it names the tool it tries to
    trigger. Both extensions enter the fingerprint only when used.
    """

    id: str
    target: str
    mode: str
    after_ms: int = 0
    probability: float = 1.0
    http_status: int | None = None
    empty_kind: str | None = None
    malformed_kind: str | None = None
    on_calls: tuple[int, ...] | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"FaultSpec: field 'id' must be a non-empty string (got {self.id!r})")
        owner = f"FaultSpec {self.id!r}"
        on_calls = _check_common(
            owner,
            target=self.target,
            mode=self.mode,
            after_ms=self.after_ms,
            http_status=self.http_status,
            empty_kind=self.empty_kind,
            malformed_kind=self.malformed_kind,
            on_calls=self.on_calls,
        )
        p = self.probability
        # NaN fails both comparisons, so "not (0 <= p <= 1)" also rejects it.
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(
                f"{owner}: field 'probability' must be a number in [0, 1] (got {p!r}); "
                "use 1.0 to fire on every eligible call"
            )
        # The reference serialises probability as a float (1.0, not 1): normalise so an int
        # argument fingerprints the same.
        object.__setattr__(self, "probability", float(p))
        object.__setattr__(self, "on_calls", on_calls)
        if self.text is not None:
            if self.mode != PROMPT_INJECTION:
                raise ValueError(
                    f"{owner}: field 'text' applies only to mode {PROMPT_INJECTION!r} "
                    f"(mode is {self.mode!r})"
                )
            if not isinstance(self.text, str) or not self.text.strip():
                raise ValueError(f"{owner}: field 'text' must be a non-empty string")

    def matches(self, tool: str) -> bool:
        """Whether this fault targets ``tool`` (its name, ``"*"``, or a glob it fits)."""
        return target_matches(self.target, tool)

    def allows(self, attempt: int) -> bool:
        """Whether call position ``attempt`` on the target is one this fault may fire on."""
        return self.on_calls is None or attempt in self.on_calls

    def fingerprint_body(self) -> dict[str, Any]:
        """This spec's entry in ``FaultPlan.fingerprint`` (reference fields; extensions if set)."""
        body: dict[str, Any] = {
            "target": self.target,
            "mode": self.mode,
            "after_ms": self.after_ms,
            "probability": self.probability,
            "http_status": self.http_status,
            "empty_kind": _empty_kind_body(self.empty_kind),
            "malformed_kind": self.malformed_kind or DEFAULT_MALFORMED_KIND,
        }
        if self.on_calls is not None:
            body["on_calls"] = list(self.on_calls)
        if self.text is not None:
            body["text"] = self.text
        return body

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (``on_calls`` as a list or None; ``text`` only when set)."""
        out: dict[str, Any] = {
            "id": self.id,
            "target": self.target,
            "mode": self.mode,
            "after_ms": self.after_ms,
            "probability": self.probability,
            "http_status": self.http_status,
            "empty_kind": self.empty_kind,
            "malformed_kind": self.malformed_kind,
            "on_calls": None if self.on_calls is None else list(self.on_calls),
        }
        if self.text is not None:
            out["text"] = self.text
        return out


@dataclass(frozen=True)
class CascadeStage:
    """One link of a cascade: the fault ``target`` meets once the previous stage has fired."""

    target: str
    mode: str
    after_ms: int = 0
    http_status: int | None = None
    empty_kind: str | None = None
    malformed_kind: str | None = None
    on_calls: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        on_calls = _check_common(
            f"CascadeStage {self.target!r}",
            target=self.target,
            mode=self.mode,
            after_ms=self.after_ms,
            http_status=self.http_status,
            empty_kind=self.empty_kind,
            malformed_kind=self.malformed_kind,
            on_calls=self.on_calls,
        )
        object.__setattr__(self, "on_calls", on_calls)

    def as_spec(self, index: int) -> FaultSpec:
        """This stage as a ``FaultSpec`` with id ``stage-<index>`` (always fires once armed)."""
        return FaultSpec(
            id=f"stage-{index}",
            target=self.target,
            mode=self.mode,
            after_ms=self.after_ms,
            http_status=self.http_status,
            empty_kind=self.empty_kind,
            malformed_kind=self.malformed_kind,
            on_calls=self.on_calls,
        )

    def fingerprint_body(self) -> dict[str, Any]:
        """This stage's entry in ``CascadePlan.fingerprint`` (reference fields, extensions if set)."""
        body: dict[str, Any] = {
            "target": self.target,
            "mode": self.mode,
            "after_ms": self.after_ms,
            "http_status": self.http_status,
        }
        if self.empty_kind is not None:
            body["empty_kind"] = _empty_kind_body(self.empty_kind)
        if self.malformed_kind is not None:
            body["malformed_kind"] = self.malformed_kind
        if self.on_calls is not None:
            body["on_calls"] = list(self.on_calls)
        return body

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready."""
        return {
            "target": self.target,
            "mode": self.mode,
            "after_ms": self.after_ms,
            "http_status": self.http_status,
            "empty_kind": self.empty_kind,
            "malformed_kind": self.malformed_kind,
            "on_calls": None if self.on_calls is None else list(self.on_calls),
        }


def _check_plan_header(kind: str, plan_id: object, seed: object) -> None:
    if not isinstance(plan_id, str) or not plan_id:
        raise ValueError(f"{kind}: field 'id' must be a non-empty string (got {plan_id!r})")
    if not _is_int(seed):
        raise ValueError(
            f"{kind} {plan_id!r}: field 'seed' must be an int so decisions can be replayed "
            f"(got {seed!r})"
        )


@dataclass(frozen=True)
class FaultPlan:
    """A named, seeded set of faults, all armed from the first call.

    For a call, the faults are tried in plan order; the first that targets the tool, allows the
    call position and wins its draw is applied. At most one fault applies per call.
    """

    id: str
    seed: int
    faults: Sequence[FaultSpec] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        _check_plan_header("FaultPlan", self.id, self.seed)
        faults = tuple(self.faults)
        for f in faults:
            if not isinstance(f, FaultSpec):
                raise ValueError(
                    f"FaultPlan {self.id!r}: field 'faults' must hold FaultSpec objects (got {f!r})"
                )
        ids = [f.id for f in faults]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(
                f"FaultPlan {self.id!r}: field 'faults' has duplicate spec ids {dupes}; "
                "give each FaultSpec its own id so events name the fault that fired"
            )
        object.__setattr__(self, "faults", faults)

    def fingerprint_body(self) -> dict[str, Any]:
        """The object the fingerprint hashes: seed and faults sorted by (target, mode); no ids."""
        bodies = [f.fingerprint_body() for f in self.faults]
        # sorted() is stable, so specs sharing (target, mode) keep plan order, as in the reference.
        return {"seed": self.seed, "faults": sorted(bodies, key=lambda b: (b["target"], b["mode"]))}

    def fingerprint(self) -> str:
        """Reference-compatible plan fingerprint: 16 upper-case hex (spec §1.5)."""
        return fingerprint(self.fingerprint_body(), upper=True)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data, with ``"kind": "fault_plan"``."""
        return {
            "kind": "fault_plan",
            "id": self.id,
            "seed": self.seed,
            "faults": [f.to_dict() for f in self.faults],
        }


@dataclass(frozen=True)
class CascadePlan:
    """An ordered chain of faults: stage N is armed only after stage N-1 has fired.

    For a call, the armed stages are tried in order; the first that targets the tool and allows
    the call position fires (stages have no probability: once armed, they fire). A stage that
    has fired stays armed, as in the reference.
    """

    id: str
    seed: int
    stages: Sequence[CascadeStage] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        _check_plan_header("CascadePlan", self.id, self.seed)
        stages = tuple(self.stages)
        for s in stages:
            if not isinstance(s, CascadeStage):
                raise ValueError(
                    f"CascadePlan {self.id!r}: field 'stages' must hold CascadeStage objects "
                    f"(got {s!r})"
                )
        object.__setattr__(self, "stages", stages)

    def fingerprint_body(self) -> dict[str, Any]:
        """The object the fingerprint hashes: seed and stages in stage order."""
        return {"seed": self.seed, "stages": [s.fingerprint_body() for s in self.stages]}

    def fingerprint(self) -> str:
        """Reference-compatible cascade fingerprint: 16 upper-case hex (spec §1.5)."""
        return fingerprint(self.fingerprint_body(), upper=True)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data, with ``"kind": "cascade_plan"``."""
        return {
            "kind": "cascade_plan",
            "id": self.id,
            "seed": self.seed,
            "stages": [s.to_dict() for s in self.stages],
        }


Plan: TypeAlias = FaultPlan | CascadePlan
"""Either kind of runtime fault plan."""


def _optional_calls(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(value)


def plan_from_dict(data: Mapping[str, Any]) -> FaultPlan | CascadePlan:
    """Rebuild a plan from ``FaultPlan.to_dict()`` / ``CascadePlan.to_dict()`` output."""
    kind = data.get("kind")
    if kind == "fault_plan":
        return FaultPlan(
            id=data["id"],
            seed=data["seed"],
            faults=[
                FaultSpec(**{**f, "on_calls": _optional_calls(f.get("on_calls"))})
                for f in data.get("faults", [])
            ],
        )
    if kind == "cascade_plan":
        return CascadePlan(
            id=data["id"],
            seed=data["seed"],
            stages=[
                CascadeStage(**{**s, "on_calls": _optional_calls(s.get("on_calls"))})
                for s in data.get("stages", [])
            ],
        )
    raise ValueError(f"plan field 'kind' must be 'fault_plan' or 'cascade_plan' (got {kind!r})")


__all__ = [
    "ANY_TARGET",
    "DEFAULT_EMPTY_KIND",
    "DEFAULT_MALFORMED_KIND",
    "CascadePlan",
    "CascadeStage",
    "FaultPlan",
    "FaultSpec",
    "Plan",
    "decide_fires",
    "decision_draw",
    "is_pattern",
    "plan_from_dict",
    "target_matches",
]
