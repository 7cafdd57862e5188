"""What ``hbeval proxy openai`` adds to a model call on 127.0.0.1.

One local upstream (``ScriptedOpenAIServer``, a constant reply) is called directly and through
``OpenAIProxy`` (recording on, no fault planted), side by side: each round sends one direct call
and one proxied call, alternating which goes first, each on its own keep-alive connection
(``http.client``, so the client's own cost is small and the same for both). It prints p50 and
p99 of each, for plain and streamed completions, and the added latency: the p50 and p99 of the
per-round differences (proxied minus direct).

Recording is off the request path: the proxy's handler queues what it saw and a recorder
thread builds the events after the response is sent; the record is kept in memory and written
once at the end (its time is printed apart, not part of any call).

Per MCP tool call, the same way: one small FastMCP server over stdio (one tool answering a
constant text) is called directly, by an ``mcp`` ``ClientSession`` that started it, and through
``hbeval mcp-proxy --record DB -- server`` (the command an agent's MCP configuration names,
recording on, no fault planted), by a second ``ClientSession`` in the same event loop. Inside
each clock: one ``call_tool`` awaited to its result and the result's text read; each round
times one of each, alternating which goes first. The proxy's record is written to SQLite when
its session ends (after the clocks); the events it holds are counted from that store.

Both sections end in the benchmarks' table: the median and p99 of the per-round added latency,
each with its 95% bootstrap interval over the rounds (``benchmarks/_table.py``).

    .venv/bin/python benchmarks/bench_proxy.py [--calls 2000] [--warmup 200]
        [--mcp-calls 1000] [--mcp-warmup 100]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._table import Row, bootstrap, markdown, notes, percentile  # noqa: E402
from hbeval.proxy._openai import OpenAIProxy  # noqa: E402
from hbeval.testing import Reply, ScriptedOpenAIServer, Usage  # noqa: E402

MODEL_GOAL_MS = 1.0
"""The goal for the added p50 per model call on 127.0.0.1."""
MCP_SERVER = textwrap.dedent(
    '''
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("orders", log_level="WARNING")


    @server.tool()
    def lookup_order(order_id: str) -> str:
        """Look an order up by its id."""
        return f"order {order_id}: shipped, 3 items"


    server.run("stdio")
    '''
)

BODY = {"model": "m", "messages": [{"role": "user", "content": "Where is order A1?"}]}


def reply(messages: list[dict[str, Any]]) -> Reply:
    return Reply("Order A1 shipped on Monday.", usage=Usage(10, 8))


class Caller:
    """One keep-alive connection posting chat completions to ``base`` (``.../v1``)."""

    def __init__(self, base: str, stream: bool) -> None:
        host_port = base.split("//", 1)[1].split("/", 1)[0]
        host, port = host_port.split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.body = json.dumps({**BODY, "stream": stream}).encode()
        self.headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}

    def call(self) -> float:
        t0 = time.perf_counter()
        self.conn.request("POST", "/v1/chat/completions", body=self.body, headers=self.headers)
        resp = self.conn.getresponse()
        data = resp.read()
        elapsed = time.perf_counter() - t0
        assert resp.status == 200 and data, (resp.status, data[:200])
        return elapsed * 1000.0


def measure(upstream: str, proxy: str, stream: bool, calls: int, warmup: int) -> dict[str, Any]:
    direct, proxied = Caller(upstream, stream), Caller(proxy, stream)
    for _ in range(warmup):
        direct.call()
        proxied.call()
    d: list[float] = []
    p: list[float] = []
    for i in range(calls):
        if i % 2:
            d.append(direct.call())
            p.append(proxied.call())
        else:
            p.append(proxied.call())
            d.append(direct.call())
    return summary(d, p)


def summary(d: Sequence[float], p: Sequence[float]) -> dict[str, Any]:
    """p50 and p99 of the direct and proxied series and of their per-round differences."""
    added = [b - a for a, b in zip(d, p, strict=True)]
    return {
        "direct": (percentile(d, 0.5), percentile(d, 0.99)),
        "proxied": (percentile(p, 0.5), percentile(p, 0.99)),
        "added": (percentile(added, 0.5), percentile(added, 0.99)),
        "series": (list(d), list(p)),
    }


def added_rows(figure: str, inside: str, got: dict[str, Any], goal: float | None) -> list[Row]:
    """The median and p99 of the per-round added latency, each with its bootstrap interval."""

    def added_at(q: float) -> Any:
        def stat(d: Sequence[float], p: Sequence[float]) -> float:
            if q == 0.5:
                return statistics.median(b - a for a, b in zip(d, p, strict=True))
            return percentile([b - a for a, b in zip(d, p, strict=True)], q)

        return stat

    d, p = got["series"]
    mid = bootstrap([d, p], added_at(0.5))
    tail = bootstrap([d, p], added_at(0.99))
    direct = f"direct p50 {got['direct'][0]:.3f} ms, p99 {got['direct'][1]:.3f} ms"
    return [
        Row(f"{figure}, added p50", "direct call", inside, *mid, "ms", goal,
            why=f"{direct}; the proxy's extra hop is the rest."),
        Row(f"{figure}, added p99", "direct call", inside, *tail, "ms", None),
    ]  # fmt: skip


async def mcp_rounds(calls: int, warmup: int, store: Path, tmp: Path) -> dict[str, Any]:
    """Direct and proxied ``call_tool`` on the same stdio server script, side by side."""
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    script = tmp / "orders_server.py"
    script.write_text(MCP_SERVER, encoding="utf-8")
    server = [sys.executable, str(script)]
    proxy = [sys.executable, "-m", "hbeval.cli", "mcp-proxy", "--record", str(store), "--", *server]
    env = dict(os.environ)

    async with AsyncExitStack() as stack:
        sessions = []
        for cmd in (server, proxy):
            params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append(session)
        direct, proxied = sessions

        async def one(session: Any) -> float:
            t0 = time.perf_counter()
            result = await session.call_tool("lookup_order", {"order_id": "A1"})
            text = result.content[0].text
            elapsed = time.perf_counter() - t0
            assert not result.isError and text == "order A1: shipped, 3 items", result
            return elapsed * 1000.0

        for _ in range(warmup):
            await one(direct)
            await one(proxied)
        d: list[float] = []
        p: list[float] = []
        for i in range(calls):
            if i % 2:
                d.append(await one(direct))
                p.append(await one(proxied))
            else:
                p.append(await one(proxied))
                d.append(await one(direct))
    return summary(d, p)


def recorded_events(store: Path) -> int:
    """Events in the one run the MCP proxy wrote when its session ended."""
    from hbeval.store import open_store

    s = open_store(store, read_only=True)
    try:
        (run,) = s.list_runs()
        return sum(1 for _ in s.iter_events(run.run_id))
    finally:
        s.close()


def print_shapes(title: str, rows: Sequence[tuple[str, dict[str, Any]]]) -> None:
    print(title)
    print(f"{'shape':<10}{'direct p50':>12}{'direct p99':>12}{'proxy p50':>12}"
          f"{'proxy p99':>12}{'added p50':>12}{'added p99':>12}")  # fmt: skip
    for name, got in rows:
        print(
            f"{name:<10}"
            + "".join(f"{v:>12.3f}" for key in ("direct", "proxied", "added") for v in got[key])
        )


def model_section(calls: int, warmup: int) -> list[Row]:
    """Per model call: plain and streamed chat completions, direct and through the proxy."""
    rows = []
    with ScriptedOpenAIServer(reply) as server:
        proxy = OpenAIProxy(server.base_url).start()
        try:
            for stream in (False, True):
                got = measure(server.base_url, proxy.base_url, stream, calls, warmup)
                rows.append(("streamed" if stream else "plain", got))
        finally:
            proxy.close()
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            proxy.write(str(Path(tmp) / "bench.db"))
        write_s = time.perf_counter() - t0
    events = sum(len(r.events) for r in proxy.records)
    print_shapes(f"hbeval proxy openai on 127.0.0.1, {calls} calls each way per shape (ms)", rows)
    print(f"record: {events} events, written to SQLite after the run in {write_s:.2f} s")
    worst = max(got["added"][0] for _, got in rows)
    print(
        f"goal: added p50 <= 1 ms per model call: {'met' if worst <= MODEL_GOAL_MS else 'NOT met'}"
    )
    out = []
    for name, got in rows:
        inside = f"one {name} chat completion on a keep-alive http.client connection"
        out += added_rows(f"model call ({name})", inside, got, MODEL_GOAL_MS)
    return out


def mcp_section(calls: int, warmup: int) -> list[Row]:
    """Per MCP tool call: a stdio server called directly and through ``hbeval mcp-proxy``."""
    import anyio

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "mcp.db"
        got = anyio.run(mcp_rounds, calls, warmup, store, Path(tmp))
        events = recorded_events(store)
    print_shapes(f"hbeval mcp-proxy over stdio, {calls} tool calls each way (ms)", [("call", got)])
    print(f"record: {events} events, written to SQLite by the proxy when its session ended")
    inside = "one call_tool awaited to its result over stdio (mcp ClientSession)"
    return added_rows("MCP tool call", inside, got, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="model calls each way per shape")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--mcp-calls", type=int, default=1000, help="MCP tool calls each way")
    parser.add_argument("--mcp-warmup", type=int, default=100)
    args = parser.parse_args(argv)
    for name in ("calls", "mcp_calls"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be 0 (skip) or more")
    rows: list[Row] = []
    if args.calls:
        rows += model_section(args.calls, args.warmup)
    if args.mcp_calls:
        if rows:
            print()
        rows += mcp_section(args.mcp_calls, args.mcp_warmup)
    if rows:
        print()
        print(markdown(rows))
        why = notes(rows)
        if why:
            print(why)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
