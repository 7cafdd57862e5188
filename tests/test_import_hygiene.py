"""hbeval_core imports no agent framework, and stays cheap to import."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

FRAMEWORKS = (
    "langgraph",
    "langchain",
    "langchain_core",
    "crewai",
    "autogen_core",
    "autogen_agentchat",
    "autogen_ext",
)


def run_py(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_core_imports_with_every_framework_hidden() -> None:
    code = f"""
    import importlib, pkgutil, sys
    class Hide:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {FRAMEWORKS!r}:
                raise ImportError("hidden framework: " + name)
            return None
    sys.meta_path.insert(0, Hide())
    import hbeval_core
    from hbeval_core import Monitor
    Monitor().record_step(action="x")
    for mod in pkgutil.walk_packages(hbeval_core.__path__, "hbeval_core."):
        importlib.import_module(mod.name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in {FRAMEWORKS!r})
    assert not leaked, leaked
    print("ok")
    """
    proc = run_py(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_monitor_import_loads_no_heavy_module() -> None:
    proc = run_py(
        """
        import sys
        from hbeval_core import Monitor
        heavy = [m for m in ("pydantic", "numpy", "typer", "rich", "yaml", "cryptography") if m in sys.modules]
        print(heavy)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_registry_and_demo_with_every_framework_hidden(tmp_path: Path) -> None:
    """With no framework importable, the registry still lists the adapters (from their entry
    points) and the demo runs on the plain agents."""
    code = f"""
    import sys
    class Hide:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {FRAMEWORKS!r}:
                raise ImportError("hidden framework: " + name)
            return None
    sys.meta_path.insert(0, Hide())
    from hbeval.runner.registry import (
        TargetKindError, adapter_kinds, detect_adapter, get_adapter, resolve_target,
    )
    print("kinds", adapter_kinds())
    def agent(question):
        return "ok"
    print("detected", detect_adapter(agent), resolve_target(agent).adapter_kind)
    try:
        get_adapter("nosuchframework")
    except TargetKindError as exc:
        print("unknown", str(exc).endswith("known: autogen, crewai, langgraph, plain"))
    from hbeval.demo import demo_agents, run_demo
    print("demo", demo_agents()[-1])
    reports = run_demo({str(tmp_path)!r}, n_scenarios=6, trials=1)
    print("trials", [reports[name].run.trial_count for name in ("careful", "naive")])
    from hbeval.store import open_store
    store = open_store({str(tmp_path / ".hbeval" / "hbeval.db")!r})
    print("adapter", sorted({{r.config["manifest"]["adapter"] for r in store.list_runs()}}))
    store.close()
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in {FRAMEWORKS!r})
    print("leaked", leaked)
    """
    proc = run_py(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "kinds ['autogen', 'crewai', 'langgraph', 'plain']",
        "detected plain plain",
        "unknown True",
        "demo plain",
        "trials [6, 6]",
        "adapter ['plain']",
        "leaked []",
    ]
