"""``benchmarks/bench_proxy.py`` at tiny sizes: the MCP section's calls went through the proxy.

Not a timing test: it checks the proxied session really crossed ``hbeval mcp-proxy`` (its record
holds a start and an end per call, warm-up included), that the rounds are paired, and that the
table carries the MCP rows with their intervals.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import bench_proxy  # noqa: E402
from benchmarks._table import HEADER  # noqa: E402


def test_mcp_rounds_are_paired_and_cross_the_proxy(tmp_path: Path) -> None:
    store = tmp_path / "mcp.db"
    got = anyio.run(bench_proxy.mcp_rounds, 12, 3, store, tmp_path)
    direct, proxied = got["series"]
    assert len(direct) == len(proxied) == 12
    assert all(x > 0 for x in direct + proxied)
    # 15 calls (3 warm-up, 12 timed): a tool_start and a tool_end each, and the run's two ends.
    assert bench_proxy.recorded_events(store) == 15 * 2 + 2
    rows = bench_proxy.added_rows("MCP tool call", "one call_tool", got, None)
    assert [r.figure for r in rows] == ["MCP tool call, added p50", "MCP tool call, added p99"]
    assert all(r.low <= r.value <= r.high for r in rows)
    assert all(len(r.cells()) == len(HEADER) for r in rows)
