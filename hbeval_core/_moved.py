"""Old import paths of 0.1, kept working until 0.2: one compatibility module, and nothing else.

In 0.1 the product (runner, store, scoring, report, cli, importers, export, otel, replay,
mcp_server, memory, testing) lived inside ``hbeval_core``; it is now the package ``hbeval``, and
the plain-callable adapter is ``hbeval_plain``. An import of an old path still works and warns
(``DeprecationWarning``): ``from hbeval_core.runner import Task`` gives the very object
``hbeval_core.contract.Task`` is. The old modules are not copies and not aliases swapped into
``sys.modules``: each is a small module of its own whose attributes are looked up, on first use,
in the module that now holds them.

Two mechanisms, both driven by the tables below:

* a meta path finder (appended, so a real module always wins) answers imports of the moved
  module paths (``MODULES``, matched by prefix) with such a forwarding module. Importing it
  imports the new module too (``import hbeval_core.otel.auto`` still attaches its processor),
  a path under an old one that does not exist under the new one is a ModuleNotFoundError, and
  ``python -m OLD.PATH`` warns and runs the new module as ``__main__``;
* a core package that lost names (``hbeval_core.live`` lost ``serve_metrics``) forwards them
  from its own ``__getattr__`` through ``moved_name``.

This module is the one place the core names the product, and only as strings: the layer test
exempts it by name. It goes in 0.2, with the tables.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from typing import Any, Final

__all__ = ["MODULES", "NAMES", "install", "moved_name"]

REMOVED_IN: Final = "0.2"
LEGACY: Final = "hbeval.runner._legacy:"
"""Where 0.1's ``run_battery(adapter, target, tasks, battery) -> dict`` lives until 0.2."""

MODULES: Final[dict[str, str]] = {
    # the product, now the package ``hbeval``
    **{
        f"hbeval_core.{name}": f"hbeval.{name}"
        for name in (
            "cli",
            "export",
            "importers",
            "mcp_server",
            "memory",
            "otel",
            "replay",
            "report",
            "runner",
            "scoring",
            "store",
            "testing",
        )
    },
    "hbeval_core.pytest_plugin": "hbeval.testing.pytest_plugin",
    "hbeval_core.demo": "hbeval.cli._demo",
    "hbeval_core.examples": "hbeval_plain",
    "hbeval_core.examples.plain_agent": "hbeval_plain.examples",
    # the plain adapter, now ``hbeval_plain``
    "hbeval_core.runner.plain": "hbeval_plain",
    # old aliases inside the core
    "hbeval_core.derive": "hbeval_core.live.derive",
    "hbeval_core.monitor": "hbeval_core.live.monitor",
    "hbeval_core.faults.clock": "hbeval_core.contract",
    "hbeval_core.runner.checks": "hbeval_core.contract",
    "hbeval_core.runner.task": "hbeval_core.contract",
    "hbeval_core.runner.outcome": "hbeval_core.contract",
    "hbeval_core.runner.protocol": "hbeval_core.contract",
    "hbeval_core.runner.context": "hbeval_core.contract",
    "hbeval_core.runner.demo": "hbeval.demo",
    "hbeval_core.runner.cli_battery": "hbeval.cli._battery",
    "hbeval_core.report.model": "hbeval.scoring",
    "hbeval_core.report.cli": "hbeval.cli",
    "hbeval_core.memory.cli": "hbeval.cli._memory",
    "hbeval_core.export.cli": "hbeval.cli._export",
    "hbeval_core.importers.cli": "hbeval.cli._importers",
    "hbeval_core.replay.cli": "hbeval.cli._replay",
    "hbeval_core.mcp_server.cli": "hbeval.cli._mcp",
    "hbeval_core.memory._adapters": "hbeval.memory._from_trial",
}
"""Old module path -> the module that now holds its names. A path under an old one maps under
the new one (``hbeval_core.runner.loader`` -> ``hbeval.runner.loader``) unless listed itself."""

NAMES: Final[dict[tuple[str, str], str]] = {
    # 0.1's run_battery(adapter, target, tasks, battery) returned the report as a dict.
    ("hbeval_core.runner", "run_battery"): "hbeval.runner._legacy:run_battery",
    ("hbeval_core.runner.run", "run_battery"): "hbeval.runner._legacy:run_battery",
    ("hbeval_core.runner", "arun_battery"): "hbeval.runner._legacy:arun_battery",
    ("hbeval_core.runner._async", "arun_battery"): "hbeval.runner._legacy:arun_battery",
    ("hbeval_core.runner", "run_demo"): "hbeval.demo:run_demo",
    **{
        ("hbeval_core.runner", name): f"hbeval_plain:{name}"
        for name in (
            "PlainAdapter",
            "ToolCallError",
            "claim",
            "model_input",
            "precedents",
            "replan",
            "think",
            "tool",
        )
    },
    **{
        ("hbeval_core.runner", name): f"hbeval_core.contract:{name}"
        for name in (
            "Adapter",
            "BudgetExceeded",
            "Budgets",
            "ExpectedCall",
            "InfraError",
            "Message",
            "Outcome",
            "Task",
            "ToolCall",
            "TrialCancelled",
            "TrialContext",
            "TrialResult",
            "TrialStop",
            "VirtualClock",
            "current_trial",
        )
    },
    ("hbeval_core.examples", "plain_agent"): "hbeval_plain.examples",
    ("hbeval_core.live", "serve_metrics"): "hbeval.export._prometheus:serve_metrics",
    ("hbeval_core.live", "LiveMetrics"): "hbeval.export._prometheus:LiveMetrics",
    ("hbeval_core.live", "DEFAULT_LATENCY_BUCKETS"): (
        "hbeval.export._prometheus:DEFAULT_LATENCY_BUCKETS"
    ),
    ("hbeval_core.live", "DEFAULT_MAX_AGENTS"): "hbeval.export._prometheus:DEFAULT_MAX_AGENTS",
    ("hbeval_core.live", "LIVE_GAUGE_METRICS"): "hbeval.export._prometheus:LIVE_GAUGE_METRICS",
    ("hbeval_core.contract", "Memory"): "hbeval_core.contract:EpisodeMemory",
    ("hbeval_core.store", "MemoryStore"): "hbeval.store:InMemoryStore",
    ("hbeval_core.store.memory", "MemoryStore"): "hbeval.store:InMemoryStore",
    ("hbeval_core.memory", "PRECEDENTS_HEADER"): "hbeval_core.contract:PRECEDENTS_HEADER",
    ("hbeval_core.memory", "precedents_text"): "hbeval_core.contract:precedents_text",
    ("hbeval_core.memory", "recall_precedents"): "hbeval_core.contract:recall_precedents",
    ("hbeval_core.memory", "precedent_lookup"): "hbeval_core.contract:precedent_lookup",
    ("hbeval_core.memory._adapters", "PRECEDENTS_HEADER"): (
        "hbeval_core.contract:PRECEDENTS_HEADER"
    ),
    ("hbeval_core.memory._adapters", "ATTR_MEMORY_RECALL"): (
        "hbeval_core.contract:ATTR_MEMORY_RECALL"
    ),
    ("hbeval_core.memory._adapters", "precedents_text"): "hbeval_core.contract:precedents_text",
    ("hbeval_core.memory._adapters", "recall_precedents"): (
        "hbeval_core.contract:recall_precedents"
    ),
    ("hbeval_core.memory._adapters", "precedent_lookup"): ("hbeval_core.contract:precedent_lookup"),
    ("hbeval_core.memory._adapters", "Recall"): "hbeval_core.contract:Recall",
    ("hbeval_core.report.cli", "run"): "hbeval.cli._demo:run",
    ("hbeval_core.cli", "finish_demo"): "hbeval.cli._demo:finish_demo",
    ("hbeval_core.cli", "load_reports"): "hbeval.cli._report:load_reports",
    ("hbeval_core.cli", "score_trace"): "hbeval_core.live._document:score_trace",
    ("hbeval_core.cli", "parse_halt"): "hbeval_core.live._policy:parse_halt",
    ("hbeval_core.cli", "runs_document"): "hbeval.store._listing:runs_document",
    ("hbeval_core.cli", "open_memory"): "hbeval.memory._open:open_memory",
}
"""(old module, name) -> ``"new.module:name"`` (or ``"new.module"`` for a module) where a name
moved apart from its module or was renamed."""


def _new_module(old: str) -> str | None:
    """The module an old module path now forwards to, or None when it did not move."""
    if old in MODULES:
        return MODULES[old]
    head = old.rpartition(".")[0]
    while head:
        if head in MODULES:
            return MODULES[head] + old[len(head) :]
        head = head.rpartition(".")[0]
    return None


def _caller_frame() -> types.FrameType | None:
    """The first frame outside this module and the import machinery: the import statement."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        forwarding = frame.f_code.co_name == "__getattr__" and name.startswith("hbeval_core")
        if name != __name__ and not name.startswith("importlib") and not forwarding:
            return frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _warn(message: str) -> None:
    """Warn on behalf of the import statement (so ``default::DeprecationWarning:__main__``
    shows it in a script or the REPL).

    No ``module_globals``: for ``__main__`` under ``python -c`` or the REPL, its loader is
    ``BuiltinImporter``, and linecache asking it for source raised ImportError out of the import.
    """
    frame = _caller_frame()
    if frame is None:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return
    warnings.warn_explicit(
        message,
        DeprecationWarning,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=frame.f_globals.get("__name__"),
        registry=frame.f_globals.setdefault("__warningregistry__", {}),
    )


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    value = importlib.import_module(module)
    return getattr(value, name) if name else value


def moved_name(module: str, name: str) -> Any:
    """The value an old ``module.name`` now has, with its warning; AttributeError if none."""
    target = NAMES.get((module, name))
    if target is not None:
        if target.startswith(LEGACY):
            _warn(
                f"{module}.{name} keeps 0.1's signature and dict return until {REMOVED_IN}; "
                f"use hbeval.{name}(target, *, tasks=..., battery=...), which returns a Report"
            )
        else:
            _warn(
                f"{module}.{name} moved to {target.replace(':', '.')}; "
                f"the old path goes in {REMOVED_IN}"
            )
        return _resolve(target)
    new = _new_module(module)
    if new is None or name.startswith("__"):
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(new), name)
    except AttributeError:
        raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
    return value


class _Forward(types.ModuleType):
    """An old module path: each attribute is looked up where it now lives."""

    def __getattr__(self, name: str) -> Any:
        if name == "__all__":
            new = _new_module(self.__name__)
            return list(getattr(importlib.import_module(new), "__all__", ())) if new else []
        value = moved_name(self.__name__, name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        new = _new_module(self.__name__)
        return sorted(dir(importlib.import_module(new))) if new else []


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _Forward(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        new = _new_module(module.__name__)
        assert new is not None  # the finder answers only for moved paths
        _warn(
            f"{module.__name__} moved to {new}; import it from there "
            f"(the old path goes in {REMOVED_IN})"
        )
        # Run the new module now, as importing the old path did: a module imported for its
        # effect (``import hbeval_core.otel.auto`` attaches a span processor) still has it.
        importlib.import_module(new)

    def get_code(self, fullname: str) -> types.CodeType:
        """``python -m OLD.PATH``: warn (from ``__main__``, so it shows), then run the new
        module as ``__main__`` with the same arguments."""
        new = _new_module(fullname)
        old_cmd, new_cmd = (n.removesuffix(".__main__") for n in (fullname, str(new)))
        message = (
            f"{old_cmd} moved to {new_cmd}; run python -m {new_cmd} "
            f"(the old path goes in {REMOVED_IN})"
        )
        source = (
            "import runpy, warnings\n"
            f"warnings.warn({message!r}, DeprecationWarning)\n"
            f"runpy.run_module({new!r}, run_name='__main__', alter_sys=True)\n"
        )
        return compile(source, f"<{fullname}: moved to {new}>", "exec")


def _is_package(old: str, new: str) -> bool | None:
    """Whether the forwarding module for ``old`` is a package (it is when ``new`` is one, or
    when older paths sit under it); None when ``new`` does not exist."""
    try:
        spec = importlib.util.find_spec(new)
    except ModuleNotFoundError as err:
        if err.name is None or not (new == err.name or new.startswith(f"{err.name}.")):
            raise  # the new module exists but lacks a dependency: say so, as its import would
        return None
    if spec is None:
        return None
    nested = any(key.startswith(f"{old}.") for key in MODULES)
    return spec.submodule_search_locations is not None or nested


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = _new_module(fullname) if fullname.startswith("hbeval_core.") else None
        if new is None:
            return None
        package = _is_package(fullname, new)
        if package is None:
            return None  # a path under an old one that never existed: ModuleNotFoundError
        return importlib.machinery.ModuleSpec(fullname, _LOADER, is_package=package)


_LOADER: Final = _Loader()
_FINDER: Final = _Finder()


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
