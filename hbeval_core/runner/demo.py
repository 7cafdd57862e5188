"""``hbeval demo``'s job: the battery on the packaged careful and naive support agents.

Works from any folder, since the agents ship inside the package. Each call starts new runs
(agent ids ``demo-careful`` and ``demo-naive``), so repeated demos build the history CSI needs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from .run import DEFAULT_SEED, DEFAULT_TRIALS, ProgressUpdate, run_battery

__all__ = ["DEMO_AGENTS", "demo_agents", "run_demo"]

DEMO_AGENTS: Final = ("careful", "naive")
"""The two temperaments the demo compares, in report order."""


def run_demo(
    out_dir: Path | None = None,
    db: str | None = None,
    *,
    n_scenarios: int = 18,
    trials: int = DEFAULT_TRIALS,
    seed: int = DEFAULT_SEED,
    progress: Callable[[str, ProgressUpdate], None] | None = None,
    agents: str = "auto",
) -> dict[str, dict[str, Any]]:
    """Run the battery on both example agents; returns ``{"careful": report, "naive": report}``.

    ``db`` is a path or ``sqlite:///`` URL; by default the store is ``<out_dir>/.hbeval/hbeval.db``
    (``./.hbeval/hbeval.db`` when ``out_dir`` is the working directory). ``progress`` receives
    the agent's name with each update. Nothing else is written: the caller renders the reports.
    ``agents`` is "auto" (LangGraph when installed, else plain), "langgraph" or "plain".
    """
    from ..faults import Battery
    from ..store import open_store

    adapter, careful, naive, tasks, _framework = demo_agents(agents)
    base = Path(out_dir) if out_dir is not None else Path.cwd()
    store = open_store(db if db is not None else base / ".hbeval" / "hbeval.db")
    factories = {"careful": careful, "naive": naive}
    reports: dict[str, dict[str, Any]] = {}
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
    """The LangGraph support agents when LangGraph is installed, else the plain-Python ones.

    The demo's point is a real framework under faults; the plain agents keep ``hbeval demo``
    working on a core-only install.
    """
    if agents not in ("auto", "langgraph", "plain"):
        raise ValueError(f"agents must be auto, langgraph or plain; got {agents!r}")
    try:
        if agents == "plain":
            raise ImportError("plain agents requested")
        from hbeval_langgraph import LangGraphAdapter
        from hbeval_langgraph.examples import careful, naive, tasks
    except ImportError:
        if agents == "langgraph":
            raise
        from ..examples.plain_agent import careful as p_careful
        from ..examples.plain_agent import naive as p_naive
        from ..examples.plain_agent import tasks as p_tasks

        return None, p_careful, p_naive, p_tasks, "plain"
    return LangGraphAdapter(), careful, naive, tasks, "langgraph"
