"""``EDMMemory``: evaluation-driven memory as an AutoGen ``Memory``.

``AssistantAgent(..., memory=[EDMMemory(backing, agent_id="support-bot")])`` gives the agent,
before its first model call of each turn, a ``SystemMessage`` listing precedents recalled for
the conversation, and only those of the same agent id. Which episodes qualify is the backing's
decision (EDM admits only episodes whose scores qualify); this class adds two safety nets of its
own: nothing instruction-like is ever put into the model's context, and nothing
instruction-like is staged through ``add()``.

Admission happens once the conversation is scored: the adapter (or the caller) calls
``admit_episode(episode)``, which forwards the episode (plus the agent id and any notes staged
through ``add()``) to ``backing.admit``.

The backing is anything with two methods (``EpisodeBacking``); the real EDM plugs in there.
Either method may be a coroutine function.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from autogen_core import CancellationToken
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage

from hbeval_core.contract import PRECEDENTS_HEADER, precedents_text
from hbeval_core.contract import EpisodeMemory as ContractMemory

from . import _convert

__all__ = [
    "DEFAULT_HEADER",
    "EDMMemory",
    "EpisodeBacking",
    "looks_like_instruction",
]

DEFAULT_HEADER: Final = PRECEDENTS_HEADER
"""First line of the system message that carries recalled precedents (the one header every
adapter uses, ``hbeval_core.contract.PRECEDENTS_HEADER``)."""

_INSTRUCTION_PATTERNS: Final = (
    r"\bignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier) (?:instructions|messages|rules)",
    r"\bdisregard (?:all |any )?(?:the )?(?:previous|prior|above|earlier|your)\b",
    r"\b(?:system|admin|developer) override\b",
    r"\byou must now\b",
    r"\bnew instructions?\s*:",
    r"\bcall the tool\b",
    r"\bforget (?:everything|all|your instructions)\b",
)
_INSTRUCTION = re.compile("|".join(_INSTRUCTION_PATTERNS), re.IGNORECASE)
_QUERY_CHARS: Final = 4000


def looks_like_instruction(text: str) -> bool:
    """Whether ``text`` reads like an instruction planted for the model (a prompt injection)."""
    return bool(_INSTRUCTION.search(text))


EpisodeBacking = ContractMemory
"""Where ``EDMMemory`` recalls precedents from and admits scored episodes to: the contract's
``Memory`` (``recall(context, agent_id)``, ``admit(episode)``)."""


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class EDMMemory(Memory):
    """An AutoGen ``Memory`` backed by evaluation-driven memory (qualified precedents only).

    Args:
        backing: The store (``EpisodeBacking``): ``recall(context, agent_id)`` and
            ``admit(episode)``.
        agent_id: Whose precedents are recalled and under which id episodes are admitted;
            the same id scopes CSI and EDM isolation in battery runs.
        max_precedents: At most this many precedents enter the context per turn.
        header: First line of the system message carrying the precedents.
    """

    component_type = "memory"

    def __init__(
        self,
        backing: EpisodeBacking,
        *,
        agent_id: str = "default",
        max_precedents: int = 3,
        header: str = DEFAULT_HEADER,
    ) -> None:
        if not callable(getattr(backing, "recall", None)) or not callable(
            getattr(backing, "admit", None)
        ):
            raise TypeError(
                "EDMMemory needs a backing with recall(context, agent_id) and admit(episode) "
                f"methods (got {type(backing).__name__})"
            )
        if max_precedents < 1:
            raise ValueError(f"max_precedents must be >= 1 (got {max_precedents})")
        self.backing = backing
        self.agent_id = agent_id
        self.max_precedents = max_precedents
        self.header = header
        self.staged: list[str] = []
        """Notes ``add()`` accepted; they travel with the next admitted episode."""
        self.rejected: list[str] = []
        """Content ``add()`` or recall refused because it read like an instruction."""
        self.last_decision: Any = None
        """What ``backing.admit`` returned last (EDM's ``AdmissionDecision`` carries reasons)."""

    # -- recall ----------------------------------------------------------------------------------
    async def _recall(self, context: str) -> list[str]:
        found = await _maybe_await(self.backing.recall(context, self.agent_id))
        precedents: list[str] = []
        for item in found or ():
            text = item if isinstance(item, str) else _convert.render(item)
            if not text.strip():
                continue
            if looks_like_instruction(text):
                self.rejected.append(text)
                continue
            precedents.append(text)
            if len(precedents) >= self.max_precedents:
                break
        return precedents

    def _contents(self, precedents: Sequence[str]) -> list[MemoryContent]:
        return [
            MemoryContent(
                content=p, mime_type=MemoryMimeType.TEXT, metadata={"agent_id": self.agent_id}
            )
            for p in precedents
        ]

    def _block(self, precedents: Sequence[str]) -> str:
        return precedents_text(precedents, self.header) or self.header

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add one system message with this agent's qualified precedents for the conversation.

        The query is the conversation's user-side text. A block already in the context (a team
        gives the agent several turns) is not added twice.
        """
        messages = await model_context.get_messages()
        parts = [
            _convert.text_of(getattr(m, "content", ""))
            for m in messages
            if type(m).__name__ == "UserMessage"
        ]
        query = "\n".join(p for p in parts if p)[-_QUERY_CHARS:]
        precedents = await self._recall(query) if query else []
        if not precedents:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        block = self._block(precedents)
        for m in messages:
            if type(m).__name__ == "SystemMessage" and getattr(m, "content", None) == block:
                return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        await model_context.add_message(SystemMessage(content=block))
        return UpdateContextResult(memories=MemoryQueryResult(results=self._contents(precedents)))

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """This agent's qualified precedents for ``query``."""
        text = query if isinstance(query, str) else _convert.render(query.content)
        return MemoryQueryResult(results=self._contents(await self._recall(text)))

    # -- admission -------------------------------------------------------------------------------
    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Stage a note for the next admitted episode; instruction-like content is refused."""
        text = (
            content.content
            if isinstance(content.content, str)
            else _convert.render(content.content)
        )
        if looks_like_instruction(text):
            self.rejected.append(text)
            return
        self.staged.append(text)

    def _episode(
        self, episode: Mapping[str, Any], score: Any, passed: bool | None
    ) -> dict[str, Any]:
        data = dict(episode)
        data["agent_id"] = self.agent_id
        if score is not None:
            data["score"] = score
        if passed is not None:
            data["passed"] = passed
        if self.staged:
            data["notes"] = [*data.get("notes", ()), *self.staged]
        self.staged = []
        return data

    def admit_episode(
        self, episode: Mapping[str, Any], *, score: Any = None, passed: bool | None = None
    ) -> bool:
        """Offer a scored episode to the backing; returns whether it was admitted.

        The episode is sent with this memory's ``agent_id`` (overriding any other), the notes
        staged through ``add()``, and ``score`` / ``passed`` when given. Staged notes are
        dropped once offered, admitted or not.
        """
        admitted = self.backing.admit(self._episode(episode, score, passed))
        self.last_decision = admitted
        if inspect.isawaitable(admitted):
            close = getattr(admitted, "close", None)
            if callable(close):
                close()  # never leave an un-awaited coroutine behind
            raise TypeError(
                "backing.admit returned an awaitable; use await EDMMemory.aadmit_episode(...)"
            )
        return bool(admitted)

    async def aadmit_episode(
        self, episode: Mapping[str, Any], *, score: Any = None, passed: bool | None = None
    ) -> bool:
        """``admit_episode`` for backings whose ``admit`` is a coroutine function."""
        admitted = await _maybe_await(self.backing.admit(self._episode(episode, score, passed)))
        self.last_decision = admitted
        return bool(admitted)

    async def clear(self) -> None:
        """Drop staged notes (the backing's stored episodes are not touched)."""
        self.staged = []

    async def close(self) -> None:
        """Nothing to release."""
