"""The contract between hbeval and a framework adapter, with no dependency on the runner.

An adapter (``hbeval_langgraph``, ``hbeval_crewai``, ``hbeval_autogen`` or a third party's)
imports only this package to take part in a battery run:

- ``Adapter`` (the protocol the runner calls) and ``TrialResult`` (what one trial produced);
- ``Task`` and ``ExpectedCall`` (the work), ``Outcome`` / ``Message`` / ``ToolCall`` (what a
  verifier reads, the same on every framework) and ``outcome_of``;
- trace helpers for verifiers: ``completed_calls``, ``tool_started``, ``response_text``;
- ``TrialContext`` / ``current_trial()`` (the trial in progress: ids, fault injector, clock,
  budgets, cancellation) and the exceptions that stop a trial on purpose (``TrialStop``,
  ``BudgetExceeded``, ``TrialCancelled``) or blame the environment (``InfraError``);
- ``AdapterInfo``, what an adapter's ``hbeval.adapters`` entry point names;
- ``EpisodeMemory``, the recall/admit protocol every memory implements, and how adapters
  recall from one (``recall_precedents``, ``precedents_text``, ``precedent_lookup``);
- clocks: ``Clock``, ``AsyncClock``, ``SystemClock``, ``FakeClock`` and ``VirtualClock``;
- rate limits: ``rate_limit_delay`` (is this exception an HTTP 429, and how long does it ask to
  wait), ``note_rate_limit`` (tell the runner), ``RateLimiter`` (the run's shared limiter) and
  ``RateLimitTooLong``;
- how a run ended, decided once from the exception that stopped it: ``run_status_of``,
  ``ended_by`` / ``Ended``, ``describe_error``, ``is_infra_error``.

Everything here is light (standard library and ``hbeval_core.vocab``), so importing the contract
costs an adapter nothing.
"""

from __future__ import annotations

from typing import Any

from ._adapter import Adapter, TrialResult, token_usage, trace_kinds
from ._checks import completed_calls, response_text, tool_started
from ._clock import AsyncClock, Clock, FakeClock, SystemClock, VirtualClock
from ._entry import ENTRY_POINT_GROUP, AdapterInfo
from ._memory import (
    ATTR_MEMORY_RECALL,
    PRECEDENTS_HEADER,
    EpisodeMemory,
    Recall,
    precedent_lookup,
    precedents_text,
    recall_precedents,
)
from ._outcome import (
    Message,
    Outcome,
    ToolCall,
    outcome_of,
    tool_calls_of,
    verifier_input,
    wants_outcome,
)
from ._ratelimit import (
    MAX_PAUSE,
    RateLimiter,
    RateLimitTooLong,
    note_rate_limit,
    rate_limit_delay,
)
from ._status import (
    RUN_STATUS_FOR_EXCEPTION,
    Ended,
    describe_error,
    ended_by,
    is_infra_error,
    run_status_of,
)
from ._task import ExpectedCall, Task, Verifier
from ._trial import (
    BUDGET_FIELDS,
    BudgetExceeded,
    Budgets,
    InfraError,
    TrialCancelled,
    TrialContext,
    TrialStop,
    current_trial,
    trial_context,
    user_interrupted,
)

__all__ = [
    "ATTR_MEMORY_RECALL",
    "BUDGET_FIELDS",
    "ENTRY_POINT_GROUP",
    "MAX_PAUSE",
    "PRECEDENTS_HEADER",
    "RUN_STATUS_FOR_EXCEPTION",
    "Adapter",
    "AdapterInfo",
    "AsyncClock",
    "BudgetExceeded",
    "Budgets",
    "Clock",
    "Ended",
    "EpisodeMemory",
    "ExpectedCall",
    "FakeClock",
    "InfraError",
    "Message",
    "Outcome",
    "RateLimitTooLong",
    "RateLimiter",
    "Recall",
    "SystemClock",
    "Task",
    "ToolCall",
    "TrialCancelled",
    "TrialContext",
    "TrialResult",
    "TrialStop",
    "Verifier",
    "VirtualClock",
    "completed_calls",
    "current_trial",
    "describe_error",
    "ended_by",
    "is_infra_error",
    "note_rate_limit",
    "outcome_of",
    "precedent_lookup",
    "precedents_text",
    "rate_limit_delay",
    "recall_precedents",
    "response_text",
    "run_status_of",
    "token_usage",
    "tool_calls_of",
    "tool_started",
    "trace_kinds",
    "trial_context",
    "user_interrupted",
    "verifier_input",
    "wants_outcome",
]


def __getattr__(name: str) -> Any:
    # Names 0.1 had here (``Memory``) forward until 0.2 (hbeval_core._moved).
    from .._moved import moved_name

    return moved_name(__name__, name)
