"""Capture overhead of HBEvalCallbackHandler per tool call, measured side by side in one process.

The same ``create_agent`` graph (scripted model, ``--turns`` sequential tool calls per run, one
model call per turn plus the final answer) runs in interleaved rounds under each variant:

* ``bare``          no callbacks at all
* ``noop``          an empty handler that defines ``on_chat_model_start`` (the floor of any
                    callback-based capture: LangChain's own dispatch; without that method
                    LangChain would also render every message to text)
* ``noop-same``     an empty handler with exactly our handler's dispatch attributes
                    (``raise_error``, ``run_inline``, the ``ignore_*`` answers) and empty
                    bodies for every callback ours defines: the anchor the goal names
* ``hbeval``        HBEvalCallbackHandler passed in ``config["callbacks"]`` (nothing watches
                    it live, so it logs each callback and records the log on first read)
* ``hbeval-read``   the same, then ``handler.events`` and ``handler.monitor.metrics`` read after
                    the run, inside the measured region: the whole cost, wherever it is paid
* ``hbeval-live``   the handler given a ``Monitor()``: it records each callback as it comes (as
                    battery trials and handlers with a sink do); then the same reads
* ``hbeval-hook``   the same handler attached by ``capture()`` (the context-variable hook)
* ``noop-hook``     ``noop-same`` attached through the same context-variable hook (its anchor)
* ``openinference`` OpenInference's LangChain instrumentor with the OpenTelemetry SDK enabled
                    and an in-memory span exporter (``pip install hbeval[bench]``; skipped when
                    absent). ``OTEL_SDK_DISABLED`` is cleared in this process only.

Both anchors are printed: ours adds to each what its own callback bodies cost (LangChain
dispatches to either in the same way; see benchmarks/README.md for how that was checked).
Rounds rotate the variant order so drift and warm-up hit every variant alike. Times are the
process's CPU time by default (all threads; steadier than wall time on a shared or loaded
machine; ``--clock wall`` for wall time). Printed: median ms per run with the interquartile
range, the µs each variant adds per tool call over ``bare`` (median of per-round differences,
with its IQR), the ratio to ``bare``, and OpenInference's added cost over ours.

A second table replays one recorded run's callbacks straight into fresh handlers (no graph, no
LangChain dispatch): the handler's own cost per tool call, which graph-level noise can hide, and
what reading ``handler.events`` afterwards costs (spans, run starts and model inputs are
finished on first read). An appending handler gives the floor of any handler. The same
replay right after a bare graph run ("after a graph run") shows what the handler's code costs
when the graph has just filled the CPU's caches, as it has inside a real run.

``--by-callback`` prints only the replay, as the thread's CPU time per tool call spent in each
kind of callback (to compare trees side by side, run it once per tree in alternating processes).

    .venv/bin/python benchmarks/bench_langgraph_overhead.py [--turns 5] [--rounds 60]
    .venv/bin/python benchmarks/bench_langgraph_overhead.py --by-callback [--rounds 400]
    PYTHONHASHSEED=0 valgrind --tool=callgrind --zero-before=getppid --dump-before=getpgrp \
        .venv/bin/python benchmarks/bench_langgraph_overhead.py --marked hbeval --rounds 10
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool

from hbeval_core.live.monitor import Monitor
from hbeval_langgraph import HBEvalCallbackHandler, capture
from hbeval_langgraph._hook import HANDLER_VAR, ensure_hook


class Scripted(FakeMessagesListChatModel):
    """Reply n: a tool call while turns remain, then a final answer (chosen by AI count)."""

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        turn = sum(1 for m in messages if m.type == "ai")
        reply = self.responses[min(turn, len(self.responses) - 1)]
        return ChatResult(generations=[ChatGeneration(message=reply.model_copy())])


def lookup(x: int) -> int:
    """Look a number up."""
    return x + 1


def build(turns: int) -> Any:
    script: list[BaseMessage] = [
        AIMessage(
            f"Step {i}: looking up {i}.",
            tool_calls=[{"name": "lookup", "args": {"x": i}, "id": f"c{i}", "type": "tool_call"}],
        )
        for i in range(turns)
    ]
    script.append(AIMessage("done"))
    return create_agent(Scripted(responses=script), [StructuredTool.from_function(lookup)])


class NoOp(BaseCallbackHandler):
    """Receives every event and does nothing with it."""

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        return None


class NoOpSame(BaseCallbackHandler):
    """An empty handler LangChain dispatches to exactly as it does to ``HBEvalCallbackHandler``.

    Same ``raise_error`` and ``run_inline``, the same ``ignore_*`` answers, and an empty body for
    every callback ours defines: all read off ``HBEvalCallbackHandler`` below, so the anchor
    follows the handler when it changes.
    """


def _empty(self: Any, *args: Any, **kwargs: Any) -> None:
    return None


for _name in dir(BaseCallbackHandler):
    _ours = getattr(HBEvalCallbackHandler, _name)
    if _ours is getattr(BaseCallbackHandler, _name):
        continue
    if _name.startswith("on_"):
        setattr(NoOpSame, _name, _empty)
    elif _name.startswith("ignore_") or _name in ("raise_error", "run_inline"):
        setattr(NoOpSame, _name, _ours)  # the class attribute: a property for ignore_*


Variant = Callable[[], tuple[dict[str, Any], AbstractContextManager[Any]]]


class _OpenInference(AbstractContextManager[Any]):
    """OpenInference's instrumentor, on for one run, with an in-memory exporter."""

    def __init__(self) -> None:
        from openinference.instrumentation.langchain import LangChainInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.instrumentor = LangChainInstrumentor()
        self.spans: list[int] = []

    def __enter__(self) -> Any:
        self.instrumentor.instrument(tracer_provider=self.provider)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.instrumentor.uninstrument()
        self.spans.append(len(self.exporter.get_finished_spans()))
        self.exporter.clear()


def openinference_variant() -> tuple[Variant, _OpenInference] | None:
    # Only in this process: the SDK must really record (a disabled SDK records nothing).
    os.environ.pop("OTEL_SDK_DISABLED", None)
    try:
        oi = _OpenInference()
    except ImportError:
        return None
    return (lambda: ({}, oi)), oi


@contextmanager
def _hooked(handler: Any) -> Iterator[Any]:
    """``handler`` attached as ``capture()`` attaches ours: through the same context variable."""
    ensure_hook()
    token = HANDLER_VAR.set(handler)
    try:
        yield handler
    finally:
        HANDLER_VAR.reset(token)


@contextmanager
def _then_read(handler: HBEvalCallbackHandler) -> Iterator[Any]:
    """After the run: read everything the handler made (its events and live metrics)."""
    yield handler
    assert handler.events
    assert handler.monitor.metrics


def _read_after() -> tuple[dict[str, Any], AbstractContextManager[Any]]:
    handler = HBEvalCallbackHandler()
    return {"callbacks": [handler]}, _then_read(handler)


def _live() -> tuple[dict[str, Any], AbstractContextManager[Any]]:
    handler = HBEvalCallbackHandler(monitor=Monitor())
    return {"callbacks": [handler]}, _then_read(handler)


def variants() -> tuple[dict[str, Variant], _OpenInference | None]:
    out: dict[str, Variant] = {
        "bare": lambda: ({}, nullcontext()),
        "noop": lambda: ({"callbacks": [NoOp()]}, nullcontext()),
        "noop-same": lambda: ({"callbacks": [NoOpSame()]}, nullcontext()),
        "hbeval": lambda: ({"callbacks": [HBEvalCallbackHandler()]}, nullcontext()),
        "hbeval-read": _read_after,
        "hbeval-live": _live,
        "hbeval-hook": lambda: ({}, capture()),
        "noop-hook": lambda: ({}, _hooked(NoOpSame())),
    }
    found = openinference_variant()
    if found is None:
        return out, None
    out["openinference"] = found[0]
    return out, found[1]


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--turns", type=int, default=5, help="tool calls per run")
    ap.add_argument("--rounds", type=int, default=60, help="interleaved rounds")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--by-callback", action="store_true", help="the replay per callback only")
    ap.add_argument(
        "--marked",
        metavar="VARIANT",
        help="run only VARIANT, --rounds times, between os.getppid() and os.getpgrp() (markers "
        "for callgrind's --zero-before/--dump-before: instruction counts)",
    )
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    graph = build(args.turns)
    inputs = {"messages": [HumanMessage("go")]}
    if args.by_callback:
        by_callback(graph, inputs, args.turns, args.rounds)
        return
    table, oi = variants()
    if args.marked:
        marked(graph, inputs, table[args.marked], args.warmup, args.rounds)
        return
    names = list(table)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.warmup + args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            config, ctx = table[name]()
            gc.collect()
            with ctx:
                t0 = clock()
                graph.invoke(inputs, config=config)
                elapsed = clock() - t0
            if r >= args.warmup:
                times[name].append(elapsed)

    print(
        f"create_agent, {args.turns} tool calls + {args.turns + 1} model calls per run, "
        f"{args.rounds} interleaved rounds, {args.clock} time"
    )
    if oi is None:
        print("(openinference-instrumentation-langchain not installed: its row is skipped)")
    else:
        print(f"(openinference exported {statistics.median(oi.spans):.0f} spans per run)")
    bare = times["bare"]
    print(
        f"{'variant':<14}{'ms/run median':>14}{'  IQR':>18}"
        f"{'µs/tool call':>15}{'  IQR':>20}{'ratio':>8}"
    )
    added: dict[str, float] = {}
    for name in names:
        lo, med, hi = quartiles([t * 1000 for t in times[name]])
        # Per-round differences cancel drift common to the round.
        diffs = [(t - b) * 1e6 / args.turns for t, b in zip(times[name], bare, strict=True)]
        dlo, dmed, dhi = quartiles(diffs)
        added[name] = dmed
        ratio = med / (statistics.median(bare) * 1000)
        extra = "" if name == "bare" else f"{dmed:>+15.1f}   [{dlo:+.1f}, {dhi:+.1f}]"
        print(f"{name:<14}{med:>14.3f}   [{lo:.3f}, {hi:.3f}]{extra:>35}{ratio:>8.3f}")
    print("goals: added per tool call at most 1.5x the anchor's; run at most ~1.05x the anchor's")
    for anchor, ours in (
        ("noop", "hbeval"),
        ("noop-same", "hbeval"),
        ("noop-same", "hbeval-read"),
        ("noop-same", "hbeval-live"),
        ("noop-same", "hbeval-hook"),
        ("noop-hook", "hbeval-hook"),
    ):
        ratio = added[ours] / added[anchor] if added[anchor] > 0 else float("nan")
        runs = [t / a for t, a in zip(times[ours], times[anchor], strict=True)]
        print(
            f"{ours} / {anchor}: {ratio:.1f}x the added cost per tool call "
            f"(nan: the anchor's median was not above bare), run {statistics.median(runs):.3f}x"
        )
    if "openinference" in added:
        for ours in ("hbeval", "hbeval-read", "hbeval-live", "hbeval-hook"):
            if added[ours] > 0:
                print(
                    f"openinference / {ours}: {added['openinference'] / added[ours]:.1f}x "
                    "the added cost per tool call (goal: at least 20x)"
                )
    replay(graph, inputs, args.turns, args.rounds)


def marked(graph: Any, inputs: Any, variant: Variant, warmup: int, rounds: int) -> None:
    """``rounds`` runs of one variant between two markers, configs made beforehand.

    Under ``valgrind --tool=callgrind --zero-before=getppid --dump-before=getpgrp`` the first
    dump holds the instructions of exactly these runs (repeatable on a loaded machine).
    """
    for _ in range(warmup):
        config, ctx = variant()
        with ctx:
            graph.invoke(inputs, config=config)
    made = [variant() for _ in range(rounds)]
    gc.collect()
    os.getppid()
    for config, ctx in made:
        with ctx:
            graph.invoke(inputs, config=config)
    os.getpgrp()


_CALLBACKS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_chat_model_start",
    "on_llm_end",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
)


class Recorder(BaseCallbackHandler):
    """Keeps every callback call, to replay it later."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattribute__(self, name: str) -> Any:
        if name in _CALLBACKS:
            calls = object.__getattribute__(self, "calls")
            return lambda *a, **k: calls.append((name, a, k))
        return object.__getattribute__(self, name)


class Appender(BaseCallbackHandler):
    """The floor of recording: one tuple per callback."""

    def __init__(self) -> None:
        self.seen: list[Any] = []


def _append(self: Appender, *args: Any, **kwargs: Any) -> None:
    self.seen.append((args, kwargs))


for _name in _CALLBACKS:
    setattr(Appender, _name, _append)


def replay(graph: Any, inputs: Any, turns: int, rounds: int) -> None:
    recorder = Recorder()
    graph.invoke(inputs, config={"callbacks": [recorder]})
    calls = recorder.calls
    makers: dict[str, Callable[[], Any]] = {"appender": Appender, "hbeval": HBEvalCallbackHandler}
    samples: dict[str, list[float]] = {n: [] for n in makers}
    reads: list[float] = []
    clock = time.perf_counter
    for r in range(rounds * 10):
        for name, make in makers.items():
            handler = make()
            t0 = clock()
            for method, args, kwargs in calls:
                getattr(handler, method)(*args, **kwargs)
            t1 = clock()
            if name == "hbeval":
                _ = handler.events
                if r >= rounds:
                    reads.append((clock() - t1) * 1e6 / turns)
            if r >= rounds:
                samples[name].append((t1 - t0) * 1e6 / turns)
    print(
        f"\nhandler body only: {len(calls)} recorded callbacks replayed per run "
        "(wall time, warm caches), µs per tool call"
    )
    for name, xs in samples.items():
        lo, med, hi = quartiles(xs)
        print(f"{name:<26}{med:>8.1f}   [{lo:.1f}, {hi:.1f}]")
    lo, med, hi = quartiles(reads)
    print(f"{'hbeval: then read .events':<26}{med:>8.1f}   [{lo:.1f}, {hi:.1f}]")
    # The same replay, each right after a bare graph run: the caches hold the graph's code and
    # data, as they do when LangChain calls the handler inside a run.
    cold: dict[str, list[float]] = {n: [] for n in makers}
    for _ in range(rounds):
        for name, make in makers.items():
            handler = make()
            graph.invoke(inputs)
            t0 = clock()
            for method, args, kwargs in calls:
                getattr(handler, method)(*args, **kwargs)
            cold[name].append((clock() - t0) * 1e6 / turns)
    for name, xs in cold.items():
        lo, med, hi = quartiles(xs)
        print(f"{name + ', after a graph run':<26}{med:>8.1f}   [{lo:.1f}, {hi:.1f}]")


def by_callback(graph: Any, inputs: Any, turns: int, rounds: int) -> None:
    recorder = Recorder()
    graph.invoke(inputs, config={"callbacks": [recorder]})
    calls = recorder.calls
    clock = time.thread_time_ns
    per: dict[str, list[float]] = {}
    for r in range(rounds + 30):
        handler = HBEvalCallbackHandler()
        spent: dict[str, int] = dict.fromkeys(_CALLBACKS, 0)
        for method, args, kwargs in calls:
            fn = getattr(handler, method)
            t0 = clock()
            fn(*args, **kwargs)
            spent[method] += clock() - t0
        if r >= 30:
            for method, ns in spent.items():
                per.setdefault(method, []).append(ns / 1000 / turns)
    counts = {m: sum(1 for c in calls if c[0] == m) for m in _CALLBACKS}
    medians = {m: statistics.median(xs) for m, xs in per.items() if counts[m]}
    print(f"handler body per callback, CPU µs per tool call ({rounds} replays of {len(calls)})")
    for method, med in medians.items():
        print(f"{method:<22}{counts[method]:>4} calls {med:>8.1f}")
    print(f"{'total':<32}{sum(medians.values()):>8.1f}")


if __name__ == "__main__":
    main()
