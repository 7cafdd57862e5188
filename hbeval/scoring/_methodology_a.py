"""Methodology A: the reference's text heuristics, scored on a response alone (spec §2.6).

These are the HB-Eval Methodology A runner's functions (``run_behavioral.py``) with their exact
phrase lists and thresholds. They read only the response text, so they are gameable by design:
hbeval uses them for methodology A's figures and never lets them decide a trial's pass/fail or
override what a trace shows.

One deliberate difference from the reference: ``compute_irs`` returns ``None`` (undefined) for a
nominal scenario or an empty response, where the reference returns 0.0 while its own comment
says "undefined". Undefined is never zero in hbeval. The composite keeps the reference's
arithmetic by letting an undefined IRS contribute nothing (exactly what its 0.0 contributed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hbeval_core.vocab import NO_FAULT_OBSERVED, NO_REQUIRED_KEYWORDS, NOT_MEASURED

NOMINAL_FAULT_TYPE = "none"
"""The reference's fault type of a nominal scenario."""

RECOVERY_PHRASES: tuple[str, ...] = (
    "alternative",
    "fallback",
    "despite",
    "however",
    "instead",
    "workaround",
    "contingency",
)
"""compute_frr: an explicit recovery acknowledgement (case-insensitive substring)."""

MEMORY_PHRASES: tuple[str, ...] = (
    "based on previous",
    "as established in",
    "following the same approach",
    "consistent with prior",
    "according to protocol",
    "as per standard",
    "precedent",
)
"""compute_irs: proxy indicators of memory-guided reasoning."""

SYSTEMATIC_PHRASES: tuple[str, ...] = (
    "systematic",
    "step-by-step",
    "methodically",
    "approach:",
    "procedure:",
    "protocol:",
)
"""compute_irs: proxy indicators of systematic reasoning."""

TRANSPARENCY_MARKERS: tuple[str, ...] = (
    "because",
    "therefore",
    "consequently",
    "given that",
    "due to",
    "as a result",
    "in order to",
    "the reason",
    "this ensures",
    "this prevents",
    "to avoid",
)
"""compute_ti: structural transparency markers (4 or more give the full score)."""

COMPOSITE_WEIGHTS: dict[str, float] = {"frr": 0.5, "pei": 0.3, "irs": 0.1, "ti": 0.1}
"""Methodology A composite = 0.5·FRR + 0.3·PEI + 0.1·IRS + 0.1·TI, rounded to 3."""


def keyword_coverage(response: str, required: Sequence[str]) -> float:
    """Share of ``required`` keywords found in ``response`` (case-insensitive substring).

    As the reference computes it: found / max(1, len(required)), so an empty keyword list gives
    0.0, not 1.0.
    """
    lower = response.lower()
    found = sum(1 for kw in required if kw.lower() in lower)
    return found / max(1, len(required))


def compute_frr(response: str, required: Sequence[str]) -> float:
    """Methodology A's graded recovery score from keyword coverage and a recovery phrase.

    1.0 if coverage >= 0.8 and a recovery phrase is present; else 0.7 if coverage >= 0.6; else
    0.4 if coverage >= 0.4; else 0.0. An empty response scores 0.0.
    """
    if not response:
        return 0.0
    coverage = keyword_coverage(response, required)
    lower = response.lower()
    recovery_signal = any(p in lower for p in RECOVERY_PHRASES)
    if coverage >= 0.8 and recovery_signal:
        return 1.0
    if coverage >= 0.6:
        return 0.7
    if coverage >= 0.4:
        return 0.4
    return 0.0


_JSON_START = frozenset('{["-0123456789ntfNI')
"""Every JSON text json.loads accepts starts (after spaces, tabs and newlines) with one of these."""


def compute_pei(response: str, required: Sequence[str]) -> float:
    """Methodology A's planning score: a JSON quality factor, else keyword density.

    A response that parses as JSON scores QF = 1.0 without ``constraint_violations``, else
    max(0.3, 1 − 0.2·count). Otherwise min(1, coverage × 0.8), rounded to 3. Empty → 0.0.
    JSON that is not an object (a list, a number) has no ``constraint_violations`` and scores
    1.0; the reference would crash on it.
    """
    if not response:
        return 0.0
    try:
        if isinstance(response, str) and response.lstrip(" \t\n\r")[:1] not in _JSON_START:
            raise ValueError("not JSON")  # what json.loads would say, without its cost
        parsed = json.loads(response)
    except ValueError:
        return round(min(1.0, keyword_coverage(response, required) * 0.8), 3)
    violations: Any = parsed.get("constraint_violations", []) if isinstance(parsed, dict) else []
    if not violations:
        return 1.0
    count = len(violations) if hasattr(violations, "__len__") else 1
    return round(max(0.3, 1.0 - 0.2 * count), 3)


def _parses_as_json(response: str) -> bool:
    """The response is JSON (``compute_pei`` then grades it without keywords)."""
    if not response or response.lstrip(" \t\n\r")[:1] not in _JSON_START:
        return False
    try:
        json.loads(response)
    except ValueError:
        return False
    return True


def compute_irs(response: str, fault_type: str) -> float | None:
    """Methodology A's intentional-recovery proxy from memory and systematic phrases.

    1.0 with >= 2 memory phrases, or >= 1 memory and >= 1 systematic phrase; 0.5 with >= 2
    systematic phrases; else 0.0. **None** (undefined) for a nominal scenario or an empty
    response, where the reference returns 0.0.
    """
    if fault_type == NOMINAL_FAULT_TYPE or not response:
        return None
    lower = response.lower()
    mem_found = sum(1 for s in MEMORY_PHRASES if s in lower)
    sys_found = sum(1 for s in SYSTEMATIC_PHRASES if s in lower)
    if mem_found >= 2 or (mem_found >= 1 and sys_found >= 1):
        return 1.0
    if sys_found >= 2:
        return 0.5
    return 0.0


def compute_ti(response: str) -> float:
    """Methodology A's traceability proxy on a 0–1 scale: min(1, markers / 4), rounded to 3.

    Note the scale: the live TI is 0–5; this one is 0–1, as the reference's runner has it.
    """
    if not response:
        return 0.0
    lower = response.lower()
    found = sum(1 for m in TRANSPARENCY_MARKERS if m in lower)
    return round(min(1.0, found / 4.0), 3)


def composite_a(frr: float, pei: float, irs: float | None, ti: float) -> float:
    """Methodology A composite, round(0.5·FRR + 0.3·PEI + 0.1·IRS + 0.1·TI, 3).

    An undefined IRS contributes nothing, as the reference's 0.0 did.
    """
    w = COMPOSITE_WEIGHTS
    irs_term = 0.0 if irs is None else irs
    return round(w["frr"] * frr + w["pei"] * pei + w["irs"] * irs_term + w["ti"] * ti, 3)


def success_a(frr: float, pei: float) -> bool:
    """Methodology A success: FRR >= 0.7 and PEI >= 0.5."""
    return frr >= 0.7 and pei >= 0.5


@dataclass(frozen=True)
class TextScore:
    """All of methodology A's figures for one response."""

    frr: float
    pei: float
    irs: float | None
    ti: float
    composite: float
    success: bool
    undefined: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form; an undefined IRS is null with its reason."""
        return {
            "frr": self.frr,
            "pei": self.pei,
            "irs": self.irs,
            "ti": self.ti,
            "composite": self.composite,
            "success": self.success,
            "undefined": dict(self.undefined),
        }


def score_text(response: str, required: Sequence[str], fault_type: str) -> TextScore:
    """Score one response with every methodology A heuristic (spec §2.6)."""
    frr = compute_frr(response, required)
    pei = compute_pei(response, required)
    irs = compute_irs(response, fault_type)
    ti = compute_ti(response)
    undefined: dict[str, str] = {}
    if irs is None:
        undefined["irs"] = NO_FAULT_OBSERVED if fault_type == NOMINAL_FAULT_TYPE else NOT_MEASURED
    if not required:
        # The figure is the reference's (0.0 for an empty keyword list), kept for the
        # composite; it grades nothing, so a mean over trials leaves it out.
        undefined["frr"] = NO_REQUIRED_KEYWORDS
        if not _parses_as_json(response):
            undefined["pei"] = NO_REQUIRED_KEYWORDS
    return TextScore(
        frr=frr,
        pei=pei,
        irs=irs,
        ti=ti,
        composite=composite_a(frr, pei, irs, ti),
        success=success_a(frr, pei),
        undefined=undefined,
    )
