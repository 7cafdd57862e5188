"""Resident memory of long captures and long batteries: it should stay flat.

Two workloads, each printing the process's resident set size (RSS, from /proc/self/statm) at
checkpoints, after a garbage collection:

* **captured runs** -- a LangGraph agent on a scripted model run ``--runs`` times (2,000 by
  default) under ``hbeval_langgraph.instrument()``: once with an ``on_event`` sink (the handler
  keeps no events) and once without (it keeps a window of the newest events);
* **a battery** -- the plain example agent over ``--trials`` trials (10,000 by default: a
  50-scenario battery repeated) into an SQLite store in a temporary folder.

Flat means the RSS at the last checkpoint is within a few MB of the first one after warm-up;
the figures are printed, nothing is asserted (the tests check the bounded structures).

    .venv/bin/python benchmarks/bench_memory.py [--runs 2000] [--trials 10000]
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
from typing import Any


def rss_mb() -> float:
    """The resident set size of this process in MB."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _checkpoints(total: int) -> set[int]:
    return {max(1, total * k // 10) for k in (1, 2, 5, 10)}


def captured_runs(runs: int, *, sink: bool) -> tuple[list[tuple[int, float]], str]:
    """RSS after 10%, 20%, 50% and 100% of ``runs`` LangGraph runs under ``instrument()``."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool

    from hbeval_langgraph import instrument, uninstrument

    class Scripted(FakeMessagesListChatModel):
        """Reply n is chosen by how many AI messages the input holds (a real tool call first)."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> ChatResult:
            turn = sum(1 for m in messages if m.type == "ai")
            reply = self.responses[min(turn, len(self.responses) - 1)]
            return ChatResult(generations=[ChatGeneration(message=reply.model_copy())])

    def lookup(query: str) -> str:
        """Look something up."""
        return f"found: {query} is shipped"

    call = {"name": "lookup", "args": {"query": "A1"}, "id": "c1", "type": "tool_call"}
    script: list[BaseMessage] = [AIMessage("", tool_calls=[call]), AIMessage("done")]
    graph = create_agent(Scripted(responses=script), [StructuredTool.from_function(lookup)])
    received = [0]

    def count(_event: Any) -> None:
        received[0] += 1

    marks: list[tuple[int, float]] = []
    want = _checkpoints(runs)
    handler = instrument(on_event=count) if sink else instrument()
    try:
        for i in range(1, runs + 1):
            graph.invoke({"messages": [HumanMessage(f"where is order {i}?")]})
            if i in want:
                gc.collect()
                marks.append((i, rss_mb()))
    finally:
        uninstrument()
    kept = len(handler.events)
    return marks, f"events kept by the handler at the end: {kept}; the sink received {received[0]}"


def battery(trials: int) -> tuple[list[tuple[int, float]], str]:
    """RSS after 10%, 20%, 50% and 100% of a ``trials``-trial battery into SQLite."""
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_core.faults import Battery
    from hbeval_plain.examples import careful, tasks

    scenarios = 50
    per = max(1, trials // scenarios)
    total = per * scenarios
    want = _checkpoints(total)
    marks: list[tuple[int, float]] = []

    def progress(update: Any) -> None:
        if update.done in want:
            gc.collect()
            marks.append((update.done, rss_mb()))

    with tempfile.TemporaryDirectory() as folder, open_store(f"{folder}/hb.db") as store:
        run_battery(
            None,
            careful,
            tasks,
            Battery.hbeval(n_scenarios=scenarios, seed=42),
            trials=per,
            store=store,
            progress=progress,
            timeout=0,
        )
    gc.collect()
    marks.append((-1, rss_mb()))
    return marks, f"{total} trials in {scenarios} scenarios x {per}"


def _show(title: str, result: tuple[list[tuple[int, float]], str], unit: str) -> None:
    marks, note = result
    print(f"{title} ({note})")
    for n, mb in marks:
        label = "after the report" if n < 0 else f"{n:>6} {unit}"
        print(f"    {label:<18} RSS {mb:7.1f} MB")
    during = [mb for n, mb in marks if n >= 0]
    print(f"    growth from first to last checkpoint: {during[-1] - during[0]:+.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=10_000)
    args = parser.parse_args()
    print(f"start: RSS {rss_mb():.1f} MB")
    try:
        _show(
            "captured runs, instrument(on_event=sink)", captured_runs(args.runs, sink=True), "runs"
        )
        _show("captured runs, instrument() (window)", captured_runs(args.runs, sink=False), "runs")
    except ImportError as exc:
        print(f"captured runs skipped: {exc} (pip install 'hbeval[langgraph]')")
    _show("battery into SQLite", battery(args.trials), "trials")


if __name__ == "__main__":
    main()
