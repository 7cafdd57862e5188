"""Scripted chat models for testing LangGraph agents under hbeval, offline.

``ScriptedChatModel`` replies from a fixed list and emits real tool calls, so a ``create_agent``
graph, a ``ToolNode`` or a hand-built node runs for real while only the model is scripted. The
reply is chosen by how many AI messages the input already holds (not by a shared counter), so one
model serves concurrent and batched runs deterministically. ``tool_call`` builds one call.

In a battery trial that plants model faults (``hbeval_core.faults.scripted``) it answers as
``ChatOpenAI`` does after meeting each: it raises the exception ``ChatOpenAI`` raises (the
``openai`` SDK's, as langchain-openai classifies it: ``OpenAIRateLimitError`` with
``Retry-After``, ``OpenAIAPIError`` for a 5xx, ``OpenAIContextOverflowError``,
``OpenAIConnectionError``), returns an empty ``AIMessage`` for an empty completion, and for a
malformed tool call moves each call whose arguments are not JSON to ``invalid_tool_calls``, the
way ``ChatOpenAI`` parses them.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call
from langchain_core.outputs import ChatGeneration, ChatResult

from hbeval_core.faults.scripted import PlantedModelFault, planted_model_fault
from hbeval_core.vocab import EMPTY_COMPLETION

__all__ = ["ScriptedChatModel", "tool_call"]


class ScriptedChatModel(FakeMessagesListChatModel):
    """A fixed list of replies; ``bind_tools`` is a no-op so agents accept it."""

    model_name: str = "scripted"
    """The model a fault plan's ``target`` matches."""

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
        reply = self.responses[min(turn, len(self.responses) - 1)].model_copy()
        asked = [(m.type, m.content, getattr(m, "tool_calls", None)) for m in messages]
        calls = bool(getattr(reply, "tool_calls", None))
        planted = planted_model_fault(self.model_name, asked, tool_call=calls)
        if planted is not None:
            if planted.raises:
                raise _provider_error(planted.error())
            reply = _faulted(reply, planted)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _provider_error(error: Exception) -> Exception:
    """``error`` as ``ChatOpenAI`` re-raises it (langchain-openai's own classes, such as
    ``OpenAIRateLimitError``), or as it is without langchain-openai."""
    try:
        from langchain_openai.chat_models import base
    except ImportError:
        return error
    import openai

    handlers = [getattr(base, "_handle_openai_api_error", None)]
    if isinstance(error, openai.BadRequestError):
        handlers.insert(0, getattr(base, "_handle_openai_bad_request", None))
    for handle in handlers:
        if handle is None:
            continue
        try:
            handle(error)
        except Exception as raised:  # the class ChatOpenAI raises in its place
            return raised
    return error


def _faulted(reply: BaseMessage, planted: PlantedModelFault) -> BaseMessage:
    """The reply as ``ChatOpenAI`` builds it from the faulted answer."""
    if planted.mode == EMPTY_COMPLETION:
        return AIMessage(content="")
    assert planted.spoil is not None and isinstance(reply, AIMessage)
    valid: list[Any] = []
    invalid: list[Any] = []
    for call in reply.tool_calls:
        raw = {
            "id": call["id"],
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": planted.spoil(json.dumps(call["args"])),
            },
        }
        try:
            valid.append(parse_tool_call(raw, return_id=True))
        except Exception as exc:  # what ChatOpenAI catches
            invalid.append(make_invalid_tool_call(raw, str(exc)))
    return reply.model_copy(update={"tool_calls": valid, "invalid_tool_calls": invalid})


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """One tool call as a chat model's ``AIMessage.tool_calls`` holds it."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}
