"""0.1's documented import paths keep working until 0.2: the same objects, and a warning.

The tables below are every import path that 0.1 (commit 6155d99) documented: its README.md,
docs/*.md, adapters/*/README.md, benchmarks/README.md and examples/, grepped for
``from hbeval_core... import ...``, ``import hbeval_core...``, ``hbeval_core.x.y`` and
``python -m`` / ``pytest -p`` module names. Each moved name imports from its old path as the
very object of its new home (``is``) and warns with a ``DeprecationWarning`` that names the new
path; each name still in the core imports without a warning. The statements run as a user
writes them (``from OLD import NAME`` in a namespace of its own), on a fresh import of the old
path: the forwarding modules of earlier tests are forgotten first.

The new homes are written out here by hand, apart from ``hbeval_core/_moved.py``'s tables, so
that a wrong row there fails here. CHANGELOG.md's migration section says the same to people.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hbeval_core import _moved

ROOT = Path(__file__).resolve().parent.parent

MOVED_NAMES: list[tuple[str, str, str]] = [
    # (old module, name, new home "module:name"); where 0.1 documented it
    ("hbeval_core.runner", "Task", "hbeval_core.contract:Task"),  # docs/memory.md
    ("hbeval_core.runner.task", "Task", "hbeval_core.contract:Task"),  # examples/crewai_*
    ("hbeval_core.runner.task", "ExpectedCall", "hbeval_core.contract:ExpectedCall"),
    ("hbeval_core.runner.checks", "completed_calls", "hbeval_core.contract:completed_calls"),
    ("hbeval_core.runner.checks", "tool_started", "hbeval_core.contract:tool_started"),
    ("hbeval_core.runner.checks", "response_text", "hbeval_core.contract:response_text"),
    ("hbeval_core.runner.outcome", "Outcome", "hbeval_core.contract:Outcome"),  # design-notes
    ("hbeval_core.runner.protocol", "Adapter", "hbeval_core.contract:Adapter"),
    ("hbeval_core.runner.context", "current_trial", "hbeval_core.contract:current_trial"),
    ("hbeval_core.faults.clock", "VirtualClock", "hbeval_core.contract:VirtualClock"),
    ("hbeval_core.contract", "Memory", "hbeval_core.contract:EpisodeMemory"),  # design-notes
    ("hbeval_core.runner.run", "abandoned_threads", "hbeval.runner.run:abandoned_threads"),
    ("hbeval_core.runner.run", "ProgressUpdate", "hbeval.runner.run:ProgressUpdate"),
    ("hbeval_core.runner.registry", "LAZY_ADAPTERS", "hbeval.runner.registry:LAZY_ADAPTERS"),
    ("hbeval_core.runner.registry", "MODULE_PREFIXES", "hbeval.runner.registry:MODULE_PREFIXES"),
    ("hbeval_core.store", "open_store", "hbeval.store:open_store"),  # adapters/langgraph
    ("hbeval_core.store", "MemoryStore", "hbeval.store:InMemoryStore"),  # benchmarks/README
    ("hbeval_core.memory", "open_edm", "hbeval.memory:open_edm"),
    ("hbeval_core.memory", "episode_from_trial", "hbeval.memory:episode_from_trial"),
    ("hbeval_core.testing", "assert_reliable", "hbeval.testing:assert_reliable"),  # README
    ("hbeval_core.live", "serve_metrics", "hbeval.export:serve_metrics"),  # README
    ("hbeval_core.otel", "instrument", "hbeval.otel:instrument"),  # docs/recordings.md
    ("hbeval_core.cli", "main", "hbeval.cli:main"),  # benchmarks/README
    ("hbeval_core.cli", "finish_demo", "hbeval.cli._demo:finish_demo"),  # docs/reports.md
    ("hbeval_core.report.model", "Report", "hbeval.scoring:Report"),  # docs/reports.md
    ("hbeval_core.report.terminal", "ProgressPrinter", "hbeval.report.terminal:ProgressPrinter"),
    ("hbeval_core.pytest_plugin", "assert_gate", "hbeval.testing.pytest_plugin:assert_gate"),
    ("hbeval_core.examples.plain_agent", "careful", "hbeval_plain.examples:careful"),
    ("hbeval_core.examples.plain_agent", "naive", "hbeval_plain.examples:naive"),
    ("hbeval_core.examples.plain_agent", "tasks", "hbeval_plain.examples:tasks"),
    ("hbeval_core.testing.helpdesk", "CarefulScript", "hbeval.testing.helpdesk:CarefulScript"),
    ("hbeval_core.testing.helpdesk", "FORBIDDEN_TOOL", "hbeval.testing.helpdesk:FORBIDDEN_TOOL"),
    ("hbeval_core.testing.helpdesk", "replay_turn", "hbeval.testing.helpdesk:replay_turn"),
    ("hbeval_core.runner.plain", "think", "hbeval_plain:think"),  # 0.1's plain adapter
]

MOVED_MODULES: list[tuple[str, str]] = [
    # (old module path, the module that now holds its names)
    ("hbeval_core.runner.checks", "hbeval_core.contract"),  # README
    ("hbeval_core.testing.helpdesk", "hbeval.testing.helpdesk"),  # README, docs/architecture
    ("hbeval_core.testing.conformance", "hbeval.testing.conformance"),  # docs/architecture
    ("hbeval_core.examples.plain_agent", "hbeval_plain.examples"),  # examples/plain_*
    ("hbeval_core.otel", "hbeval.otel"),  # docs/recordings.md
    ("hbeval_core.otel.auto", "hbeval.otel.auto"),
    ("hbeval_core.pytest_plugin", "hbeval.testing.pytest_plugin"),  # docs/reports.md
    ("hbeval_core.memory.cli", "hbeval.cli._memory"),  # docs/memory.md
    ("hbeval_core.cli._schema", "hbeval.cli._schema"),  # docs/architecture.md
    ("hbeval_core.report.cli", "hbeval.cli"),  # docs/design-notes.md: the old CLI aliases
    ("hbeval_core.runner.cli_battery", "hbeval.cli._battery"),
    ("hbeval_core.importers.cli", "hbeval.cli._importers"),
    ("hbeval_core.mcp_server.cli", "hbeval.cli._mcp"),
    ("hbeval_core.demo", "hbeval.cli._demo"),
    ("hbeval_core.runner.demo", "hbeval.demo"),  # docs/design-notes.md
    ("hbeval_core.derive", "hbeval_core.live.derive"),  # docs/design-notes.md
    ("hbeval_core.monitor", "hbeval_core.live.monitor"),
]

CORE_NAMES: list[tuple[str, str, str]] = [
    # (module, name, its home "module:name"): documented in 0.1, still in the core: no warning
    ("hbeval_core", "Monitor", "hbeval_core.live.monitor:Monitor"),  # README
    ("hbeval_core", "Outcome", "hbeval_core.contract:Outcome"),  # README (verifiers.py)
    ("hbeval_core.faults", "Battery", "hbeval_core.faults.battery:Battery"),  # examples/plain_*
    (
        "hbeval_core.faults",
        "FaultInjector",
        "hbeval_core.faults.runtime:FaultInjector",
    ),  # adapters/langgraph
    ("hbeval_core.faults", "FaultPlan", "hbeval_core.faults.plans:FaultPlan"),
    ("hbeval_core.faults", "FaultSpec", "hbeval_core.faults.plans:FaultSpec"),
    (
        "hbeval_core.faults",
        "CascadePlan",
        "hbeval_core.faults.plans:CascadePlan",
    ),  # docs/battery.md
    ("hbeval_core.faults", "ToolCallError", "hbeval_core.faults.boundary:ToolCallError"),
    ("hbeval_core.faults", "faultable", "hbeval_core.faults.boundary:faultable"),
    ("hbeval_core.capture", "run_to_end", "hbeval_core.capture:run_to_end"),  # design-notes
    (
        "hbeval_core.capture",
        "BaseRecorder",
        "hbeval_core.capture:BaseRecorder",
    ),  # docs/architecture.md
    ("hbeval_core.capture", "UNWATCHED", "hbeval_core.capture:UNWATCHED"),
    ("hbeval_core.contract", "Adapter", "hbeval_core.contract:Adapter"),  # docs/design-notes.md
    ("hbeval_core.contract", "TrialResult", "hbeval_core.contract:TrialResult"),
    ("hbeval_core.live", "derive", "hbeval_core.live.derive"),  # docs/architecture.md
]


def _is_forward(module: object) -> bool:
    return isinstance(module, _moved._Forward)


@pytest.fixture(autouse=True)
def fresh_old_paths() -> Iterator[None]:
    """Forget every forwarding module for the test (so importing an old path runs and warns
    again), and put the ones other tests hold back afterwards."""
    saved = {k: m for k, m in sys.modules.items() if _is_forward(m)}

    def forget() -> None:
        for key in [k for k, m in sys.modules.items() if _is_forward(m)]:
            parent, _, child = key.rpartition(".")
            holder = sys.modules.get(parent)
            if holder is not None and _is_forward(holder.__dict__.get(child)):
                delattr(holder, child)
            del sys.modules[key]

    forget()
    yield
    forget()
    sys.modules.update(saved)


def run_as_user(statement: str) -> tuple[dict[str, Any], list[warnings.WarningMessage]]:
    """Run ``statement`` as a user's module would; its namespace and every warning it gave."""
    namespace: dict[str, Any] = {"__name__": "users_module"}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        exec(compile(statement, "users_module.py", "exec"), namespace)
    return namespace, seen


def deprecations(seen: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in seen if w.category is DeprecationWarning]


def home(path: str) -> Any:
    module, _, name = path.partition(":")
    found = importlib.import_module(module)
    return getattr(found, name) if name else found


@pytest.mark.parametrize(("old", "name", "new"), MOVED_NAMES, ids=lambda v: str(v))
def test_a_moved_name_is_the_same_object_and_warns(old: str, name: str, new: str) -> None:
    namespace, seen = run_as_user(f"from {old} import {name} as value")
    expected = home(new)
    if home(new) is expected:
        assert namespace["value"] is expected
    else:  # built on each read (registry.LAZY_ADAPTERS, from the entry points): equal
        assert namespace["value"] == expected
    warned = deprecations(seen)
    new_module = new.partition(":")[0]
    assert any(new_module in str(w.message) for w in warned), [str(w.message) for w in seen]
    # Said about the user's line, so ``-W error::DeprecationWarning:users_module`` catches it.
    assert {w.filename for w in warned} == {"users_module.py"}
    assert all(f"goes in {_moved.REMOVED_IN}" in str(w.message) for w in warned)


@pytest.mark.parametrize(("old", "new"), MOVED_MODULES, ids=lambda v: str(v))
def test_a_moved_module_forwards_every_public_name(old: str, new: str) -> None:
    namespace, seen = run_as_user(f"import {old} as module")
    module, target = namespace["module"], importlib.import_module(new)
    assert any(f"moved to {new}" in str(w.message) for w in deprecations(seen))
    public = getattr(target, "__all__", None) or [n for n in vars(target) if not n[0] == "_"]
    assert public
    for name in public:
        assert getattr(module, name) is getattr(target, name), name
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


@pytest.mark.parametrize(("module", "name", "defined"), CORE_NAMES, ids=lambda v: str(v))
def test_a_name_still_in_the_core_imports_without_a_warning(
    module: str, name: str, defined: str
) -> None:
    namespace, seen = run_as_user(f"from {module} import {name} as value")
    assert deprecations(seen) == []
    assert namespace["value"] is home(defined)


def test_a_path_that_never_existed_is_not_made_up() -> None:
    missing = pytest.raises(ModuleNotFoundError, match=r"hbeval_core\.runner\.no_such_module")
    with missing, pytest.warns(DeprecationWarning, match="hbeval_core.runner moved"):
        importlib.import_module("hbeval_core.runner.no_such_module")
    with pytest.raises(ImportError):
        run_as_user("from hbeval_core.store import no_such_name")


def test_the_old_run_battery_keeps_its_signature_and_returns_a_dict() -> None:
    import hbeval
    from hbeval_core.faults import Battery
    from hbeval_plain.examples import careful, tasks

    namespace, seen = run_as_user(
        "from hbeval_core.runner import run_battery, arun_battery\n"
        "from hbeval_core.runner.run import run_battery as run_battery_of_run"
    )
    assert namespace["run_battery"] is namespace["run_battery_of_run"]
    messages = [str(w.message) for w in deprecations(seen)]
    assert any("hbeval.run_battery(target" in m and "Report" in m for m in messages), messages
    assert any("hbeval.arun_battery(target" in m for m in messages), messages

    battery = Battery.hbeval(n_scenarios=6, seed=42)
    old = namespace["run_battery"](None, careful, tasks, battery, trials=1, agent_id="old")
    assert isinstance(old, dict)
    assert {"format", "verdict", "metrics", "undefined", "trials", "fingerprints"} <= set(old)
    assert old["format"] == "hbeval-report/1" and len(old["trials"]) == 6
    report = hbeval.run_battery(careful, tasks=tasks, battery=battery, trials=1, agent_id="old")
    # hbeval.run_battery gives the typed Report (its dict is Report.to_dict()): the same figures.
    new = report if isinstance(report, dict) else report.to_dict()
    assert set(new) == set(old)
    assert (new["verdict"], new["metrics"]) == (old["verdict"], old["metrics"])
    awaited = asyncio.run(
        namespace["arun_battery"](None, careful, tasks, battery, trials=1, agent_id="old")
    )
    assert isinstance(awaited, dict) and awaited["metrics"] == old["metrics"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HBEVAL_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_python_dash_m_on_an_old_path_runs_the_new_module(tmp_path: Path) -> None:
    old = _run("-m", "hbeval_core.memory.cli", "--help", cwd=tmp_path)
    new = _run("-m", "hbeval.cli._memory", "--help", cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    assert old.stdout == new.stdout
    assert "DeprecationWarning" in old.stderr and "python -m hbeval.cli._memory" in old.stderr
    # ``python -m hbeval_core.cli._schema`` rewrites the shipped schema files: only resolve it.
    with pytest.warns(DeprecationWarning, match="hbeval_core.cli moved"):
        spec = importlib.util.find_spec("hbeval_core.cli._schema")
    assert spec is not None and spec.submodule_search_locations is None
    code = spec.loader.get_code("hbeval_core.cli._schema")  # type: ignore[union-attr]
    assert "hbeval.cli._schema" in code.co_consts


def test_an_old_path_in_python_dash_c_and_the_repl(tmp_path: Path) -> None:
    """``__main__`` there has no source a warning could quote; the import must not fail on it."""
    line = "from hbeval_core.store import open_store"
    for done in (
        _run("-c", line, cwd=tmp_path),
        subprocess.run(
            [sys.executable, "-i"],
            input=line + "\n",
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        ),
    ):
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "DeprecationWarning: hbeval_core.store moved to hbeval.store" in done.stderr


def test_an_import_for_its_effect_still_has_it(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    code = "import sys, hbeval_core.otel.auto\nprint(sys.modules['hbeval.otel.auto'].processor)"
    done = _run("-c", code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "HBEvalSpanProcessor" in done.stdout  # attached on import, as 0.1's was


def test_pytest_dash_p_with_the_old_plugin_path(tmp_path: Path) -> None:
    (tmp_path / "test_gate.py").write_text(
        textwrap.dedent(
            """
            def test_the_fixture_is_there(hbeval_gate):
                assert callable(hbeval_gate)
            """
        ),
        encoding="utf-8",
    )
    env = _env() | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # "without the entry point"
    done = _run("-m", "pytest", "-q", "-p", "hbeval_core.pytest_plugin", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
