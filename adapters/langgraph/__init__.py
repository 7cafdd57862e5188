"""hbeval for LangGraph: drop-in capture, live metrics, fault injection and battery runs.

Capture an existing graph with one callback::

    from hbeval_langgraph import HBEvalCallbackHandler

    handler = HBEvalCallbackHandler()
    graph.invoke({"messages": [("user", "Where is order A1?")]}, config={"callbacks": [handler]})
    print(handler.monitor.metrics)

or with no change to user code: ``instrument()`` / ``uninstrument()``, ``capture()`` for a block.
Battery runs use ``LangGraphAdapter`` (``hbeval battery run app.py:graph``).

Importing this package is cheap: LangChain and LangGraph load only when one of these names is
first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

from ._version import SUPPORTED, SUPPORTED_VERSIONS, UnsupportedVersionError, check_supported

# name -> module that defines it; resolved on first attribute access.
_EXPORTS: dict[str, str] = {
    "HBEvalCallbackHandler": "hbeval_langgraph._handler",
    "LangGraphRecorder": "hbeval_langgraph._handler",
    "instrument": "hbeval_langgraph._hook",
    "uninstrument": "hbeval_langgraph._hook",
    "is_instrumented": "hbeval_langgraph._hook",
    "capture": "hbeval_langgraph._hook",
    "current_handler": "hbeval_langgraph._hook",
    "current_recorder": "hbeval_langgraph._hook",
    "LangGraphAdapter": "hbeval_langgraph._adapter",
    "is_langgraph_target": "hbeval_langgraph._adapter",
    "resolve_graph": "hbeval_langgraph._adapter",
    "tool_faults": "hbeval_langgraph._faults",
    "node_faults": "hbeval_langgraph._faults",
    "wrap_node": "hbeval_langgraph._faults",
    "find_tool_nodes": "hbeval_langgraph._faults",
    "NodeFaultError": "hbeval_langgraph._faults",
    "HBEvalFaultMiddleware": "hbeval_langgraph._middleware",
}
_ALIASES = {"wrap_node": "node_faults", "LangGraphRecorder": "HBEvalCallbackHandler"}

__all__ = [
    "SUPPORTED",
    "SUPPORTED_VERSIONS",
    "HBEvalCallbackHandler",
    "HBEvalFaultMiddleware",
    "LangGraphAdapter",
    "LangGraphRecorder",
    "NodeFaultError",
    "UnsupportedVersionError",
    "capture",
    "check_supported",
    "current_handler",
    "current_recorder",
    "find_tool_nodes",
    "instrument",
    "is_instrumented",
    "is_langgraph_target",
    "node_faults",
    "resolve_graph",
    "tool_faults",
    "uninstrument",
    "wrap_node",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__, _ALIASES)


if TYPE_CHECKING:
    from ._adapter import LangGraphAdapter, is_langgraph_target, resolve_graph
    from ._faults import NodeFaultError, find_tool_nodes, node_faults, tool_faults
    from ._faults import node_faults as wrap_node
    from ._handler import HBEvalCallbackHandler
    from ._handler import HBEvalCallbackHandler as LangGraphRecorder
    from ._hook import (
        capture,
        current_handler,
        current_recorder,
        instrument,
        is_instrumented,
        uninstrument,
    )
    from ._middleware import HBEvalFaultMiddleware
