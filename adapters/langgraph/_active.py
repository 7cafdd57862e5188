"""What a fault hook reads off the running call: the trial's injector, and our handlers.

Shared by the ToolNode patch (``_faults``) and the ``BaseTool`` hook (``_toolhook``), which
each install the other's fallback, so neither imports the other.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any
from uuid import UUID

from hbeval_core.faults.runtime import FaultInjector

from ._handler import HBEvalCallbackHandler

__all__ = ["ACTIVE_INJECTOR", "handlers_of"]

ACTIVE_INJECTOR: ContextVar[FaultInjector | None] = ContextVar(
    "hbeval_langgraph_injector", default=None
)
"""The injector patched tool nodes consult; set per trial by ``tool_faults``."""


def handlers_of(config: Any) -> tuple[list[HBEvalCallbackHandler], UUID | None]:
    """Our handlers attached to a run's config, and the run id that owns the call (the node)."""
    manager = config.get("callbacks") if isinstance(config, dict) else None
    if manager is None:
        return [], None
    handlers = manager if isinstance(manager, list) else getattr(manager, "handlers", ())
    ours = [h for h in handlers if isinstance(h, HBEvalCallbackHandler)]
    return ours, getattr(manager, "parent_run_id", None)
