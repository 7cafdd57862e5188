"""hbeval for plain Python agents: ``agent(question) -> str | dict``, no framework.

A plain agent opts in with small helpers, each a no-op outside a trial or capture::

    from hbeval_plain import think, tool

    @tool
    def lookup_order(order_id: str) -> dict: ...

    def agent(question: str) -> str:
        think("Looking the order up first.", [("lookup_order", {"order_id": "A1"})])
        return str(lookup_order("A1"))

``@tool`` traces a tool and lets the battery fault it (the same decorator as
``hbeval_core.faults.faultable``); ``think`` records a model turn and the calls it decides on;
``model_input`` what the agent read; ``precedents()`` what memory recalled for the trial.
Battery runs use ``PlainAdapter`` (``hbeval battery run agent.py:make_agent``); capture outside
one with ``capture()`` for a block or ``instrument()`` / ``uninstrument()`` for the process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

from ._version import SUPPORTED, UnsupportedVersionError, check_supported

_EXPORTS: dict[str, str] = {
    "PlainAdapter": "hbeval_plain._adapter",
    "is_plain_target": "hbeval_plain._adapter",
    "PlainRecorder": "hbeval_plain._scope",
    "TrialScope": "hbeval_plain._scope",
    "ToolCallError": "hbeval_plain._scope",
    "claim": "hbeval_plain._scope",
    "current_scope": "hbeval_plain._scope",
    "model_input": "hbeval_plain._scope",
    "precedents": "hbeval_plain._scope",
    "replan": "hbeval_plain._scope",
    "think": "hbeval_plain._scope",
    "tool": "hbeval_plain._scope",
    "capture": "hbeval_plain._hook",
    "current_recorder": "hbeval_plain._hook",
    "instrument": "hbeval_plain._hook",
    "is_instrumented": "hbeval_plain._hook",
    "uninstrument": "hbeval_plain._hook",
}
_ALIASES = {"PlainRecorder": "TrialScope"}

__all__ = [
    "SUPPORTED",
    "PlainAdapter",
    "PlainRecorder",
    "ToolCallError",
    "TrialScope",
    "UnsupportedVersionError",
    "capture",
    "check_supported",
    "claim",
    "current_recorder",
    "current_scope",
    "instrument",
    "is_instrumented",
    "is_plain_target",
    "model_input",
    "precedents",
    "replan",
    "think",
    "tool",
    "uninstrument",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__, _ALIASES)


if TYPE_CHECKING:
    from ._adapter import PlainAdapter, is_plain_target
    from ._hook import capture, current_recorder, instrument, is_instrumented, uninstrument
    from ._scope import (
        ToolCallError,
        TrialScope,
        claim,
        current_scope,
        model_input,
        precedents,
        replan,
        think,
        tool,
    )
    from ._scope import TrialScope as PlainRecorder
