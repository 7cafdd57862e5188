"""A scripted CrewAI model for testing crews under hbeval, offline.

``ScriptedLLM`` is a real ``BaseLLM`` whose reply depends only on how many tool results its input
holds, so one object serves any number of runs. On the ReAct path it writes ``Action:`` /
``Final Answer:`` text; with ``native=True`` it returns native tool calls. Each script turn is
``(words, tool or None, args)``; a turn without a tool is the final answer. Call ids are unique per
model (``tc-<model>-<turn>``, or ``tc-<turn>`` for the model named ``scripted``), as a provider's
are, so a manager and its worker never share one.

Importing this module imports CrewAI: point CrewAI at an offline folder first
(``hbeval_crewai.offline_environment()``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, PrivateAttr

from crewai.llms.base_llm import BaseLLM

__all__ = ["ScriptedLLM", "tool_results_read"]


def tool_results_read(messages: Any) -> int:
    """How many tool results a model input holds, on either path."""
    if isinstance(messages, str):
        return messages.count("\nObservation:")
    count = 0
    for m in messages:
        content = str(m.get("content") or "")
        if m.get("role") == "tool":
            count += 1
        elif m.get("role") == "assistant" and "\nObservation:" in content:
            # One per reply: a result may quote CrewAI's format reminder, which says "Observation:".
            count += 1
    return count


class ScriptedLLM(BaseLLM):
    """A deterministic model: its reply depends only on how many tool results it has read."""

    native: bool = False
    script: list[tuple[str, str | None, dict[str, Any]]] = Field(default_factory=list)
    """``(words, tool or None, args)`` per turn; a turn without a tool is the final answer."""
    _calls: list[Any] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[Any]:
        """The messages of every call, in order."""
        return self._calls

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        self._calls.append(messages if isinstance(messages, str) else list(messages))
        turn = min(tool_results_read(messages), len(self.script) - 1)
        words, tool, args = self.script[turn]
        if tool is None:
            return words if self.native else f"Thought: {words}\nFinal Answer: {words}"
        if self.native:
            return [
                {
                    # Unique per model, as a provider's ids are: a manager and its clerk
                    # both make a first call.
                    "id": f"tc-{turn}" if self.model == "scripted" else f"tc-{self.model}-{turn}",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(args)},
                    "text": words,
                }
            ]
        return f"Thought: {words}\nAction: {tool}\nAction Input: {json.dumps(args)}"

    async def acall(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        """The same reply as ``call``, for CrewAI's native async path (``Crew.akickoff``)."""
        return self.call(
            messages,
            tools=tools,
            callbacks=callbacks,
            available_functions=available_functions,
            from_task=from_task,
            from_agent=from_agent,
            response_model=response_model,
        )

    def supports_function_calling(self) -> bool:
        return self.native

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 32_000

    def get_input_tokens_count(
        self, messages: Any, tools: Any = None, response_model: Any = None
    ) -> int:
        text = (
            messages
            if isinstance(messages, str)
            else " ".join(str(m.get("content")) for m in messages)
        )
        return (len(text) + 3) // 4  # the base class's estimate, without its warning
