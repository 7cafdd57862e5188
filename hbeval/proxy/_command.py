"""Any process as a battery target: ``battery run --command "CMD" --via-proxy openai``.

Per trial, ``CommandAdapter.run_trial`` starts an ``OpenAIProxy`` with that trial's plan (model
faults on its model calls, tool faults in its tool results), issues a per-trial key that the
proxy alone accepts (and which marks the trial), and runs the command with
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` pointing at it. The question goes on stdin (or as the
last argument); stdout is the answer. A non-zero exit is an error outcome that keeps the last
lines of stderr. The trial's trace is what the proxy recorded, scored with the same verdict
rules as an in-process adapter's.

**Evidence.** A trace seen only through the proxy holds the model calls, the tool calls the
model issued and the tool results as the next request carried them. It cannot show a tool's
execution (its latency, a call that never reached the model, a side effect's count), anything
the process does without the model API, or spans; ``TrialResult.metadata["evidence"]`` says so
and the report carries it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from hbeval_core.contract import Task, TrialResult, current_trial
from hbeval_core.events import RunEnd, RunStart

from ._openai import OpenAIProxy
from ._spec import FaultSet, scenario_fault_set

__all__ = ["EVIDENCE", "STDERR_LINES", "CommandAdapter", "CommandTarget"]

STDERR_LINES: Final = 20
"""How many of stderr's last lines an error outcome keeps."""
EVIDENCE: Final = {
    "level": "proxy",
    "seen": ["model_calls", "tool_calls_issued", "tool_results_sent_back"],
    "cannot_support": [
        "tool execution and its latency",
        "side effects that never reached the model",
        "work done without the model API",
        "spans",
    ],
    "note": "the trace was seen only through hbeval proxy openai",
}


@dataclass(frozen=True)
class CommandTarget:
    """A process to run per trial: its command line and where its model calls go."""

    command: str
    upstream: str
    question_as_arg: bool = False
    upstream_key: str | None = None
    timeout: float | None = 600.0

    def argv(self, question: str) -> list[str]:
        args = shlex.split(self.command)
        if not args:
            raise ValueError("--command is empty: give the process to run, e.g. 'node agent.js'")
        return [*args, question] if self.question_as_arg else args


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-STDERR_LINES:])


class CommandAdapter:
    """The runner's adapter for ``CommandTarget``: the proxy records, the process answers."""

    name = "command"
    delivers_model_faults = True
    """Model faults reach it at the HTTP layer (``refuse_model_faults`` lets them through)."""

    def instrument(self) -> None:
        return None

    def uninstrument(self) -> None:
        return None

    @contextlib.contextmanager
    def scope(self, run_id: str) -> Iterator[None]:
        yield

    def fault_hook(self, injector: Any) -> None:
        # The proxy plants the trial's faults itself (its own injector for tool results).
        return None

    def memory_hook(self, memory: Any) -> None:
        return None

    def run_trial(self, target: Any, task: Task, scenario: Any, plan: Any) -> TrialResult:
        """Run the process once under the trial's plan, through its own proxy."""
        if not isinstance(target, CommandTarget):
            raise TypeError(f"CommandAdapter runs a CommandTarget, not {type(target).__name__}")
        ctx = current_trial()
        run_id = ctx.trial_run_id if ctx is not None else f"command-{uuid.uuid4().hex[:12]}"
        trial = ctx.trial_key if ctx is not None else "trial"
        key = f"hb-trial-{uuid.uuid4().hex}"
        source = f"scenario {getattr(scenario, 'index', '?')}"
        faults = scenario_fault_set(plan, source) if plan is not None else FaultSet()
        forbidden = task.forbidden_tools[0] if task.forbidden_tools else None
        proxy = OpenAIProxy(
            target.upstream,
            trial_keys={key: (trial, faults)},
            upstream_key=target.upstream_key,
            forbidden_tool=forbidden,
            run_id=run_id,
            session_attrs={"evidence": EVIDENCE, "command": target.command},
        ).start()
        env = {**os.environ, "OPENAI_BASE_URL": proxy.base_url, "OPENAI_API_KEY": key}
        # The question as the scenario hands it: unchanged, unless it is a prompt perturbation.
        question = scenario.question(task.question) if scenario is not None else task.question
        try:
            done = subprocess.run(
                target.argv(question),
                input=None if target.question_as_arg else question,
                capture_output=True,
                text=True,
                env=env,
                timeout=target.timeout,
                check=False,
            )
            status, error, error_type = "ok", None, None
            if done.returncode != 0:
                status, error_type = "error", "ProcessExit"
                error = f"exit status {done.returncode}: {_tail(done.stderr)}".strip()
            answer: str | None = done.stdout.strip()
        except subprocess.TimeoutExpired:
            status, error, error_type, answer = "timeout", "the process ran out of time", None, None
        except OSError as exc:
            status, error_type, answer = "error", "OSError", None
            error = f"cannot start {target.command!r}: {exc.strerror or exc}"
        finally:
            proxy.close()
        events = proxy.records[0].events if proxy.records else []
        if not events:  # the process never called the model: the trial still has its bounds
            events = [
                RunStart(run_id=run_id, seq=0, framework="openai-proxy"),
                RunEnd(run_id=run_id, seq=1, status="ok", attrs={"model_calls": 0}),
            ]
        return TrialResult(
            final_state=answer,
            events=list(events),
            status=status,
            error=error,
            error_type=error_type,
            response_text=answer,
            metadata={"evidence": EVIDENCE, "command": target.command},
        )
