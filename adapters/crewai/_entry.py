"""The ``hbeval.adapters`` entry point of the CrewAI adapter (imports no framework)."""

from __future__ import annotations

from hbeval_core.contract import AdapterInfo

ENTRY = AdapterInfo(
    kind="crewai",
    adapter="hbeval_crewai:CrewAIAdapter",
    module_prefixes=("crewai",),
    extra="crewai",
)
