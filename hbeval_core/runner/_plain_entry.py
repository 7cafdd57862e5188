"""The ``hbeval.adapters`` entry point of the plain-callable adapter that ships in the core."""

from __future__ import annotations

from ..contract import AdapterInfo

ENTRY = AdapterInfo(
    kind="plain",
    adapter="hbeval_core.runner.plain:PlainAdapter",
    demo="hbeval_core.examples.plain_agent",
    demo_priority=-1,
)
