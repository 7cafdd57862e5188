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
                    the run, inside the clock: the whole cost, wherever it is paid
* ``hbeval-live``   the handler given a ``Monitor()``: it records each callback as it comes (as
                    battery trials and handlers with a sink do); then the same reads, inside
                    the clock
* ``hbeval-hook``   the same handler attached by ``capture()`` (the context-variable hook),
                    then the same reads, inside the clock
* ``noop-hook``     ``noop-same`` attached through the same context-variable hook (its anchor)
* ``openinference`` OpenInference's LangChain instrumentor with the OpenTelemetry SDK enabled
                    and an in-memory span exporter (``pip install hbeval[bench]``; skipped when
                    absent); instrumenting is set-up (outside the clock, as making our handler
                    is); its spans are built and exported during the run, and reading the
                    finished spans is inside the clock, as our read is. ``OTEL_SDK_DISABLED``
                    is cleared in this process only.

What is inside the clock, for every variant: entering its context (the hooks' context
variable), ``graph.invoke``, and its read; outside: making the handler, a full collection of
the cyclic garbage collector before each run (the heap the imports and warm-up left is frozen
first, so every run starts from the same state), and clean-up. The collector runs as usual
inside the clock, for every variant alike.

The table's rows (``headline``, used by ``run_all.py``): the run with the read, logged and live
handler, against ``noop-same`` (median over rounds of each round's ratio, with its 95% bootstrap
interval over rounds), and OpenInference's cost over ``bare`` against ``hbeval-read``'s.

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
from dataclasses import dataclass, field
from typing import Any

from _table import Row, bootstrap, median_ratio
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


@dataclass
class Case:
    """One run of a variant: its config, a context entered inside the clock (cheap: a context
    variable), what it reads after the run inside the clock, and its clean-up outside it."""

    config: dict[str, Any]
    ctx: AbstractContextManager[Any] = field(default_factory=nullcontext)
    read: Callable[[], object] = lambda: None
    done: Callable[[], object] = lambda: None


Variant = Callable[[], Case]


class _OpenInference:
    """OpenInference's instrumentor with an in-memory exporter; on for one run at a time."""

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

    def case(self) -> Case:
        # Instrumenting patches LangChain's callback manager: set-up, outside the clock, as
        # making a handler is for ours. The spans are built and exported during the run;
        # reading the finished spans is inside the clock, as reading our events is.
        self.instrumentor.instrument(tracer_provider=self.provider)
        return Case({}, read=self._read, done=self._done)

    def _read(self) -> object:
        spans = self.exporter.get_finished_spans()
        self.spans.append(len(spans))
        assert spans
        self.exporter.clear()  # the next run (under --marked: the same case) starts empty
        return spans

    def _done(self) -> None:
        self.instrumentor.uninstrument()


def openinference_variant() -> _OpenInference | None:
    # Only in this process: the SDK must really record (a disabled SDK records nothing).
    os.environ.pop("OTEL_SDK_DISABLED", None)
    try:
        return _OpenInference()
    except ImportError:
        return None


@contextmanager
def _hooked(handler: Any) -> Iterator[Any]:
    """``handler`` attached as ``capture()`` attaches ours: through the same context variable."""
    ensure_hook()
    token = HANDLER_VAR.set(handler)
    try:
        yield handler
    finally:
        HANDLER_VAR.reset(token)


def _reader(handler: HBEvalCallbackHandler) -> Callable[[], object]:
    """Everything the handler made, read (its events and live metrics): inside the clock."""

    def read() -> object:
        assert handler.events
        assert handler.monitor.metrics
        return handler

    return read


def _logged() -> Case:
    handler = HBEvalCallbackHandler()
    return Case({"callbacks": [handler]})


def _read_after() -> Case:
    handler = HBEvalCallbackHandler()
    return Case({"callbacks": [handler]}, read=_reader(handler))


def _live() -> Case:
    handler = HBEvalCallbackHandler(monitor=Monitor())
    return Case({"callbacks": [handler]}, read=_reader(handler))


def _hook_read() -> Case:
    handler = HBEvalCallbackHandler()
    return Case({}, ctx=capture(handler), read=_reader(handler))


HEADLINE = ("bare", "noop-same", "hbeval-read", "hbeval-live", "openinference")


def variants(
    names: tuple[str, ...] | None = None,
) -> tuple[dict[str, Variant], _OpenInference | None]:
    out: dict[str, Variant] = {
        "bare": lambda: Case({}),
        "noop": lambda: Case({"callbacks": [NoOp()]}),
        "noop-same": lambda: Case({"callbacks": [NoOpSame()]}),
        "hbeval": _logged,
        "hbeval-read": _read_after,
        "hbeval-live": _live,
        "hbeval-hook": _hook_read,
        "noop-hook": lambda: Case({}, ctx=_hooked(NoOpSame())),
    }
    oi = openinference_variant()
    if oi is not None:
        out["openinference"] = oi.case
    if names is not None:
        out = {n: out[n] for n in names if n in out}
    return out, oi


def interleaved(
    graph: Any,
    inputs: Any,
    table: dict[str, Variant],
    rounds: int,
    warmup: int,
    clock: Callable[[], float],
) -> dict[str, list[float]]:
    """Seconds per run of each variant over ``rounds`` rounds, the order rotating per round.

    Inside the clock: entering the case's context, ``graph.invoke``, and the case's read;
    outside: making the handler (or instrumenting), a full collection before each run (of what
    is newer than the warm-up: the rest is frozen), and the clean-up.
    """
    names = list(table)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(warmup + rounds):
        if r == warmup:
            # What the imports and warm-up left is moved out of the collector's reach, so the
            # full collection before each run is quick and every run starts from the same state.
            gc.collect()
            gc.freeze()
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            case = table[name]()
            gc.collect()
            t0 = clock()
            with case.ctx:
                graph.invoke(inputs, config=case.config)
            case.read()
            elapsed = clock() - t0
            case.done()
            if r >= warmup:
                times[name].append(elapsed)
    gc.unfreeze()
    return times


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]


def run_ratio(times: dict[str, list[float]], ours: str, anchor: str) -> tuple[float, float, float]:
    """Median over rounds of ours / anchor per round, with its bootstrap interval."""
    return bootstrap([times[ours], times[anchor]], median_ratio)


def added_ratio(
    times: dict[str, list[float]], big: str, small: str, base: str = "bare"
) -> tuple[float, float, float]:
    """What ``big`` adds over ``base`` / what ``small`` adds over it (medians of per-round
    differences), with its bootstrap interval (infinite when ``small``'s can reach zero)."""

    def stat(b: list[float], s: list[float], z: list[float]) -> float:
        den = statistics.median(x - y for x, y in zip(s, z, strict=True))
        num = statistics.median(x - y for x, y in zip(b, z, strict=True))
        return num / den if den > 0 else float("inf")

    return bootstrap([times[big], times[small], times[base]], stat)


def headline(rounds: int, turns: int = 5, warmup: int = 5) -> list[Row]:
    """The table's LangGraph rows: CPU time, the reads inside the clock."""
    graph = build(turns)
    inputs = {"messages": [HumanMessage("go")]}
    table, _ = variants(HEADLINE)
    times = interleaved(graph, inputs, table, rounds, warmup, time.process_time)
    inside = (
        f"create_agent run ({turns} tool calls, {turns + 1} model calls), then events + "
        "metrics read; CPU"
    )
    costs = handler_costs(graph, inputs)
    anchor_us = statistics.median(times["noop-same"]) * 1e6
    budget = 0.05 * anchor_us
    logged_why = (
        f"The handler's own CPU per run, replayed warm: logging {costs['log']:.0f} us, reading "
        f"events {costs['events']:.0f} us (building every event, spans, model inputs; the "
        f"steps derived and folded), metrics {costs['metrics']:.0f} us; 5% of the anchor's "
        f"{anchor_us / 1e3:.1f} ms run is {budget:.0f} us. Inside a run the same code runs "
        "with caches the graph has just filled, slower than replayed."
    )
    live_why = (
        f"Recording each callback at once costs {costs['live']:.0f} us per run replayed warm "
        f"(the same building, derivation and fold, spread over the run), against a "
        f"{budget:.0f} us budget."
    )
    rows = []
    for ours, label, why in (
        ("hbeval-read", "logged handler", logged_why),
        ("hbeval-live", "live handler (records each callback)", live_why),
    ):
        point, lo, hi = run_ratio(times, ours, "noop-same")
        rows.append(
            Row(f"LangGraph run, {label}, read inside", "empty handler, same dispatch (noop-same)",
                inside, point, lo, hi, "x", 1.05, why=why)
        )  # fmt: skip
    if "openinference" in times:
        point, lo, hi = added_ratio(times, "openinference", "hbeval-read")
        rows.append(
            Row("OpenInference / hbeval, added per run over bare", "hbeval logged handler, read inside",
                "run + finished spans read / run + events and metrics read; CPU", point, lo, hi,
                "x", 20.0, better="ge", why=(
                    "Our added cost is the whole handler including the read (row above); "
                    "OpenInference's is its span building and export during the run."))
        )  # fmt: skip
    return rows


def handler_costs(graph: Any, inputs: Any, rounds: int = 300) -> dict[str, float]:
    """CPU us per run of the handler's own parts, replayed warm (no graph, no dispatch): the
    log (callbacks appended), ``events`` (building every event and the deferred ones), the
    live metrics; and a live handler's callbacks (recording each at once)."""
    recorder = Recorder()
    graph.invoke(inputs, config={"callbacks": [recorder]})
    calls = recorder.calls
    clock = time.thread_time
    got: dict[str, list[float]] = {"log": [], "events": [], "metrics": [], "live": []}
    for r in range(rounds + 50):
        handler = HBEvalCallbackHandler()
        t0 = clock()
        for method, args, kwargs in calls:
            getattr(handler, method)(*args, **kwargs)
        t1 = clock()
        _ = handler.events
        t2 = clock()
        _ = handler.monitor.metrics
        t3 = clock()
        live = HBEvalCallbackHandler(monitor=Monitor())
        t4 = clock()
        for method, args, kwargs in calls:
            getattr(live, method)(*args, **kwargs)
        t5 = clock()
        if r >= 50:
            for key, value in (("log", t1 - t0), ("events", t2 - t1), ("metrics", t3 - t2),
                               ("live", t5 - t4)):  # fmt: skip
                got[key].append(value * 1e6)
    return {k: statistics.median(v) for k, v in got.items()}


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
    times = interleaved(graph, inputs, table, args.rounds, args.warmup, clock)
    print(
        f"create_agent, {args.turns} tool calls + {args.turns + 1} model calls per run, "
        f"{args.rounds} interleaved rounds, {args.clock} time; reads inside the clock"
    )
    if oi is None:
        print("(openinference-instrumentation-langchain not installed: its row is skipped)")
    else:
        print(f"(openinference exported {statistics.median(oi.spans):.0f} spans per run)")
    print_table(times, args.turns)
    replay(graph, inputs, args.turns, args.rounds)


def print_table(times: dict[str, list[float]], turns: int) -> None:
    bare = times["bare"]
    print(
        f"{'variant':<14}{'ms/run median':>14}{'  IQR':>18}"
        f"{'µs/tool call':>15}{'  IQR':>20}{'ratio':>8}"
    )
    for name, xs in times.items():
        lo, med, hi = quartiles([t * 1000 for t in xs])
        # Per-round differences cancel drift common to the round.
        diffs = [(t - b) * 1e6 / turns for t, b in zip(xs, bare, strict=True)]
        dlo, dmed, dhi = quartiles(diffs)
        ratio = med / (statistics.median(bare) * 1000)
        extra = "" if name == "bare" else f"{dmed:>+15.1f}   [{dlo:+.1f}, {dhi:+.1f}]"
        print(f"{name:<14}{med:>14.3f}   [{lo:.3f}, {hi:.3f}]{extra:>35}{ratio:>8.3f}")
    print("run / anchor: median over rounds of each round's ratio [95% bootstrap interval]")
    for anchor, ours in (
        ("noop-same", "hbeval"),
        ("noop-same", "hbeval-read"),
        ("noop-same", "hbeval-live"),
        ("noop-hook", "hbeval-hook"),
    ):
        point, lo, hi = run_ratio(times, ours, anchor)
        print(f"  {ours} / {anchor}: {point:.3f}x [{lo:.3f}, {hi:.3f}] (goal <= 1.05x)")
    if "openinference" in times:
        for ours in ("hbeval", "hbeval-read", "hbeval-live", "hbeval-hook"):
            point, lo, hi = added_ratio(times, "openinference", ours)
            print(
                f"  openinference / {ours}, added over bare: {point:.1f}x [{lo:.1f}, {hi:.1f}] "
                "(goal >= 20x, against the read variants)"
            )


def marked(graph: Any, inputs: Any, variant: Variant, warmup: int, rounds: int) -> None:
    """``rounds`` runs of one variant between two markers, cases made beforehand; each run's
    read is inside the markers, as it is inside the clock.

    Under ``valgrind --tool=callgrind --zero-before=getppid --dump-before=getpgrp`` the first
    dump holds the instructions of exactly these runs (repeatable on a loaded machine).
    """
    for _ in range(warmup):
        case = variant()
        with case.ctx:
            graph.invoke(inputs, config=case.config)
        case.read()
        case.done()
    made = [variant() for _ in range(1 if variant.__name__ == "case" else rounds)]
    gc.collect()
    os.getppid()
    for i in range(rounds):
        case = made[min(i, len(made) - 1)]
        with case.ctx:
            graph.invoke(inputs, config=case.config)
        case.read()
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
