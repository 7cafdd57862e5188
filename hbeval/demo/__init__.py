"""``hbeval demo``'s job: the battery on the packaged careful and naive support agents.

Works from any folder, since the agents ship inside the package. Each call starts new runs
(agent ids ``demo-careful`` and ``demo-naive``), so repeated demos build the history CSI needs.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any, Final

from hbeval_core.vocab import DEFAULT_SCENARIOS, DEFAULT_SEED, DEFAULT_TRIALS

from ..runner.run import ProgressUpdate, run_battery
from ..scoring import Report

__all__ = ["DEMO_AGENTS", "demo_agents", "run_demo"]

DEMO_AGENTS: Final = ("careful", "naive")
"""The two temperaments the demo compares, in report order."""


def run_demo(
    out_dir: Path | None = None,
    db: str | None = None,
    *,
    n_scenarios: int = DEFAULT_SCENARIOS,
    trials: int = DEFAULT_TRIALS,
    seed: int = DEFAULT_SEED,
    progress: Callable[[str, ProgressUpdate], None] | None = None,
    agents: str = "auto",
) -> dict[str, Report]:
    """Run the battery on both example agents; returns ``{"careful": report, "naive": report}``.

    ``db`` is a path or ``sqlite:///`` URL; by default the store is ``<out_dir>/.hbeval/hbeval.db``
    (``./.hbeval/hbeval.db`` when ``out_dir`` is the working directory). ``progress`` receives
    the agent's name with each update. Nothing else is written: the caller renders the reports.
    ``agents`` is "auto" (the installed framework demo, else plain) or an adapter kind with a
    demo (``demo_agents``).
    """
    from hbeval_core.faults import Battery

    from ..store import open_store

    adapter, careful, naive, tasks, _framework = demo_agents(agents)
    base = Path(out_dir) if out_dir is not None else Path.cwd()
    store = open_store(db if db is not None else base / ".hbeval" / "hbeval.db")
    factories = {"careful": careful, "naive": naive}
    reports: dict[str, Report] = {}
    try:
        for name in DEMO_AGENTS:

            def report_progress(update: ProgressUpdate, name: str = name) -> None:
                if progress is not None:
                    progress(name, update)

            reports[name] = run_battery(
                adapter,
                factories[name],
                tasks,
                Battery.hbeval(n_scenarios=n_scenarios, seed=seed),
                trials=trials,
                seed=seed,
                store=store,
                agent_id=f"demo-{name}",
                progress=report_progress,
            )
    finally:
        store.close()
    return reports


def demo_agents(agents: str = "auto") -> tuple[Any, Any, Any, Any, str]:
    """The demo's agents: ``(adapter, careful, naive, tasks, kind)``.

    ``agents`` is "auto" or an adapter kind with a demo. The adapters offering one are found
    through the ``hbeval.adapters`` entry points (``AdapterInfo.demo``); "auto" takes the
    framework demo of highest ``demo_priority`` whose framework imports, else the plain-Python
    agents, which keep ``hbeval demo`` working on a core-only install. ``adapter`` is None for
    the plain agents (the runner picks the plain adapter itself).
    """
    from ..runner.registry import PLAIN, discovered_adapters, get_adapter

    offered = {k: v for k, v in discovered_adapters().items() if v.demo is not None}
    if agents != "auto" and agents not in offered and agents != PLAIN:
        known = ", ".join(["auto", *sorted({*offered, PLAIN})])
        raise ValueError(f"agents must be one of {known}; got {agents!r}")
    if agents == "auto":
        order = sorted(offered.values(), key=lambda info: (-info.demo_priority, info.kind))
        candidates = [info for info in order if info.kind != PLAIN]
    else:
        candidates = [offered[agents]] if agents in offered and agents != PLAIN else []
    for info in candidates:
        try:
            module = import_module(str(info.demo))
        except ImportError:
            if agents != "auto":
                raise
            continue
        return get_adapter(info.kind), module.careful, module.naive, module.tasks, info.kind
    from hbeval_plain import examples as plain_agent

    return None, plain_agent.careful, plain_agent.naive, plain_agent.tasks, PLAIN
