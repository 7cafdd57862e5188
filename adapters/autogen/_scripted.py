"""``ScriptedChatCompletionClient``: an offline model whose next reply is a function of its input.

AutoGen's ``ReplayChatCompletionClient`` replays a fixed list, so it cannot react to an injected
fault. This client calls a *policy* with the messages it receives and returns whatever the
policy decides, so a scripted agent can re-plan after an error, refuse an injected instruction,
or (a naive policy) retry blindly. Deterministic: same messages, same reply.

A policy returns one of:

* a ``str``: the final text answer (``finish_reason="stop"``);
* a ``Reply``: text and/or tool calls, with an optional ``thought`` (AutoGen's reasoning field);
* a ``CreateResult``: used as is.

In a battery trial that plants model faults (``hbeval_core.faults.scripted``) the client answers
as ``OpenAIChatCompletionClient`` does after meeting each: it raises the ``openai`` SDK's
exception (``RateLimitError`` with ``Retry-After``, ``InternalServerError``,
``BadRequestError``, ``APIConnectionError``), returns an empty text for an empty completion,
and hands over each tool call's arguments spoiled for a malformed tool call.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from hbeval_core.faults.scripted import PlantedModelFault, planted_model_fault
from hbeval_core.vocab import EMPTY_COMPLETION

from . import _convert

__all__ = ["FUNCTION_CALLING_MODEL_INFO", "Policy", "Reply", "ScriptedChatCompletionClient"]

FUNCTION_CALLING_MODEL_INFO: Final[ModelInfo] = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
)
"""Model info AssistantAgent accepts with ``tools=[...]`` (function calling enabled)."""


@dataclass(frozen=True)
class Reply:
    """What a scripted model says next: tool calls (name, args) and/or text, and a thought."""

    text: str | None = None
    calls: Sequence[tuple[str, Mapping[str, Any]]] = field(default_factory=tuple)
    thought: str | None = None


Policy = Callable[[Sequence[LLMMessage], Sequence[str]], "str | Reply | CreateResult"]
"""``policy(messages, tool_names) -> str | Reply | CreateResult``."""


def _tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        return str(tool.get("name", ""))
    return str(getattr(tool, "name", ""))


def _faulted(result: CreateResult, planted: PlantedModelFault) -> CreateResult:
    """The result as ``OpenAIChatCompletionClient`` builds it from the faulted answer."""
    if planted.mode == EMPTY_COMPLETION:
        return result.model_copy(update={"content": "", "finish_reason": "stop", "thought": None})
    assert planted.spoil is not None and isinstance(result.content, list)
    spoil = planted.spoil
    calls = [dataclasses.replace(c, arguments=spoil(c.arguments)) for c in result.content]
    return result.model_copy(update={"content": calls})


class ScriptedChatCompletionClient(ChatCompletionClient):
    """A deterministic offline ``ChatCompletionClient`` driven by a policy function.

    Tool-call ids are ``"<prefix>-<n>"`` counted per client, so they are unique within a run as
    long as each agent has its own client (or its own ``call_prefix``). ``create_calls`` keeps
    every call's messages and tool names, as ``ReplayChatCompletionClient`` does.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        model_info: ModelInfo | None = None,
        call_prefix: str = "call",
        model: str = "scripted",
    ) -> None:
        self.policy = policy
        self.model = model
        """The model a fault plan's ``target`` matches."""
        self._model_info: ModelInfo = model_info or FUNCTION_CALLING_MODEL_INFO
        self.call_prefix = call_prefix
        self.create_calls: list[dict[str, Any]] = []
        self._calls = 0
        self._last = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def _result(self, messages: Sequence[LLMMessage], tools: Sequence[Any]) -> CreateResult:
        names = [_tool_name(t) for t in tools]
        self.create_calls.append({"messages": list(messages), "tools": names})
        decided = self.policy(messages, names)
        prompt = sum(len(_convert.text_of(getattr(m, "content", "")).split()) for m in messages)
        if isinstance(decided, CreateResult):
            result = decided
        else:
            reply = Reply(text=decided) if isinstance(decided, str) else decided
            content: str | list[FunctionCall]
            if reply.calls:
                content = calls = []
                for name, args in reply.calls:
                    self._calls += 1
                    calls.append(
                        FunctionCall(
                            id=f"{self.call_prefix}-{self._calls}",
                            name=name,
                            arguments=json.dumps(dict(args), sort_keys=True),
                        )
                    )
                reason = "function_calls"
            else:
                content = reply.text or ""
                reason = "stop"
            completion = len(_convert.text_of(content).split()) + len((reply.thought or "").split())
            result = CreateResult(
                finish_reason=reason,  # type: ignore[arg-type]
                content=content,
                usage=RequestUsage(prompt_tokens=prompt, completion_tokens=completion),
                cached=False,
                thought=reply.thought,
            )
        asked = [(type(m).__name__, _convert.text_of(getattr(m, "content", ""))) for m in messages]
        has_calls = isinstance(result.content, list) and bool(result.content)
        planted = planted_model_fault(self.model, asked, tool_call=has_calls)
        if planted is not None:
            if planted.raises:
                raise planted.error()
            result = _faulted(result, planted)
        self._last = result.usage
        self._total = RequestUsage(
            prompt_tokens=self._total.prompt_tokens + result.usage.prompt_tokens,
            completion_tokens=self._total.completion_tokens + result.usage.completion_tokens,
        )
        return result

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Any = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        """The policy's reply to ``messages`` (tools are offered only as names)."""
        return self._result(messages, [] if tool_choice == "none" else tools)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Any = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        """The same reply as ``create``: its text as one chunk, then the ``CreateResult``."""
        result = self._result(messages, [] if tool_choice == "none" else tools)
        if isinstance(result.content, str) and result.content:
            yield result.content
        yield result

    async def close(self) -> None:
        """Nothing to release."""

    def actual_usage(self) -> RequestUsage:
        """Usage of the last call (words, as a stand-in for tokens)."""
        return self._last

    def total_usage(self) -> RequestUsage:
        """Usage of every call so far."""
        return self._total

    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []
    ) -> int:
        """Words in ``messages`` (a stand-in for tokens)."""
        return sum(len(_convert.text_of(getattr(m, "content", "")).split()) for m in messages)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []
    ) -> int:
        """A large constant: a scripted model has no context limit."""
        return 1_000_000

    @property
    def capabilities(self) -> ModelCapabilities:
        """Deprecated AutoGen alias of ``model_info``."""
        return self._model_info

    @property
    def model_info(self) -> ModelInfo:
        """Function calling on, everything else off."""
        return self._model_info
