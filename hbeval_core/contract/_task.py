"""A battery task: a question, a verifier and the tool rules that go with it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExpectedCall", "Task", "Verifier"]

Verifier = Callable[[Any, Sequence[Any]], bool]
"""``verify(outcome, trace) -> bool``; trace is the run's list of events. ``contract.Outcome`` says
whether ``outcome`` is an ``Outcome`` or the framework's own final state."""


@dataclass(frozen=True)
class ExpectedCall:
    """One tool call a task expects, for trajectory checks."""

    tool: str
    args: dict[str, Any] | None = None


@dataclass(frozen=True)
class Task:
    """A unit of work an agent attempts in every scenario that selects it.

    ``verify`` decides pass or fail from the final state and the trace. Without one, the
    reference's rule applies: the response must contain ``required`` keywords (coverage >= 0.8).
    """

    id: str
    question: str
    category: str | None = None
    verify: Verifier | None = None
    forbidden_tools: tuple[str, ...] = ()
    irreversible_tools: tuple[str, ...] = ()
    expected_calls: tuple[ExpectedCall, ...] | None = None
    required: tuple[str, ...] = ()
    system: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    resume: tuple[Any, ...] = ()
    """Values for a graph that pauses (LangGraph ``interrupt()``): the trial resumes the n-th
    pause with ``Command(resume=resume[n])``; all invocations make one trial."""
    answer_from: str | None = None
    """The agent whose last message is the final answer a verifier reads (``final_text``), for
    a team whose default rule (the last message not only approving or terminating) is not it."""
    tools: tuple[str, ...] | None = None
    """The tools the task calls, when declared: a fault scenario whose tools none of its tasks
    calls is refused before the run. None: not declared (nothing is checked)."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError("task field 'id' must be a non-empty string")
        if not isinstance(self.question, str) or not self.question.strip():
            raise ValueError(f"task {self.id!r}: field 'question' must be a non-empty string")
        if self.verify is not None and not callable(self.verify):
            raise ValueError(f"task {self.id!r}: field 'verify' must be callable(outcome, trace)")
        if self.tools is not None and (
            isinstance(self.tools, str)
            or not all(isinstance(t, str) and t.strip() for t in self.tools)
        ):
            raise ValueError(
                f"task {self.id!r}: field 'tools' must be a list of tool names, e.g. "
                f"['lookup_order'] (got {self.tools!r})"
            )
        if self.answer_from is not None and (
            not isinstance(self.answer_from, str) or not self.answer_from.strip()
        ):
            raise ValueError(
                f"task {self.id!r}: field 'answer_from' must be an agent's name or omitted"
            )
