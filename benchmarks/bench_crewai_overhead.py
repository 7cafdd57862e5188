"""Hook overhead per tool call: the same CrewAI crew with and without hbeval's capture.

One crew makes ``--calls`` tool calls per kickoff on a scripted model (no network), then
answers. Three variants run interleaved in one process, in a rotating order, so drift and
warm-up hit them alike:

* ``bare``: the crew as the user has it;
* ``tool hooks``: hbeval's scoped ``PRE_TOOL_CALL`` / ``POST_TOOL_CALL`` hooks only;
* ``full capture``: everything a battery trial installs (all scoped hooks, the recording LLM
  proxy, live monitor), with no fault plan.

Prints the median kickoff time of each, its spread (interquartile range), the ratio to bare,
and the overhead per tool call (median difference / calls), on both tool paths.

    .venv/bin/python benchmarks/bench_crewai_overhead.py [--calls N] [--repeats R]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hbeval_crewai import offline_environment

offline_environment()

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402


class _Args(BaseModel):
    n: int = Field(description="Item number.")


class Lookup(BaseTool):
    """A trivial tool, so the timing is the framework's and the hooks'."""

    name: str = "lookup"
    description: str = "Look an item up."
    args_schema: type[BaseModel] = _Args

    def _run(self, n: int) -> str:
        return f"item {n}"


class LoopLLM(BaseLLM):
    """Calls ``lookup`` ``calls`` times (one per turn, new arguments each time), then answers."""

    calls: int = 10
    native: bool = False

    def call(self, messages: Any, tools: Any = None, **kwargs: Any) -> Any:
        done = sum(
            1
            for m in messages
            if m.get("role") == "tool"
            or (m.get("role") == "assistant" and "\nObservation:" in str(m.get("content")))
        )
        if done >= self.calls:
            return "finished" if self.native else "Thought: done\nFinal Answer: finished"
        args = json.dumps({"n": done})
        if self.native:
            return [
                {
                    "id": f"c{done}",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": args},
                }
            ]
        return f"Thought: next item\nAction: lookup\nAction Input: {args}"

    def supports_function_calling(self) -> bool:
        return self.native

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 128_000

    def get_input_tokens_count(
        self, messages: Any, tools: Any = None, response_model: Any = None
    ) -> int:
        return 1


def make_crew(calls: int, native: bool) -> Crew:
    agent = Agent(
        role="clerk",
        goal="look items up",
        backstory="b",
        llm=LoopLLM(model="loop", calls=calls, native=native),
        tools=[Lookup()],
        max_iter=calls + 5,
        verbose=False,
    )
    task = Task(description="Look up the items.", expected_output="done", agent=agent)
    # cache=False: every call reaches the tool, so each variant does the same work.
    return Crew(
        agents=[agent], tasks=[task], process=Process.sequential, verbose=False, cache=False
    )


@contextmanager
def tool_hooks_only() -> Iterator[None]:
    from crewai.hooks.dispatch import InterceptionPoint, register_scoped, scoped_hooks

    from hbeval_crewai import CrewAIRecorder

    rec = CrewAIRecorder(run_id="bench")
    with scoped_hooks():
        register_scoped(InterceptionPoint.PRE_TOOL_CALL, rec.pre_tool)
        register_scoped(InterceptionPoint.POST_TOOL_CALL, rec.post_tool)
        yield


def full_capture() -> AbstractContextManager[Any]:
    from hbeval_crewai import capture

    return capture(run_id="bench")


VARIANTS: dict[str, Callable[[], AbstractContextManager[Any]]] = {
    "bare": nullcontext,
    "tool hooks": tool_hooks_only,
    "full capture": full_capture,
}


def measure(calls: int, repeats: int, native: bool) -> dict[str, list[float]]:
    crew = make_crew(calls, native)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for _ in range(3):  # warm-up: executors built, imports done
        for name in names:
            with VARIANTS[name]():
                crew.kickoff()
    for i in range(repeats):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            gc.collect()
            with VARIANTS[name]():
                t0 = time.perf_counter()
                crew.kickoff()
                times[name].append(time.perf_counter() - t0)
    return times


def iqr(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10, help="tool calls per kickoff")
    parser.add_argument("--repeats", type=int, default=30, help="measured kickoffs per variant")
    args = parser.parse_args()
    print(
        f"crewai hook overhead: {args.calls} tool calls per kickoff, {args.repeats} interleaved repeats"
    )
    for native in (False, True):
        times = measure(args.calls, args.repeats, native)
        base = statistics.median(times["bare"])
        print(f"\n{'native' if native else 'ReAct'} path")
        print(
            f"  {'variant':<13} {'median ms':>10} {'IQR ms':>8} {'ratio':>6} {'per tool call':>14}"
        )
        for name, values in times.items():
            med = statistics.median(values)
            per_call_us = (med - base) / args.calls * 1e6
            print(
                f"  {name:<13} {med * 1e3:>10.2f} {iqr(values) * 1e3:>8.2f} {med / base:>6.3f} "
                f"{per_call_us:>+11.0f} µs"
            )


if __name__ == "__main__":
    main()
