"""The trial in progress: its ids, fault injector, budgets and cancellation, for every adapter.

The runner opens a ``TrialContext`` around each attempt and publishes it in a context variable,
so any adapter (plain, LangGraph, CrewAI, ...) reads the same trial state with
``current_trial()`` and enforces budgets and cancellation at its tool boundaries with
``check_tool_boundary()``. Context variables rather than globals: concurrent trials in threads
never see each other's state.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BUDGET_FIELDS",
    "BudgetExceeded",
    "Budgets",
    "InfraError",
    "TrialCancelled",
    "TrialContext",
    "TrialStop",
    "current_trial",
    "trial_context",
    "user_interrupted",
]

BUDGET_FIELDS = ("max_turns", "max_tool_calls", "max_wall_seconds")
"""The budget names a manifest may set."""


class InfraError(Exception):
    """Raise (or subclass) from an agent or adapter to say the environment failed, not the agent.

    The runner records such an attempt as ``infra_error`` and retries it a bounded number of
    times; any other exception from the agent counts as the agent failing.
    """


class TrialStop(Exception):
    """Base of the exceptions hbeval raises at a tool boundary to stop a trial on purpose."""


class BudgetExceeded(TrialStop):
    """A manifest budget ran out; no tool runs after it in this trial."""

    def __init__(self, budget: str, limit: float, used: float) -> None:
        self.budget = budget
        self.limit = limit
        self.used = used
        super().__init__(f"budget {budget}={limit:g} exceeded (used {used:g}); trial stopped")


class TrialCancelled(TrialStop):
    """The trial was cut by its timeout; the agent's thread is told to stop at its next tool call."""


def _budget_value(data: Mapping[str, Any], name: str, *, integer: bool) -> float | int | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"budget field {name!r} must be a number > 0 or null (got {value!r})")
    if integer and not float(value).is_integer():
        raise ValueError(f"budget field {name!r} must be a whole number (got {value!r})")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"budget field {name!r} must be > 0 (got {value!r}); use null for none")
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class Budgets:
    """Per-trial limits from the manifest; None means unlimited.

    ``max_turns`` counts model calls, ``max_tool_calls`` tool calls, ``max_wall_seconds`` the
    trial's elapsed time (real time plus any virtual time a fake clock skipped).
    """

    max_turns: int | None = None
    max_tool_calls: int | None = None
    max_wall_seconds: float | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> Budgets:
        """Validate ``{"max_turns", "max_tool_calls", "max_wall_seconds"}``; unknown keys raise."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ValueError(
                f"budgets must be a mapping such as {{max_tool_calls: 20}} (got {data!r})"
            )
        unknown = sorted(set(data) - set(BUDGET_FIELDS))
        if unknown:
            raise ValueError(
                f"unknown budget field(s) {', '.join(map(repr, unknown))}; "
                f"valid: {', '.join(BUDGET_FIELDS)}"
            )
        turns = _budget_value(data, "max_turns", integer=True)
        calls = _budget_value(data, "max_tool_calls", integer=True)
        wall = _budget_value(data, "max_wall_seconds", integer=False)
        return cls(
            max_turns=None if turns is None else int(turns),
            max_tool_calls=None if calls is None else int(calls),
            max_wall_seconds=None if wall is None else float(wall),
        )

    @property
    def limited(self) -> bool:
        """Whether any budget is set."""
        return (
            self.max_turns is not None
            or self.max_tool_calls is not None
            or self.max_wall_seconds is not None
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"max_turns", "max_tool_calls", "max_wall_seconds"}`` with None for unlimited."""
        return {
            "max_turns": self.max_turns,
            "max_tool_calls": self.max_tool_calls,
            "max_wall_seconds": self.max_wall_seconds,
        }


@dataclass
class TrialContext:
    """Everything an adapter needs to know about the trial it is running.

    Counters (``tool_calls``, ``turns``) are kept here so budgets mean the same in every
    adapter. ``stop`` records the first budget that ran out; once set, every later tool
    boundary raises again, so an agent that swallows the exception still cannot run a tool.
    """

    run_id: str
    """The battery run's id."""
    trial_run_id: str
    """The id every event of this attempt carries (derived from run id, scenario, trial, attempt)."""
    trial_key: str
    agent_id: str = "default"
    task_id: str | None = None
    scenario_index: int | None = None
    trial_index: int | None = None
    attempt: int = 0
    injector: Any = None
    """The attempt's ``FaultInjector`` (None on a nominal scenario)."""
    model_faults: Any = None
    """The attempt's model faults for in-process scripted models (the runner's
    ``ScriptedModelFaults``; ``hbeval_core.faults.scripted``), None without model faults."""
    clock: Any = None
    """The clock time-based faults wait on; a virtual one in battery runs unless given."""
    budgets: Budgets = field(default_factory=Budgets)
    forbidden_tool: str | None = None
    native_async: bool = False
    """The run awaits agents (``arun_battery``): an adapter whose framework has a native
    coroutine entry point (CrewAI's ``akickoff``) drives the agent through it."""
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.perf_counter)
    tool_calls: int = 0
    turns: int = 0
    stop: BudgetExceeded | None = None
    events: list[Any] = field(default_factory=list)
    """The attempt's trace so far. Adapters append through ``record`` so a timeout can cut it."""
    limiter: Any = None
    """The run's rate limiter (``RunLimiter``): model calls wait on it; None: no limits."""
    paused: float = 0.0
    """Seconds this attempt spent waiting on the run's rate limit (not the trial's time)."""
    rate_limited: float | None = None
    """Set when the agent stopped on an HTTP 429: the seconds its provider asked to wait."""
    _pause_began: float | None = field(default=None, repr=False)
    _slot_held: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    cut_off: bool = field(default=False, init=False)
    """True once ``cut`` ran (a plain flag: it is read on every event)."""

    def record(self, event: Any) -> bool:
        """Append ``event`` to the trace unless the trial was cut; returns whether it was kept."""
        with self._lock:
            if self.cut_off:
                return False
            self.events.append(event)
            return True

    def cut(self) -> list[Any]:
        """Cancel the trial and return its trace as it stood: nothing is recorded afterwards."""
        with self._lock:
            self.cut_off = True
            self.cancelled.set()
            return list(self.events)

    def elapsed(self) -> float:
        """Seconds since the attempt began, including time a virtual clock skipped and leaving
        out time spent waiting on the run's rate limit."""
        skipped = getattr(self.clock, "slept", 0.0)
        return self.active_seconds() + (skipped if isinstance(skipped, (int, float)) else 0.0)

    def active_seconds(self) -> float:
        """Real seconds since the attempt began, minus waits on the rate limit (one in progress
        included): what the trial's timeout and latency count."""
        now = time.perf_counter()
        began = self._pause_began
        waiting = now - began if began is not None else 0.0
        return now - self.started - self.paused - waiting

    def wait_for_model(self) -> None:
        """Before a model call: wait while the run is paused by a 429 and for a slot of the
        run's rate limit. The wait is not the trial's time; a timeout cut ends it."""
        limiter = self.limiter
        if limiter is None:
            return
        self._slot_held = True  # the turn's slot: ``count_turn`` does not take another
        wait = limiter.reserve()
        if wait <= 0:
            return
        began = self._pause_began = time.perf_counter()
        try:
            while wait > 0 and not self.cancelled.is_set():
                self.cancelled.wait(wait)
                wait = limiter.pause_left()
        finally:
            self._pause_began = None
            self.paused += time.perf_counter() - began

    def count_turn(self) -> None:
        """Record one model call (a turn), once the run's rate limit lets it start (unless the
        adapter already waited for this turn with ``wait_for_model``)."""
        if not self._slot_held:
            self.wait_for_model()
        self._slot_held = False
        with self._lock:
            self.turns += 1

    def check_tool_boundary(self) -> None:
        """Call before a tool runs: raises if the trial was cut or a budget ran out, else counts it.

        Raises ``TrialCancelled`` after a timeout and ``BudgetExceeded`` once any budget is
        exhausted (and at every later boundary).
        """
        if self.cancelled.is_set():
            raise TrialCancelled(f"trial {self.trial_key} was cut by its timeout")
        with self._lock:
            if self.stop is not None:
                raise self.stop
            b = self.budgets
            exceeded: BudgetExceeded | None = None
            if b.max_tool_calls is not None and self.tool_calls >= b.max_tool_calls:
                exceeded = BudgetExceeded("max_tool_calls", b.max_tool_calls, self.tool_calls + 1)
            elif b.max_turns is not None and self.turns > b.max_turns:
                exceeded = BudgetExceeded("max_turns", b.max_turns, self.turns)
            elif b.max_wall_seconds is not None:
                elapsed = self.elapsed()
                if elapsed > b.max_wall_seconds:
                    exceeded = BudgetExceeded("max_wall_seconds", b.max_wall_seconds, elapsed)
            if exceeded is not None:
                self.stop = exceeded
                raise exceeded
            self.tool_calls += 1

    def budget_record(self) -> dict[str, Any]:
        """``{"limits", "used", "exceeded"}`` for the trial record (wall time left out: volatile)."""
        return {
            "limits": self.budgets.to_dict(),
            "used": {"tool_calls": self.tool_calls, "turns": self.turns},
            "exceeded": self.stop.budget if self.stop is not None else None,
        }


_USER_INTERRUPT = threading.Event()


def user_interrupted() -> bool:
    """True once Ctrl-C (SIGINT) reached a running battery: a ``KeyboardInterrupt`` then stops
    the run instead of ending only the trial of an agent that raised it itself."""
    return _USER_INTERRUPT.is_set()


def _note_user_interrupt() -> None:
    _USER_INTERRUPT.set()


def _reset_user_interrupt() -> None:
    _USER_INTERRUPT.clear()


_CURRENT: ContextVar[TrialContext | None] = ContextVar("hbeval_trial", default=None)


def current_trial() -> TrialContext | None:
    """The trial running in this context, or None outside a battery run."""
    return _CURRENT.get()


@contextmanager
def trial_context(ctx: TrialContext) -> Iterator[TrialContext]:
    """Publish ``ctx`` as the current trial for the duration of the block."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)
