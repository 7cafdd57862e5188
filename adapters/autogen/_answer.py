"""The team's answer a verifier reads (``final_text``), by ``hbeval_core.contract._answer``'s rule.

AutoGen specifics: the agents' messages are the run's chat messages not written by the user
(or the task's ``system`` message); the termination keywords are ``TERMINATE`` and the texts of
the team's ``TextMentionTermination`` conditions (also inside ``|`` and ``&`` combinations); a run
stopped by ``MaxMessageTermination`` (and by no text mention) answers with its last agent message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hbeval_core.contract._answer import TERMINATE, answer_of

__all__ = ["response_text", "termination_keywords"]

_COUNT_STOP = "Maximum number of messages"
_TEXT_STOP = "mentioned"


def termination_keywords(target: Any) -> tuple[str, ...]:
    """The texts a team's termination condition stops on, ``TERMINATE`` first."""
    found: list[str] = [TERMINATE]
    pending = [getattr(target, "_termination_condition", None)]
    while pending:
        condition = pending.pop()
        if condition is None:
            continue
        text = getattr(condition, "_termination_text", None)
        if isinstance(text, str) and text.strip() and text not in found:
            found.append(text)
        pending.extend(getattr(condition, "_conditions", None) or ())
    return tuple(found)


def _agent_messages(messages: Sequence[Any]) -> list[tuple[str, str]]:
    from autogen_agentchat.messages import BaseChatMessage, StopMessage

    out = []
    for message in messages:
        if not isinstance(message, BaseChatMessage) or isinstance(message, StopMessage):
            continue
        source = str(message.source)
        if source in ("user", "system"):
            continue
        out.append((source, message.to_text()))
    return out


def response_text(
    messages: Sequence[Any],
    *,
    answer_from: str | None = None,
    keywords: Sequence[str] = (TERMINATE,),
    stop_reason: str | None = None,
) -> str | None:
    """The final answer of a run's ``messages`` (``TaskResult.messages``).

    The last agent message, unless it only approves or terminates (then the last message of
    another agent); ``answer_from`` names the agent whose last message answers; a run that
    ``MaxMessageTermination`` stopped answers with its last agent message. Termination keywords
    are stripped from the answer; ``None`` when no agent spoke.
    """
    reason = stop_reason or ""
    return answer_of(
        _agent_messages(messages),
        keywords=keywords,
        answer_from=answer_from,
        stopped_on_count=_COUNT_STOP in reason and _TEXT_STOP not in reason,
    )
