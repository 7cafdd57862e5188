"""Capture overhead of hbeval_autogen per tool call, measured side by side in one process.

The same AssistantAgent (a scripted offline model, ``--turns`` sequential tool calls per run,
one model call per turn plus the final answer) runs in interleaved rounds under each variant:

* ``bare``      AutoGen as installed: nothing hooked
* ``hooked``    ``instrument()`` in effect but no capture scope (what an idle hook costs)
* ``capture``   inside ``capture()``: model-client and workbench wrappers, events, live monitor
* ``faults``    ``capture()`` plus an enabled ``FaultInjector`` whose plan never fires (the
                injection path a nominal battery scenario pays)

Each run gets a fresh agent, built outside the timed region. Rounds rotate the variant order so
drift and warm-up hit every variant alike. Printed: median ms per run with the interquartile
range, the added µs per tool call over ``bare`` (median of per-round differences, with its IQR),
and the ratio of medians to ``bare``.

A second table times the wrappers alone, without an agent around them: one tool call through
the workbench plus one model call through the client (the work of one tool turn), bare versus
wrapped, interleaved. Agent-level timings on a busy machine can hide a cost of this size.

    .venv/bin/python benchmarks/bench_autogen_overhead.py [--turns 10] [--rounds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_core.tools import FunctionTool

from hbeval_autogen import Reply, ScriptedChatCompletionClient, capture, instrument, uninstrument
from hbeval_core.faults import FakeClock, FaultInjector, FaultPlan, FaultSpec

logging.getLogger("autogen_core").setLevel(logging.ERROR)


def lookup(x: int) -> int:
    """Look a number up."""
    return x + 1


def build(turns: int) -> AssistantAgent:
    """A fresh agent: ``turns`` lookups (each explained), then "done"."""

    def policy(messages: Sequence[Any], tools: Sequence[str]) -> str | Reply:
        done = sum(
            len(m.content) for m in messages if type(m).__name__ == "FunctionExecutionResultMessage"
        )
        if done >= turns:
            return "done"
        return Reply(calls=[("lookup", {"x": done})], thought=f"Step {done}: looking up {done}.")

    return AssistantAgent(
        "bench",
        model_client=ScriptedChatCompletionClient(policy),
        tools=[FunctionTool(lookup, description="Look a number up.")],
        max_tool_iterations=turns + 1,
    )


class Hooked(AbstractContextManager[Any]):
    """``instrument()`` for the duration of the block, with no capture scope."""

    def __enter__(self) -> Any:
        instrument()
        return self

    def __exit__(self, *exc: Any) -> None:
        uninstrument()


def never_firing() -> FaultInjector:
    plan = FaultPlan("bench", 1, [FaultSpec(id="f", target="not_a_tool", mode="error_5xx")])
    return FaultInjector(plan, enabled=True, clock=FakeClock())


Variant = Callable[[], AbstractContextManager[Any]]

VARIANTS: dict[str, Variant] = {
    "bare": nullcontext,
    "hooked": Hooked,
    "capture": lambda: capture("bench"),
    "faults": lambda: capture("bench", injector=never_firing()),
}


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]


async def measure(turns: int, rounds: int, warmup: int) -> dict[str, list[float]]:
    names = list(VARIANTS)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            agent = build(turns)
            gc.collect()
            with VARIANTS[name]() as scope:
                t0 = time.perf_counter()
                result = await asyncio.wait_for(agent.run(task="go"), 30)
                elapsed = time.perf_counter() - t0
            assert result.messages[-1].to_text() == "done"
            if name in ("capture", "faults"):
                tools = sum(1 for e in scope.events if e.kind == "tool_end")
                assert tools == turns, (name, tools)
            if r >= warmup:
                times[name].append(elapsed)
    return times


async def _async_lookup(x: int) -> int:
    """Look a number up (async, so no executor hop blurs the wrapper's own cost)."""
    return x + 1


async def measure_wrappers(rounds: int, calls: int) -> tuple[list[float], list[float]]:
    """Seconds per tool turn (one tool call + one model call), bare and wrapped, per round."""
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        SystemMessage,
        UserMessage,
    )
    from autogen_core.tools import StaticStreamWorkbench

    from hbeval_autogen import HBEvalModelClient, RunRecorder
    from hbeval_autogen._wrappers import wrap_workbench

    bench = StaticStreamWorkbench([FunctionTool(_async_lookup, description="Look up.")])
    client = ScriptedChatCompletionClient(
        lambda m, t: Reply(calls=[("lookup", {"x": 1})], thought="why")
    )
    history: list[Any] = [
        SystemMessage(content="You help."),
        UserMessage(content="go", source="user"),
    ]
    for i in range(5):
        history.append(AssistantMessage(content="step", source="bench"))
        history.append(
            FunctionExecutionResultMessage(
                content=[
                    FunctionExecutionResult(
                        content=str(i), call_id=f"c{i}", name="lookup", is_error=False
                    )
                ]
            )
        )
    bare: list[float] = []
    wrapped: list[float] = []
    for r in range(rounds):
        rec = RunRecorder("bench")
        wb = wrap_workbench(bench, rec, "bench", None)
        mc = HBEvalModelClient(client, rec, "bench", None)
        pairs = [("bare", bench, client), ("wrapped", wb, mc)]
        if r % 2:
            pairs.reverse()
        for name, w, c in pairs:
            client.create_calls.clear()
            gc.collect()
            t0 = time.perf_counter()
            for i in range(calls):
                await w.call_tool("_async_lookup", {"x": i}, call_id=f"call-{r}-{i}")
                await c.create(history)
            per_turn = (time.perf_counter() - t0) / calls
            (bare if name == "bare" else wrapped).append(per_turn)
    return bare, wrapped


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--turns", type=int, default=10, help="tool calls per run")
    ap.add_argument("--rounds", type=int, default=60, help="interleaved rounds")
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()

    times = asyncio.run(measure(args.turns, args.rounds, args.warmup))
    bare = times["bare"]
    print(
        f"AutoGen AssistantAgent, {args.turns} tool calls per run, {args.rounds} interleaved "
        f"rounds (+{args.warmup} warm-up)"
    )
    print(
        f"{'variant':<10} {'ms/run (q1 / median / q3)':>28} {'+µs per tool call (IQR)':>26} {'ratio':>7}"
    )
    for name, xs in times.items():
        q1, med, q3 = quartiles([x * 1000 for x in xs])
        per_call = [(v - b) / args.turns * 1e6 for v, b in zip(xs, bare, strict=True)]
        d1, dmed, d3 = quartiles(per_call)
        ratio = statistics.median(xs) / statistics.median(bare)
        added = "" if name == "bare" else f"{dmed:+8.1f} ({d1:+.1f} .. {d3:+.1f})"
        print(f"{name:<10} {q1:8.2f} / {med:8.2f} / {q3:8.2f} {added:>26} {ratio:7.3f}")

    bare_w, wrapped_w = asyncio.run(measure_wrappers(args.rounds, 200))
    print()
    print("Wrappers alone: one tool call + one model call (12-message input), 200 per round")
    print(
        f"{'variant':<10} {'µs per tool turn (q1 / median / q3)':>36} {'+µs (IQR)':>22} {'ratio':>7}"
    )
    diffs = [(w - b) * 1e6 for w, b in zip(wrapped_w, bare_w, strict=True)]
    d1, dmed, d3 = quartiles(diffs)
    for name, xs in (("bare", bare_w), ("wrapped", wrapped_w)):
        q1, med, q3 = quartiles([x * 1e6 for x in xs])
        ratio = statistics.median(xs) / statistics.median(bare_w)
        added = "" if name == "bare" else f"{dmed:+7.1f} ({d1:+.1f} .. {d3:+.1f})"
        print(f"{name:<10} {q1:10.1f} / {med:10.1f} / {q3:10.1f} {added:>22} {ratio:7.3f}")


if __name__ == "__main__":
    main()
