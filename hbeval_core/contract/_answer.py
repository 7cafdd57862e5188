"""The final answer of a multi-agent conversation: what a verifier reads as ``final_text``.

The rule (the same for an adapter that reads a team's messages and for a run rebuilt from its
events):

1. ``answer_from`` (a task's override) names the agent: its last message is the answer.
2. When the run stopped on a message count (AutoGen ``MaxMessageTermination``), the answer is
   the last agent message.
3. Otherwise the last agent message is the answer, unless it only approves or terminates: it
   holds nothing but termination keywords and approval words (``APPROVE``, ``LGTM``...), or it
   carries an approval keyword and an agent other than its author spoke before it (a reviewer
   that approves). Then the answer is the last message from an agent other than that author.

Termination keywords (``TERMINATE`` and the team's own, such as ``TextMentionTermination``'s
text) are stripped from the answer when it carries them. The conversation itself is never
edited: ``Outcome.messages`` keeps every message whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ["APPROVAL_WORDS", "TERMINATE", "answer_of"]

TERMINATE: Final = "TERMINATE"
APPROVAL_WORDS: Final = ("APPROVE", "APPROVED", "LGTM")
"""Words by which a reviewer approves; a message of only these (and keywords) only approves."""


def _words(keywords: Iterable[str]) -> list[str]:
    return sorted({k.strip() for k in keywords if k and k.strip()}, key=len, reverse=True)


def _remove(text: str, words: Sequence[str], *, case: bool) -> str:
    for word in words:
        flags = 0 if case else re.IGNORECASE
        text = re.sub(rf"(?<!\w){re.escape(word)}(?!\w)", " ", text, flags=flags)
    return text


def strip_keywords(text: str, keywords: Iterable[str]) -> str:
    """``text`` without the termination keywords it carries (whole words), tidied."""
    words = _words(keywords)
    if not any(w in text for w in words):
        return text.strip()
    out = _remove(text, words, case=True)
    lines = [re.sub(r"[ \t]{2,}", " ", line).rstrip() for line in out.splitlines()]
    return "\n".join(lines).strip()


def only_approves(text: str, keywords: Iterable[str]) -> bool:
    """Whether ``text`` holds nothing but termination keywords, approval words and punctuation."""
    rest = _remove(text, _words([*keywords, *APPROVAL_WORDS]), case=False)
    return not re.search(r"\w", rest)


def carries_approval(text: str, keywords: Iterable[str]) -> bool:
    """Whether ``text`` carries an approval word (or a team keyword that is one)."""
    approvals = [k for k in _words(keywords) if k.upper() != TERMINATE]
    approvals += list(APPROVAL_WORDS)
    return any(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text) for w in approvals)


def answer_of(
    messages: Sequence[tuple[str, str]],
    *,
    keywords: Iterable[str] = (TERMINATE,),
    answer_from: str | None = None,
    stopped_on_count: bool = False,
) -> str | None:
    """The final answer among ``messages`` (``(author, text)`` of the agents' messages, in order;
    the user's excluded). ``None`` when there is no agent message (or none from ``answer_from``).
    """
    words = [TERMINATE, *keywords]
    if answer_from is not None:
        for author, text in reversed(messages):
            if author == answer_from:
                return strip_keywords(text, words)
        return None
    if not messages:
        return None
    last_author, last_text = messages[-1]
    if stopped_on_count:
        return strip_keywords(last_text, words)
    others = [(a, t) for a, t in messages[:-1] if a != last_author and not only_approves(t, words)]
    approves = only_approves(last_text, words) or (
        bool(others) and carries_approval(last_text, words)
    )
    if approves and others:
        return strip_keywords(others[-1][1], words)
    if approves and only_approves(last_text, words):
        # One agent only: its earlier substantive message, else the bare stop word is no answer.
        for _, text in reversed(messages[:-1]):
            if not only_approves(text, words):
                return strip_keywords(text, words)
        return ""
    return strip_keywords(last_text, words)
