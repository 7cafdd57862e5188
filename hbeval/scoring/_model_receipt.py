"""What the trace reader needs of model faults and proxies (no other scoring module imported).

``model_fault_receipt`` is a model fault's delivery (``_model_faults`` has the rule);
``proxy_seen`` reads a ``run_start``'s ``attrs.evidence`` to tell a trace seen only through a
proxy (``hbeval proxy openai``) from an adapter's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hbeval_core.events import FaultInjected, RunStart
from hbeval_core.vocab import MODEL_FAULT_MODES, RECEIPT_NOT_SEEN, RECEIPT_RECEIVED

__all__ = ["model_fault_receipt", "proxy_seen"]


def model_fault_receipt(fault: FaultInjected) -> tuple[bool, str] | None:
    """``(delivered, reason)`` for a model fault's receipt; None for any other fault."""
    if fault.mode not in MODEL_FAULT_MODES:
        return None
    if fault.injected == "applied" and fault.attrs.get("received") is True:
        return True, RECEIPT_RECEIVED
    return False, RECEIPT_NOT_SEEN


def proxy_seen(events: Iterable[Any]) -> dict[str, Any] | None:
    """What a trace seen only through a proxy holds (its ``run_start`` ``attrs.evidence``
    with level ``proxy``), as the trial evidence's ``seen_through``; None for any other trace."""
    for event in events:
        if not isinstance(event, RunStart):
            continue
        evidence = event.attrs.get("evidence") if isinstance(event.attrs, Mapping) else None
        if not isinstance(evidence, Mapping) or evidence.get("level") != "proxy":
            return None
        return {
            "proxy": str(evidence.get("note") or "the trace was seen only through a proxy"),
            "seen": [str(s) for s in evidence.get("seen") or ()],
            "cannot_support": [str(s) for s in evidence.get("cannot_support") or ()],
        }
    return None
