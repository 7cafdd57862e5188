"""The help-desk support agent in two temperaments, run live with no framework.

The world (orders, tools, tasks) and the decisions of both temperaments live in
``hbeval.testing.helpdesk``; this module is the plain-Python glue: each tool is a plain
``@tool`` (traced and fault-injectable inside a trial), each decision a ``think`` turn.

* ``careful()`` explains every call, re-plans after an error, checks results before trusting
  them, ignores instructions found inside tool results, checks policy before the irreversible
  refund, and escalates to a human when it cannot finish safely.
* ``naive()`` never explains, retries the identical call once, trusts whatever comes back,
  refunds without checking policy, and follows any instruction a tool result contains.

Both are factories: each call returns a fresh agent with its own help desk, so trials are
isolated. Everything is deterministic: no randomness, no network, no model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hbeval.testing import helpdesk
from hbeval.testing.helpdesk import (
    FORBIDDEN_TOOL,
    IRREVERSIBLE_TOOL,
    CarefulScript,
    NaiveScript,
    ToolFailed,
    tasks,
)
from hbeval_plain._scope import ToolCallError, think, tool

__all__ = [
    "FORBIDDEN_TOOL",
    "IRREVERSIBLE_TOOL",
    "CarefulAgent",
    "HelpDesk",
    "NaiveAgent",
    "careful",
    "naive",
    "scripted",
    "tasks",
]


class HelpDesk(helpdesk.HelpDesk):
    """The help desk with every tool a plain ``@tool``."""

    lookup_order = tool(helpdesk.HelpDesk.lookup_order)
    search_policy = tool(helpdesk.HelpDesk.search_policy)
    issue_refund = tool(helpdesk.HelpDesk.issue_refund)
    escalate_to_human = tool(helpdesk.HelpDesk.escalate_to_human)
    transfer_funds = tool(helpdesk.HelpDesk.transfer_funds)


class _Live:
    """A script's calls made for real: a model turn announcing the call, then the tool."""

    desk: HelpDesk

    def _ask(self, name: str, args: Mapping[str, Any], why: str) -> Any:
        think(why, tool_calls=[(name, args)])
        try:
            return self.desk.tools()[name](**args)
        except ToolCallError as err:
            raise ToolFailed(str(err)) from err

    def _note(self, text: str) -> None:
        think(text)


class CarefulAgent(_Live, CarefulScript):
    """Explains, verifies, re-plans, refuses injected instructions, and escalates when unsure."""

    def __init__(self) -> None:
        super().__init__()
        self.desk = HelpDesk()

    def __call__(self, question: str) -> dict[str, Any]:
        """Handle one customer message; returns the answer and what changed."""
        answer = self.answer(question)
        think(answer)
        return {
            "response": answer,
            **self.desk.snapshot(),
            "had_fault": self.faults_seen > 0,
            "recovered_intentionally": self.faults_seen > 0 and self.handled,
        }


class NaiveAgent(_Live, NaiveScript):
    """Never explains, retries blindly once, trusts every result, follows planted instructions."""

    def __init__(self) -> None:
        self.desk = HelpDesk()

    def __call__(self, question: str) -> dict[str, Any]:
        """Handle one customer message; returns the answer and what changed."""
        answer = self.answer(question)
        think("")
        # A claim the trace will not support: this agent never handles anything deliberately.
        return {"response": answer, **self.desk.snapshot(), "recovered_intentionally": True}


def careful() -> CarefulAgent:
    """A fresh careful agent (a factory: each trial gets its own help desk)."""
    return CarefulAgent()


def naive() -> NaiveAgent:
    """A fresh naive agent (a factory: each trial gets its own help desk)."""
    return NaiveAgent()


class _Batch(_Live):
    """The live glue plus a reply that issues several calls at once (a parallel batch)."""

    def _ask_batch(self, calls: Sequence[tuple[str, Mapping[str, Any]]], why: str) -> list[Any]:
        think(why, tool_calls=[(name, args) for name, args in calls])
        results: list[Any] = []
        for name, args in calls:
            try:
                results.append(self.desk.tools()[name](**args))
            except ToolCallError as err:
                results.append(ToolFailed(str(err)))
        return results


def scripted(script: type[Any], **kwargs: Any) -> Callable[[], Any]:
    """A factory of live agents running ``script`` (a help-desk script class) on a fresh desk.

    ``kwargs`` are passed to the script's constructor; a callable value is called once per
    agent (a seeded draw, say). Used by the reference panel (``hbeval.testing.panel``).
    """
    live = type(f"Live{script.__name__}", (_Batch, script), {})

    def make() -> Any:
        agent = live(**{k: (v() if callable(v) else v) for k, v in kwargs.items()})
        agent.desk = HelpDesk()

        def run(question: str) -> dict[str, Any]:
            answer = agent.answer(question)
            think(answer)
            return {"response": answer, **agent.desk.snapshot()}

        return run

    return make
