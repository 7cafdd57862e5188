"""A ``TrialResult`` rebuilt from a run's captured hb-events, as the runner would have built it.

``EDM.admit_run(events, task)`` scores a run captured outside a battery (``capture()``,
``scope()``, an import): its verifier must read the same ``Outcome`` a battery trial gives,
so the answer and the conversation are rebuilt from the events:

* ``messages``: the run's input (or the first user message a model read) as the user's message, then one assistant message per agent
  turn (the text of the last model reply inside each agent span, named by the agent), or, with
  no agent spans, one per model reply that has text;
* ``response_text`` (``Outcome.final_text``): by the team answer rule of
  ``hbeval_core.contract._answer`` (``answer_from`` honoured) when agents spoke, else the run
  end's output when it is text, else the last model reply's text;
* ``status`` and ``error`` from the run end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hbeval_core.contract import Message, TrialResult
from hbeval_core.contract._answer import answer_of
from hbeval_core.events import (
    EventBase,
    ModelEnd,
    ModelStart,
    RunEnd,
    RunStart,
    SpanStart,
    parse_event,
)
from hbeval_core.vocab import SCOPE_AGENT

__all__ = ["result_from_events"]


def _agent_of(event: EventBase, spans: dict[str, SpanStart]) -> str | None:
    """The name of the agent span ``event`` sits in (through its parents), if any."""
    parent = event.parent_id
    seen: set[str] = set()
    while parent is not None and parent in spans and parent not in seen:
        seen.add(parent)
        span = spans[parent]
        if span.scope == SCOPE_AGENT:
            return span.span_id
        parent = span.parent_id
    return None


def _turns(events: Sequence[EventBase]) -> list[tuple[str, str]]:
    """``(agent, text)`` of each agent turn, in order; model replies when there are no agents."""
    spans = {e.span_id: e for e in events if isinstance(e, SpanStart)}
    by_span: dict[str, str] = {}
    order: list[str] = []
    plain: list[tuple[str, str]] = []
    for event in events:
        if not isinstance(event, ModelEnd) or not (event.text or "").strip():
            continue
        span_id = _agent_of(event, spans)
        if span_id is None:
            plain.append(("assistant", event.text or ""))
            continue
        if span_id not in by_span:
            order.append(span_id)
        by_span[span_id] = event.text or ""
    if not order:
        return plain
    return [(spans[s].name or "assistant", by_span[s]) for s in order]


def _question(start: RunStart | None, events: Sequence[EventBase]) -> str | None:
    """The run's input, or the first user message a model read (a scope has no input)."""
    if start is not None and isinstance(start.input, str) and start.input.strip():
        return start.input
    for event in events:
        if isinstance(event, ModelStart):
            for message in event.messages:
                if message.role == "user" and message.content.strip():
                    return message.content
    return None


def result_from_events(events: Sequence[Any], *, answer_from: str | None = None) -> TrialResult:
    """The ``TrialResult`` of a captured run (events, or their dicts)."""
    parsed = [e if isinstance(e, EventBase) else parse_event(e) for e in events]
    start = next((e for e in parsed if isinstance(e, RunStart)), None)
    end = next((e for e in reversed(parsed) if isinstance(e, RunEnd)), None)
    turns = _turns(parsed)
    messages: list[Message] = []
    question = _question(start, parsed)
    if question:
        messages.append(Message(role="user", content=question, name="user"))
    messages.extend(Message(role="assistant", content=t, name=a) for a, t in turns)
    output = end.output if end is not None and isinstance(end.output, str) else None
    authors = {a for a, _ in turns}
    text: str | None
    if turns and (answer_from is not None or len(authors) > 1 or output is None):
        text = answer_of(turns, answer_from=answer_from)
    elif output is not None:
        text = answer_of([("agent", output)]) if output.strip() else output
    else:
        text = None
    status = end.status if end is not None else "error"
    error = end.error if end is not None else "the events hold no run_end"
    return TrialResult(
        final_state=None,
        events=parsed,
        status=status,
        error=error,
        response_text=text,
        messages=tuple(messages),
    )
