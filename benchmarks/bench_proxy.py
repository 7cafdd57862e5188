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

    .venv/bin/python benchmarks/bench_proxy.py [--calls 2000] [--warmup 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._table import percentile  # noqa: E402
from hbeval.proxy._openai import OpenAIProxy  # noqa: E402
from hbeval.testing import Reply, ScriptedOpenAIServer, Usage  # noqa: E402

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
    added = [b - a for a, b in zip(d, p, strict=True)]
    return {
        "direct": (percentile(d, 0.5), percentile(d, 0.99)),
        "proxied": (percentile(p, 0.5), percentile(p, 0.99)),
        "added": (percentile(added, 0.5), percentile(added, 0.99)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)
    rows = []
    with ScriptedOpenAIServer(reply) as server:
        proxy = OpenAIProxy(server.base_url).start()
        try:
            for stream in (False, True):
                got = measure(server.base_url, proxy.base_url, stream, args.calls, args.warmup)
                rows.append(("streamed" if stream else "plain", got))
        finally:
            proxy.close()
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            proxy.write(str(Path(tmp) / "bench.db"))
        write_s = time.perf_counter() - t0
    events = sum(len(r.events) for r in proxy.records)
    print(f"hbeval proxy openai on 127.0.0.1, {args.calls} calls each way per shape (ms)")
    print(f"{'shape':<10}{'direct p50':>12}{'direct p99':>12}{'proxy p50':>12}"
          f"{'proxy p99':>12}{'added p50':>12}{'added p99':>12}")  # fmt: skip
    for name, got in rows:
        print(
            f"{name:<10}"
            + "".join(f"{v:>12.3f}" for key in ("direct", "proxied", "added") for v in got[key])
        )
    print(f"record: {events} events, written to SQLite after the run in {write_s:.2f} s")
    worst = max(got["added"][0] for _, got in rows)
    print(f"goal: added p50 <= 1 ms per model call: {'met' if worst <= 1.0 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
