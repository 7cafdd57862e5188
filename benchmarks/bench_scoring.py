"""Per-trial scoring cost: ``score_trial`` on a 10-tool-call trial, and where the time goes.

Builds a realistic faulted trial (run_start; ten model_start / model_end / tool_start / tool_end
steps, the fourth answered by an injected 503; a final reply; run_end: 45 events), then times,
interleaved in one process with each figure the best of several rounds of CPU time
(``time.thread_time``, so other processes' load does not count):

- ``score_trial``: the whole verdict (methodology B, no judge), what the runner calls per trial;
- ``analyse_trace``: the trace facts (calls, faults, receipts) alone;
- ``monitor``: hb-derive/1 plus the live metrics over the trace (``Monitor.observe`` per event);
- ``score_events``: the same live metrics through the one-pass scoring loop.

Prints microseconds per trial and each part's share of ``score_trial``.

    .venv/bin/python benchmarks/bench_scoring.py [--trials N] [--rounds R]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

ERR_503 = "HTTPError: 503 Service Unavailable returned by tool 'lookup_order'"


@dataclass
class Scenario:
    index: int = 0
    domain: str = "logistics"
    fault_type: str = "tool_failure"
    is_nominal: bool = False


def build_trial(ev: ModuleType, run_id: str = "bench/s000-t0", calls: int = 10) -> list[Any]:
    """The events of one faulted trial with ``calls`` tool calls, built with module ``ev``."""
    events: list[Any] = [
        ev.RunStart(run_id=run_id, agent_id="bench", task_id="order", input="Where is order 7?")
    ]
    last = "Where is order 7?"
    for i in range(calls):
        model, call = f"m{i}", f"c{i}"
        tool = "lookup_order" if i % 2 == 0 else "track_parcel"
        args = {"order_id": 7, "region": "eu"} if i % 2 == 0 else {"parcel": f"P{i}"}
        events.append(
            ev.ModelStart(
                run_id=run_id,
                call_id=model,
                model="scripted",
                messages=[ev.ChatMessage(role="tool", content=last, tool_call_id=f"c{i - 1}")],
            )
        )
        events.append(
            ev.ModelEnd(
                run_id=run_id,
                call_id=model,
                text="" if i % 3 == 1 else f"Step {i}: checking the order before answering.",
                tool_calls=[ev.ToolCall(id=call, name=tool, args=args)],
                usage=ev.Usage(input_tokens=300 + 20 * i, output_tokens=25),
                latency_ms=410.0,
            )
        )
        events.append(ev.ToolStart(run_id=run_id, call_id=call, tool=tool, args=args))
        if i == 3:
            events.append(
                ev.FaultInjected(
                    run_id=run_id,
                    call_id=call,
                    tool=tool,
                    mode="error_5xx",
                    effect="error",
                    payload=ERR_503,
                    intended={"http_status": 503},
                )
            )
            events.append(ev.ToolError(run_id=run_id, call_id=call, tool=tool, error=ERR_503))
            last = ERR_503
        else:
            result = {"status": "in_transit", "eta": "2026-05-0" + str(1 + i % 9), "hops": i}
            events.append(
                ev.ToolEnd(run_id=run_id, call_id=call, tool=tool, result=result, latency_ms=3.5)
            )
            last = str(result)
    events.append(ev.ModelStart(run_id=run_id, call_id="final", messages=[]))
    events.append(
        ev.ModelEnd(
            run_id=run_id,
            call_id="final",
            text="Order 7 is in transit; the first lookup failed with a 503, so I retried it.",
        )
    )
    events.append(ev.RunEnd(run_id=run_id, output="in transit"))
    return events


def in_transit(state: Any, trace: Any) -> bool:
    return state == "in transit"


def best_of(fn: Callable[[], object], n: int, rounds: int) -> float:
    """Best per-call CPU seconds of ``rounds`` rounds of ``n`` calls."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time() - t0) / n)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=400, help="calls per round")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    from hbeval.scoring import analyse_trace, score_trial
    from hbeval_core import events as ev
    from hbeval_core.contract import Task, TrialResult
    from hbeval_core.live.monitor import Monitor

    score_events: Callable[..., Any] | None
    try:
        from hbeval_core.live.monitor import score_events  # the one-loop fold, where it exists
    except ImportError:
        score_events = None

    events = build_trial(ev)
    task = Task(
        id="order",
        question="Where is order 7?",
        verify=in_transit,
        forbidden_tools=("refund_order",),
        irreversible_tools=("cancel_order",),
    )
    result = TrialResult(final_state="in transit", events=events, response_text="in transit")
    scenario = Scenario()

    def monitor() -> None:
        m = Monitor(adapt_plan=False)
        for e in events:
            m.observe(e)
        _ = m.metrics, m.undefined

    parts: dict[str, Callable[[], object]] = {
        "score_trial": lambda: score_trial(task, scenario, result),
        "analyse_trace": lambda: analyse_trace(events),
        "monitor (observe per event)": monitor,
    }
    if score_events is not None:
        fold = score_events
        parts["monitor (score_events)"] = lambda: fold(events, adapt_plan=False)
    for part in parts.values():  # warm up: imports, caches, regexes
        part()
    gc.collect()
    best: dict[str, float] = {name: float("inf") for name in parts}
    for _ in range(args.rounds):  # interleaved, so drift hits all alike
        for name, part in parts.items():
            best[name] = min(best[name], best_of(part, args.trials, 1))
    whole = best["score_trial"]
    print(
        f"one trial: {len(events)} events, 10 tool calls (one faulted); "
        f"best of {args.rounds} rounds x {args.trials}, CPU time"
    )
    for name, seconds in best.items():
        print(f"  {name:30}{seconds * 1e6:9.1f} us  {seconds / whole:6.0%} of score_trial")


if __name__ == "__main__":
    main()
