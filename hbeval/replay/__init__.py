"""Replay: a new agent version on recorded cases, with the recorded tool results served back.

``replay_run(store, RUN_ID, target)`` runs ``target`` on each recorded trial's input while every
tool call is answered from the recording (``ReplayInjector``; no real tool runs, an unexpected
call is a divergence) and reports per case the tool-selection divergence, per-field argument
differences, trace-invariant violations against a budget (default 0), and outcome, cost and
latency changes through the paired comparison. Rules in ``_run``. Works with every adapter that
routes tool calls through the trial's injector (plain, LangGraph, AutoGen); CrewAI applies its
faults in its own hooks and is not replayed.
"""

from __future__ import annotations

from ._run import REPLAY_FORMAT, Invariants, ReplayError, inferred_schemas, replay_run, selection
from ._serve import RecordedCall, ReplayInjector, recorded_calls

__all__ = [
    "REPLAY_FORMAT",
    "Invariants",
    "RecordedCall",
    "ReplayError",
    "ReplayInjector",
    "inferred_schemas",
    "recorded_calls",
    "replay_run",
    "selection",
]
