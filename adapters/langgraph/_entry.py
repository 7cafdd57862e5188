"""The ``hbeval.adapters`` entry point of the LangGraph adapter (imports no framework)."""

from __future__ import annotations

from hbeval_core.contract import AdapterInfo

ENTRY = AdapterInfo(
    kind="langgraph",
    adapter="hbeval_langgraph:LangGraphAdapter",
    module_prefixes=("langgraph", "langchain", "langchain_core"),
    demo="hbeval_langgraph.examples",
    demo_priority=10,
    extra="langgraph",
)
