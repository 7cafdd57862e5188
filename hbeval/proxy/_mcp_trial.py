"""One trial's ``hbeval mcp-proxy``, as a process target starts it (``--via-proxy mcp=CMD``).

``python -m hbeval.proxy._mcp_trial PLAN.json EVENTS.jsonl -- SERVER CMD...`` serves the agent's
MCP client on stdio in front of ``SERVER CMD``, plants the trial's tool faults (``PLAN.json``:
a ``FaultPlan.to_dict()`` and the forbidden tool) and, when the client disconnects, writes the
session's hb-events to ``EVENTS.jsonl`` (one JSON event a line). ``CommandAdapter`` writes the
plan, gives the agent this command line, and reads the events back after the process ends.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from hbeval_core.faults.plans import FaultPlan, FaultSpec

__all__ = ["main", "plan_from_dict", "plan_to_file"]


def plan_from_dict(data: Any) -> FaultPlan | None:
    """The ``FaultPlan`` of ``FaultPlan.to_dict()`` (None for no plan)."""
    if not isinstance(data, dict):
        return None
    specs = []
    for raw in data.get("faults") or ():
        spec = dict(raw)
        calls = spec.get("on_calls")
        spec["on_calls"] = None if calls is None else tuple(int(c) for c in calls)
        specs.append(FaultSpec(**spec))
    return FaultPlan(id=str(data["id"]), seed=int(data["seed"]), faults=tuple(specs))


def plan_to_file(path: Path, plan: FaultPlan | None, forbidden_tool: str | None) -> None:
    """Write what ``main`` reads: the plan (or none) and the tool planted instructions name."""
    body = {"plan": None if plan is None else plan.to_dict(), "forbidden_tool": forbidden_tool}
    path.write_text(json.dumps(body), encoding="utf-8")


def main(argv: list[str]) -> int:
    """Serve one trial's MCP proxy; the exit status is 0 once the session is written."""
    import anyio

    from ._mcp import McpProxy
    from ._spec import FaultSet

    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m hbeval.proxy._mcp_trial PLAN.json EVENTS.jsonl -- SERVER CMD...",
              file=sys.stderr)  # fmt: skip
        return 2
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    plan = plan_from_dict(spec.get("plan"))
    faults = FaultSet(plan, (), ["trial plan"])
    proxy = McpProxy(argv[3:], faults, forbidden_tool=spec.get("forbidden_tool"))

    def write() -> None:
        events = list(proxy.record.events)  # no lock: a signal may land while it is held
        Path(argv[1]).write_text("".join(e.model_dump_json() + "\n" for e in events), "utf-8")

    def on_term(signum: int, frame: object) -> None:
        # A client that closed the session terminates a server slow to exit (the mcp SDK
        # does after 2 s): the session is written first.
        write()
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    try:
        anyio.run(proxy.serve_stdio)
    finally:
        write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
