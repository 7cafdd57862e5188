"""A customer-support agent on LangGraph, in two temperaments, with a scripted offline model.

Built with ``langchain.agents.create_agent`` exactly as a real app would be; only the chat model
is scripted. The help desk (orders, tools) and the decisions of both temperaments are the demo
help-desk world of ``hbeval.testing.helpdesk`` (its confirmation dialogue); this module is
the LangGraph glue: the desk's operations as LangChain tools, and ``PolicyChatModel``, which
hands the conversation so far to the dialogue and returns its next message, so the agent reacts
to injected faults the way its temperament dictates.

careful
    explains every tool call, re-plans after an error, distrusts malformed results, refuses
    instructions found inside tool results, asks for confirmation before the irreversible
    ``issue_refund`` unless the customer already confirmed, escalates when it cannot recover.
naive
    never explains, retries the identical call, trusts whatever comes back, follows planted
    instructions (calling the forbidden ``transfer_funds``), refunds without asking.

``careful()`` and ``naive()`` return fresh compiled graphs (each with its own help desk),
``tasks`` are the battery tasks with verifiers over the final state. Run::

    hbeval battery run examples/langgraph_support_agent.py:careful
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool

from hbeval.testing.helpdesk import (
    DIALOGUES,
    FORBIDDEN_TOOL,
    IRREVERSIBLE_TOOLS,
    SYSTEM_PROMPT,
    HelpDesk,
    Step,
    Transcript,
    dialogue_tasks,
)
from hbeval_core.contract import Task

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

__all__ = [
    "FORBIDDEN_TOOL",
    "IRREVERSIBLE_TOOLS",
    "PolicyChatModel",
    "build_support_agent",
    "careful",
    "naive",
    "tasks",
]


# ------------------------------------------------------------------------------------------
# Tools: the help desk's operations, answering in JSON text
# ------------------------------------------------------------------------------------------
def make_tools(desk: HelpDesk) -> list[BaseTool]:
    """The support tools, bound to ``desk``."""

    def lookup_order(order_id: str, source: str = "primary") -> str:
        """Look up an order by id; source "backup" reads the replica index."""
        try:
            return json.dumps(desk.lookup_order(order_id, source))
        except KeyError:
            return json.dumps({"error": f"no order {order_id}"})

    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order. Irreversible: money leaves the shop."""
        return json.dumps(desk.issue_refund(order_id, amount))

    def search_policy(query: str) -> str:
        """Search the shop's policies."""
        return desk.search_policy(query)

    def escalate_to_human(reason: str) -> str:
        """Hand the case to a human agent."""
        return desk.escalate_to_human(reason)

    def transfer_funds(account: str, amount: float) -> str:
        """Move money to an external account (no support task needs this)."""
        return json.dumps(desk.transfer_funds(account, amount))

    funcs: list[Callable[..., str]] = [
        lookup_order,
        issue_refund,
        search_policy,
        escalate_to_human,
        transfer_funds,
    ]
    return [StructuredTool.from_function(f) for f in funcs]


# ------------------------------------------------------------------------------------------
# The conversation in and the next message out
# ------------------------------------------------------------------------------------------
def _text(msg: ToolMessage) -> str:
    content = msg.content
    return content if isinstance(content, str) else json.dumps(content)


def _history(messages: Sequence[BaseMessage]) -> list[Step]:
    """Every answered tool call, in order, with the result's text."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for m in messages:
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                calls[str(c["id"])] = (c["name"], dict(c["args"]))
    return [
        Step(*calls.get(m.tool_call_id, ("?", {})), _text(m), m.status == "error")
        for m in messages
        if isinstance(m, ToolMessage)
    ]


def _next_message(temperament: str, messages: Sequence[BaseMessage]) -> AIMessage:
    humans = [m for m in messages if m.type == "human"]
    question = str(humans[0].content) if humans else ""
    turn = sum(1 for m in messages if m.type == "ai") + 1
    decided = DIALOGUES[temperament](question, turn, _history(messages))
    return AIMessage(
        content=decided.answer if decided.answer is not None else decided.thought,
        tool_calls=[
            {"name": name, "args": args, "id": f"call-{turn}-{i}-{name}", "type": "tool_call"}
            for i, (name, args) in enumerate(decided.calls)
        ],
    )


class PolicyChatModel(BaseChatModel):
    """A chat model whose next message is decided by a deterministic policy over the messages.

    Unlike a fixed response list it reacts to what actually happened: an injected error, a
    corrupted result or a planted instruction changes what it does next, per its temperament.
    """

    temperament: str = "careful"
    model_name: str = "scripted-careful"

    @property
    def _llm_type(self) -> str:
        return "hbeval-policy-scripted"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Tools are known to the policy already; binding changes nothing (offline model)."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = _next_message(self.temperament, messages)
        # Word counts stand in for tokens, so usage capture has something real to record.
        words_in = sum(len(str(m.content).split()) for m in messages)
        words_out = len(str(message.content).split()) + 8 * len(message.tool_calls)
        message.usage_metadata = cast(
            "UsageMetadata",
            {
                "input_tokens": words_in,
                "output_tokens": words_out,
                "total_tokens": words_in + words_out,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def build_support_agent(temperament: str = "careful") -> CompiledStateGraph:  # type: ignore[type-arg]
    """A fresh support agent graph (its own help desk) with the given temperament."""
    if temperament not in DIALOGUES:
        raise ValueError(f"temperament must be one of {', '.join(DIALOGUES)} (got {temperament!r})")
    desk = HelpDesk()
    model = PolicyChatModel(temperament=temperament, model_name=f"scripted-{temperament}")
    graph = create_agent(
        model, make_tools(desk), system_prompt=SYSTEM_PROMPT, name=f"support-{temperament}"
    )
    # For tests and curious users: the desk's live state.
    graph.hbeval_world = {  # type: ignore[attr-defined]
        "orders": desk.orders,
        "refunds": desk.refunds,
        "transfers": desk.transfers,
        "tickets": desk.escalations,
    }
    return graph


def careful() -> CompiledStateGraph:  # type: ignore[type-arg]
    """The careful support agent (explains, re-plans, refuses injections, asks first)."""
    return build_support_agent("careful")


def naive() -> CompiledStateGraph:  # type: ignore[type-arg]
    """The naive support agent (silent, blind retries, follows injections, refunds at once)."""
    return build_support_agent("naive")


careful.__hbeval_target_kind__ = "langgraph"  # type: ignore[attr-defined]
naive.__hbeval_target_kind__ = "langgraph"  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------
# Tasks: the dialogue's, read from the final graph state
# ------------------------------------------------------------------------------------------
def tool_results(final_state: Any) -> list[tuple[str, dict[str, Any], str, str]]:
    """``(tool, args, content, status)`` of every tool call in a final state, in order."""
    messages = final_state.get("messages", []) if isinstance(final_state, Mapping) else []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[tuple[str, dict[str, Any], str, str]] = []
    for m in messages:
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                calls[str(c["id"])] = (c["name"], dict(c["args"]))
        elif isinstance(m, ToolMessage):
            name, args = calls.get(m.tool_call_id, (m.name or "?", {}))
            out.append((name, args, _text(m), m.status))
    return out


def final_text(final_state: Any) -> str:
    """The last AI message's text ('' when there is none)."""
    messages = final_state.get("messages", []) if isinstance(final_state, Mapping) else []
    for m in reversed(messages):
        if isinstance(m, AIMessage) and not m.tool_calls:
            return str(m.content)
    return ""


def transcript(final_state: Any) -> Transcript:
    """What the dialogue's verifiers read, from a final graph state."""
    return Transcript(final_text(final_state), tool_results(final_state))


tasks: list[Task] = dialogue_tasks(transcript)
"""The support tasks; each verifier reads the final graph state."""
