"""Claims: what an agent says about itself, checked against what its trace shows.

A claim comes from a ``claim`` event (``name``, ``value``) or from a key of the final state that
the reference's runner forwards as a behavioural field (``BEHAVIOURAL_KEYS``). With a trace
(E1, E2) the trace decides: a claim whose value the trace contradicts is **unsupported** and its
canonical name is listed in ``claims_unsupported``; a claim the trace agrees with is supported.
Either way it counts as reconciled. A claim hbeval has no trace check for is kept but neither
supported nor unsupported. On E0 (text only) nothing can be reconciled: claims are kept as said.

Text can support a score the trace corroborates but never manufacture one: claims never change
a signal or a pass. On E0 under methodology A, a claim of deliberate handling scores at most
``E0_CLAIM_CAP`` (0.35), capped, not zeroed, as the reference documents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

E0_CLAIM_CAP = 0.35
"""The most an unsupported (text-only) claim of deliberate handling can score."""

BEHAVIOURAL_KEYS: tuple[str, ...] = (
    "steps",
    "retries",
    "replanned",
    "had_fault",
    "recovered_intentionally",
    "traceable",
    "success",
    "tool_calls",
    "handled_deliberately",
)
"""Final-state keys read as claims: the reference's eight behavioural fields plus
``handled_deliberately`` (the live SDK's second IRS flag)."""

CANONICAL_NAMES: dict[str, str] = {
    "recovered_intentionally": "deliberate_handling",
    "handled_deliberately": "deliberate_handling",
    "intentional_recovery": "deliberate_handling",
    "deliberate_handling": "deliberate_handling",
    "recovered": "fault_absorbed",
    "fault_absorbed": "fault_absorbed",
}
"""Aliases folded into the names the reference lists unsupported claims by."""

DELIBERATE_CLAIM = "deliberate_handling"
"""Canonical name of a claim of deliberate handling."""


@dataclass(frozen=True)
class ClaimCheck:
    """One claim and what the trace says about it."""

    name: str
    canonical: str
    value: Any
    source: str
    observed: Any
    supported: bool | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "name": self.name,
            "canonical": self.canonical,
            "value": self.value,
            "source": self.source,
            "observed": self.observed,
            "supported": self.supported,
        }


def canonical_claim(name: str) -> str:
    """The canonical name of a claim (aliases folded, others unchanged)."""
    return CANONICAL_NAMES.get(name, name)


def collect_claims(claim_events: list[Any], final_state: Any) -> list[tuple[str, Any, str]]:
    """Claims as (name, value, source): claim events first, then behavioural final-state keys.

    An adapter may already have turned the final state's fields into claim events (tagged
    ``attrs.source == "final_state"``, so the stored trace keeps them); those are not counted twice.
    """
    out: list[tuple[str, Any, str]] = []
    echoed: set[str] = set()
    for c in claim_events:
        if (getattr(c, "attrs", None) or {}).get("source") == "final_state":
            echoed.add(c.name)
            out.append((c.name, c.value, "final_state"))
        else:
            out.append((c.name, c.value, "claim_event"))
    if isinstance(final_state, Mapping):
        for key in BEHAVIOURAL_KEYS:
            if key in final_state and key not in echoed:
                out.append((key, final_state[key], "final_state"))
    return out


def _equal(claimed: Any, observed: Any) -> bool:
    if observed is None:
        # Nothing happened that the claim could describe (deliberate handling on a trial
        # without a delivered fault): only a claim of "no" agrees with that.
        return not claimed
    if isinstance(observed, bool):
        return bool(claimed) == observed
    if isinstance(observed, int) and not isinstance(claimed, bool):
        try:
            return int(claimed) == observed
        except (TypeError, ValueError):
            return False
    return bool(claimed == observed)


def reconcile(
    claims: list[tuple[str, Any, str]],
    observed: Mapping[str, Callable[[], Any]],
    *,
    has_trace: bool,
) -> list[ClaimCheck]:
    """Check each claim against the trace's observation for its canonical name.

    ``observed`` maps canonical names to a function giving what the trace shows (called only
    when a claim needs it). Without a trace every claim stays unreconciled (supported None).
    """
    checks: list[ClaimCheck] = []
    for name, value, source in claims:
        canon = canonical_claim(name)
        probe = observed.get(canon)
        if not has_trace or probe is None:
            checks.append(ClaimCheck(name, canon, value, source, None, None))
            continue
        seen = probe()
        checks.append(ClaimCheck(name, canon, value, source, seen, _equal(value, seen)))
    return checks


def claims_deliberate(checks: list[ClaimCheck]) -> bool:
    """True when any claim asserts deliberate handling."""
    return any(c.canonical == DELIBERATE_CLAIM and bool(c.value) for c in checks)
