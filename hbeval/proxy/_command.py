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
import json
import os
import shlex
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from hbeval_core.contract import Task, TrialResult, current_trial
from hbeval_core.events import RunEnd, RunStart, ToolEnd, ToolError, ToolStart, parse_event
from hbeval_core.faults.plans import FaultPlan

from ._openai import PROXY_EVIDENCE, OpenAIProxy
from ._spec import FaultSet, scenario_fault_set

__all__ = [
    "EVIDENCE",
    "MCP_ENV",
    "MCP_EVIDENCE",
    "MCP_ONLY_EVIDENCE",
    "STDERR_LINES",
    "CommandAdapter",
    "CommandTarget",
]

STDERR_LINES: Final = 20
"""How many of stderr's last lines an error outcome keeps."""
EVIDENCE: Final = PROXY_EVIDENCE
"""What a trace seen only through the proxy holds and cannot support (``_openai``)."""
MCP_EVIDENCE: Final = {
    "level": "proxy",
    "seen": ["model_calls", "tool_calls_issued", "mcp_tool_calls_and_results"],
    "cannot_support": [
        "tools run outside the MCP server",
        "side effects that never reached the model or the MCP server",
        "work done without the model API",
        "spans",
    ],
    "note": "the trace was seen only through hbeval proxy openai and hbeval mcp-proxy",
}
"""The same with ``--via-proxy mcp=CMD``: the MCP server's calls are seen where they run."""
MCP_ONLY_EVIDENCE: Final = {
    "level": "proxy",
    "seen": ["mcp_tool_calls_and_results"],
    "cannot_support": [
        "model calls, so whether a fault reached the model (delivery)",
        "tools run outside the MCP server",
        "spans",
    ],
    "note": "the trace was seen only through hbeval mcp-proxy",
}
"""``--via-proxy mcp=CMD`` without ``openai``: only the MCP server's calls are seen."""
MCP_ENV: Final = ("HBEVAL_MCP_COMMAND", "HBEVAL_MCP_ARGV")
"""Where the process finds the MCP server to start: a command line, and the same as JSON."""


@dataclass(frozen=True)
class CommandTarget:
    """A process to run per trial: its command line and where its model calls go."""

    command: str
    upstream: str | None
    """The model API the OpenAI proxy forwards to; None: the model calls are not proxied."""
    question_as_arg: bool = False
    upstream_key: str | None = None
    timeout: float | None = 600.0
    mcp_server: str | None = None
    """The agent's MCP server (a command line), fronted per trial by ``hbeval mcp-proxy``."""

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
        """Run the process once under the trial's plan, through its own proxies."""
        # Long because: one trial's lifecycle in order: the proxies up, the process run, the
        # proxies down, the traces joined, each step a few lines.
        if not isinstance(target, CommandTarget):
            raise TypeError(f"CommandAdapter runs a CommandTarget, not {type(target).__name__}")
        ctx = current_trial()
        run_id = ctx.trial_run_id if ctx is not None else f"command-{uuid.uuid4().hex[:12]}"
        trial = ctx.trial_key if ctx is not None else "trial"
        key = f"hb-trial-{uuid.uuid4().hex}"
        source = f"scenario {getattr(scenario, 'index', '?')}"
        faults = scenario_fault_set(plan, source) if plan is not None else FaultSet()
        forbidden = task.forbidden_tools[0] if task.forbidden_tools else None
        evidence = _evidence(target)
        # The question as the scenario hands it: unchanged, unless it is a prompt perturbation.
        question = scenario.question(task.question) if scenario is not None else task.question
        env = dict(os.environ)
        proxy = None
        if target.upstream is not None:
            # With an MCP server, its proxy plants the tool faults where the tools run.
            model_faults = FaultSet(None, (), faults.source, faults.model)
            proxy = OpenAIProxy(
                target.upstream,
                trial_keys={key: (trial, model_faults if target.mcp_server else faults)},
                upstream_key=target.upstream_key,
                forbidden_tool=forbidden,
                run_id=run_id,
                session_attrs={"evidence": evidence, "command": target.command},
            ).start()
            env.update(OPENAI_BASE_URL=proxy.base_url, OPENAI_API_KEY=key)
        with tempfile.TemporaryDirectory(prefix="hbeval-mcp-") as tmp:
            mcp_events = Path(tmp) / "events.jsonl"
            if target.mcp_server is not None:
                env.update(_mcp_env(target.mcp_server, Path(tmp), faults, forbidden, mcp_events))
            try:
                status, error, error_type, answer = self._run(target, question, env)
            finally:
                if proxy is not None:
                    proxy.close()
            mcp = _read_events(mcp_events) if target.mcp_server is not None else []
        events: list[Any] = list(proxy.records[0].events) if proxy and proxy.records else []
        events = _joined(events, mcp, run_id, evidence, target.command)
        return TrialResult(
            final_state=answer,
            events=events,
            status=status,
            error=error,
            error_type=error_type,
            response_text=answer,
            metadata={"evidence": evidence, "command": target.command},
        )

    def _run(
        self, target: CommandTarget, question: str, env: dict[str, str]
    ) -> tuple[str, str | None, str | None, str | None]:
        """``(status, error, error_type, answer)`` of one run of the process."""
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
        except subprocess.TimeoutExpired:
            return "timeout", "the process ran out of time", None, None
        except OSError as exc:
            return (
                "error",
                f"cannot start {target.command!r}: {exc.strerror or exc}",
                "OSError",
                None,
            )
        if done.returncode != 0:
            error = f"exit status {done.returncode}: {_tail(done.stderr)}".strip()
            return "error", error, "ProcessExit", done.stdout.strip()
        return "ok", None, None, done.stdout.strip()


def _evidence(target: CommandTarget) -> dict[str, Any]:
    if target.mcp_server is None:
        return dict(EVIDENCE)
    return dict(MCP_EVIDENCE if target.upstream is not None else MCP_ONLY_EVIDENCE)


def _mcp_env(
    server: str, tmp: Path, faults: FaultSet, forbidden: str | None, events: Path
) -> dict[str, str]:
    """The process's ``HBEVAL_MCP_COMMAND`` / ``HBEVAL_MCP_ARGV``: this trial's MCP proxy."""
    from ._mcp_trial import plan_to_file

    if faults.plan is not None and not isinstance(faults.plan, FaultPlan):
        raise ValueError(
            f"--via-proxy mcp: a {type(faults.plan).__name__} cannot be planted by the MCP "
            "proxy; use a battery of single faults"
        )
    plan_file = tmp / "plan.json"
    plan_to_file(plan_file, faults.plan, forbidden)
    argv = [
        sys.executable, "-m", "hbeval.proxy._mcp_trial", str(plan_file), str(events), "--",
        *shlex.split(server),
    ]  # fmt: skip
    return {MCP_ENV[0]: shlex.join(argv), MCP_ENV[1]: json.dumps(argv)}


def _read_events(path: Path) -> list[Any]:
    """The MCP proxy's events (none when it never started: the process never used it)."""
    if not path.exists():
        return []
    return [parse_event(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _joined(
    model: list[Any], mcp: list[Any], run_id: str, evidence: dict[str, Any], command: str
) -> list[Any]:
    """One trace of the trial: the OpenAI proxy's and the MCP proxy's events by time.

    The MCP proxy saw its tools run, so the OpenAI proxy's view of those tools (the call the
    model issued, the result sent back) is left out; one ``run_start`` and one ``run_end``.
    """
    served = {str(t) for e in mcp if isinstance(e, RunEnd) for t in e.attrs.get("tools") or ()}
    body = [e for e in model if not isinstance(e, (RunStart, RunEnd))]
    if mcp:
        body = [
            e
            for e in body
            if not (isinstance(e, (ToolStart, ToolEnd, ToolError)) and e.tool in served)
        ]
        body += [e for e in mcp if not isinstance(e, (RunStart, RunEnd))]
        body.sort(key=lambda e: e.ts or 0.0)
    start = next((e for e in model if isinstance(e, RunStart)), None)
    end = next((e for e in reversed(model) if isinstance(e, RunEnd)), None)
    if start is None:
        framework = "mcp-proxy" if mcp else "openai-proxy"
        attrs = {"evidence": evidence, "command": command}
        start = RunStart(run_id=run_id, seq=0, framework=framework, attrs=attrs)
    if end is None:
        end = RunEnd(run_id=run_id, seq=0, status="ok", attrs={"model_calls": 0})
    return [
        e.model_copy(update={"run_id": run_id, "seq": i}) for i, e in enumerate([start, *body, end])
    ]
