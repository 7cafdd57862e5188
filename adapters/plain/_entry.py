"""The ``hbeval.adapters`` entry point of the plain-callable adapter (always installed)."""

from __future__ import annotations

from hbeval_core.contract import AdapterInfo

ENTRY = AdapterInfo(
    kind="plain",
    adapter="hbeval_plain._adapter:PlainAdapter",
    demo="hbeval_plain.examples",
    demo_priority=-1,
)
