"""The opt-in route for ``create_agent`` users: fault injection as agent middleware.

``create_agent(model, tools, middleware=[HBEvalFaultMiddleware(injector)])`` injects faults
through LangChain's public ``wrap_tool_call`` API instead of patching the compiled ToolNode.
It behaves exactly like the battery's patch (same receipts, same error ToolMessages) and honours
an enforced Safe Halt at every tool boundary. Do not combine it with a battery run on the same
graph: both would inject.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from hbeval_core.faults.runtime import FaultInjector

from ._faults import arun_tool_call, run_tool_call

__all__ = ["HBEvalFaultMiddleware"]


class HBEvalFaultMiddleware(AgentMiddleware):
    """Agent middleware that routes every tool call through a ``FaultInjector``.

    With ``injector=None`` it uses the injector of the current battery trial, if any, so one
    agent definition serves both plain runs (no faults) and battery runs.
    """

    def __init__(self, injector: FaultInjector | None = None) -> None:
        super().__init__()
        self.injector = injector

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Inject the planned fault (if any) into this tool call."""
        return run_tool_call(request, handler, self.injector)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async twin of ``wrap_tool_call``."""
        return await arun_tool_call(request, handler, self.injector)
