"""Model faults in scoring: their delivery receipt and how the agent's client handled each.

A model fault (``vocab.MODEL_FAULT_MODES``) is planted on a model call at the HTTP layer, so the
"payload in the next model input" rule of tool faults does not apply: it is delivered when its
receipt says the client received the faulted response (``attrs.received``; the proxy answered
it, so this holds by construction). A receipt of a fault that was not applied (an
``injected`` other than ``applied``, e.g. a malformed tool call on a reply without one) is not
delivered.

Handling, from the receipt's ``attrs.followed_by`` (``hbeval.proxy._openai``):

* ``deliberate``: a retry that honoured ``Retry-After`` (any retry of a fault without one), or a
  fallback to another model;
* ``retry_ignored_retry_after``: a 429 retried before the time it asked for;
* ``continued``: the conversation went on changed (the agent worked around or escalated);
* ``gave_up``: no further model call in the trial;
* ``unknown``: the receipt does not say (not recorded through the proxy).

An injected 429 is a fault for the agent to handle, never a pause of the run: these receipts
never reach the run's rate limiter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final

from hbeval_core.events import FaultInjected
from hbeval_core.vocab import MODEL_FAULT_MODES, RECEIPT_NOT_SEEN, RECEIPT_RECEIVED

__all__ = ["HANDLINGS", "handling", "handling_counts", "model_fault_receipt"]

HANDLINGS: Final = (
    "deliberate",
    "retry_ignored_retry_after",
    "continued",
    "gave_up",
    "unknown",
)


def model_fault_receipt(fault: FaultInjected) -> tuple[bool, str] | None:
    """``(delivered, reason)`` for a model fault's receipt; None for any other fault."""
    if fault.mode not in MODEL_FAULT_MODES:
        return None
    if fault.injected == "applied" and fault.attrs.get("received") is True:
        return True, RECEIPT_RECEIVED
    return False, RECEIPT_NOT_SEEN


def handling(fault: FaultInjected | Mapping[str, Any]) -> str:
    """How the client handled one model fault (``HANDLINGS``), from its receipt."""
    attrs = fault.attrs if isinstance(fault, FaultInjected) else fault.get("attrs") or {}
    followed = attrs.get("followed_by") if isinstance(attrs, Mapping) else None
    if not isinstance(followed, Mapping):
        return "unknown"
    action = followed.get("action")
    if action == "retry":
        honoured = followed.get("honoured_retry_after")
        return "retry_ignored_retry_after" if honoured is False else "deliberate"
    if action == "fallback":
        return "deliberate"
    if action in ("continued", "gave_up"):
        return str(action)
    return "unknown"


def handling_counts(events: Iterable[Any]) -> dict[str, int]:
    """Model faults of a trace by handling (every key of ``HANDLINGS``, zeros included)."""
    got = Counter(
        handling(e) for e in events if isinstance(e, FaultInjected) and e.mode in MODEL_FAULT_MODES
    )
    return {h: got.get(h, 0) for h in HANDLINGS}
