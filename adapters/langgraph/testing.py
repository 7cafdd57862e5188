"""Scripted chat models for testing LangGraph agents under hbeval, offline.

``ScriptedChatModel`` replies from a fixed list and emits real tool calls, so a ``create_agent``
graph, a ``ToolNode`` or a hand-built node runs for real while only the model is scripted. The
reply is chosen by how many AI messages the input already holds (not by a shared counter), so one
model serves concurrent and batched runs deterministically. ``tool_call`` builds one call.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["ScriptedChatModel", "tool_call"]


class ScriptedChatModel(FakeMessagesListChatModel):
    """A fixed list of replies; ``bind_tools`` is a no-op so agents accept it."""

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: Any = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = sum(1 for m in messages if m.type == "ai")
        reply = self.responses[min(turn, len(self.responses) - 1)]
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy())])


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """One tool call as a chat model's ``AIMessage.tool_calls`` holds it."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}
