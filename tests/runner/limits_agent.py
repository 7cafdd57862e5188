"""LangGraph support agents whose scripted model answers HTTP 429 the way openai's client does.

The graph is the packaged careful support agent (``langchain.agents.create_agent``, real
LangGraph); only its chat model is scripted: ``PolicyChatModel`` (word counts as token usage)
that waits ``DELAY`` seconds per call like a remote model, and, on the first call of the first
attempt of the trials in ``LIMITED``, raises a real ``openai.RateLimitError`` built on a real
``httpx.Response`` carrying ``Retry-After``. Imported by reference on Ray workers, so the
script is fixed per factory (no state travels between processes).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

try:
    import openai
except ImportError:  # pragma: no cover - openai ships with the dev environment
    openai = None  # type: ignore[assignment]
from langchain.agents import create_agent
from pydantic import PrivateAttr

from hbeval.testing.helpdesk import SYSTEM_PROMPT, HelpDesk
from hbeval_core.contract import current_trial
from hbeval_langgraph.examples import PolicyChatModel, make_tools, tasks

__all__ = [
    "DELAY",
    "LIMITED",
    "RETRY_AFTER",
    "careful",
    "careful_429",
    "careful_429_long",
    "rate_limit_error",
    "tasks",
]

DELAY = 0.05
"""Seconds each model call takes."""
LIMITED = frozenset({"s000-t0", "s002-t1"})
"""Trials whose first attempt's first model call is refused with a 429."""
RETRY_AFTER = 2.0
"""Seconds the 429 asks to wait (``Retry-After``)."""


def rate_limit_error(retry_after: str) -> Exception:
    """What openai's client raises on an HTTP 429 (a real response with its headers); httpx's
    ``HTTPStatusError`` for the same response when openai is not installed."""
    request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = httpx.Response(
        429,
        headers={"retry-after": retry_after, "content-type": "application/json"},
        json={"error": {"message": "Rate limit reached", "type": "requests"}},
        request=request,
    )
    if openai is None:
        return httpx.HTTPStatusError("429 Too Many Requests", request=request, response=response)
    return openai.RateLimitError("Rate limit reached", response=response, body=None)


class LimitedModel(PolicyChatModel):
    """The scripted policy model: slow like a remote one, and refusing the listed trials once."""

    limited: frozenset[str] = frozenset()
    retry_after: str = "0"
    _called: bool = PrivateAttr(default=False)
    """Whether this model answered a call yet (each attempt builds a fresh agent and model)."""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        ctx = current_trial()
        first, self._called = not self._called, True
        if first and ctx is not None and ctx.attempt == 0 and ctx.trial_key in self.limited:
            raise rate_limit_error(self.retry_after)
        time.sleep(DELAY)
        return super()._generate(messages, stop, run_manager, **kw)


def _agent(limited: frozenset[str], retry_after: str) -> Any:
    model = LimitedModel(
        temperament="careful",
        model_name="scripted-careful",
        limited=limited,
        retry_after=retry_after,
    )
    return create_agent(
        model, make_tools(HelpDesk()), system_prompt=SYSTEM_PROMPT, name="support-careful"
    )


def careful() -> Any:
    """The agent with no 429s (the reference run)."""
    return _agent(frozenset(), "0")


def careful_429() -> Any:
    """The agent whose ``LIMITED`` trials get a 429 asking for ``RETRY_AFTER`` seconds."""
    return _agent(LIMITED, f"{RETRY_AFTER:g}")


def careful_429_long() -> Any:
    """The agent whose ``LIMITED`` trials get a 429 asking for an hour (over the cap)."""
    return _agent(LIMITED, "3600")


careful.__hbeval_target_kind__ = "langgraph"  # type: ignore[attr-defined]
careful_429.__hbeval_target_kind__ = "langgraph"  # type: ignore[attr-defined]
careful_429_long.__hbeval_target_kind__ = "langgraph"  # type: ignore[attr-defined]
