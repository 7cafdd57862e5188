"""A LangGraph customer-support agent in two temperaments, scripted to run offline.

The agents live in the installed package (``hbeval_langgraph.examples``) so ``hbeval demo`` works
from any folder; this file re-exports them so you can point the CLI at it::

    hbeval battery run examples/langgraph_support_agent.py:careful
    hbeval battery run examples/langgraph_support_agent.py:naive

``careful`` and ``naive`` are factories: each call returns a fresh compiled graph, so every trial
gets its own agent. ``tasks`` sits beside them, where the CLI looks for it by default.
Run this file to see one conversation of each.
"""

from __future__ import annotations

from hbeval_langgraph.examples import (
    FORBIDDEN_TOOL,
    PolicyChatModel,
    build_support_agent,
    careful,
    naive,
    tasks,
)

__all__ = ["FORBIDDEN_TOOL", "PolicyChatModel", "build_support_agent", "careful", "naive", "tasks"]


if __name__ == "__main__":
    from langchain_core.messages import HumanMessage

    from hbeval_langgraph import HBEvalCallbackHandler

    for factory in (careful, naive):
        handler = HBEvalCallbackHandler()
        task = tasks[1]
        state = factory().invoke(
            {"messages": [HumanMessage(task.question)]}, config={"callbacks": [handler]}
        )
        print(f"--- {factory.__name__}: {task.question}")
        for message in state["messages"][1:]:
            calls = ", ".join(c["name"] for c in getattr(message, "tool_calls", []) or [])
            print(
                f"{message.type:>5}: {str(message.content)[:100]!s}"
                + (f"  -> {calls}" if calls else "")
            )
        print(
            "verified:",
            task.verify(state, handler.events),
            "| live metrics:",
            handler.monitor.metrics,
        )
