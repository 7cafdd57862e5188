"""The ``hbeval.adapters`` entry point of the AutoGen adapter (imports no framework)."""

from __future__ import annotations

from hbeval_core.contract import AdapterInfo

ENTRY = AdapterInfo(
    kind="autogen",
    adapter="hbeval_autogen:AutoGenAdapter",
    module_prefixes=("autogen_agentchat", "autogen_core", "autogen_ext", "autogen"),
    extra="autogen",
)
