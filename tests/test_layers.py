"""The layers of docs/architecture.md, as a test: two houses, adapters on the core, no cycles.

* **The core imports nothing of the product.** No module of ``hbeval_core`` imports ``hbeval``
  or an adapter, at any depth of a function, except ``hbeval_core._moved`` (0.1's import paths,
  forwarded by name until 0.2), which is exempt by name.
* **An adapter's capture imports only the core.** Of an adapter package, only its ``examples``
  and ``testing`` modules and its named bridge to the product (``BRIDGES``) may import
  ``hbeval``, and the bridge only inside functions.
* **No cycles**, of any length, between files or between subpackages (``hbeval.runner``,
  ``hbeval_core.faults``, an adapter package), whether the import is at the top of a file or
  inside a function. An import under ``if TYPE_CHECKING:`` is for the type checker only and
  does not count; a lazy export table (``_EXPORTS = {name: "module"}``) and
  ``import_module("a.literal")`` do. (A module named by an entry point is found at run time,
  like any plugin, and is no edge.)

The graph is read from the source with ``ast``, nothing is imported, and each rule is shown to
fail on a planted import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = "hbeval_core"
PRODUCT = "hbeval"
EXEMPT = {"hbeval_core._moved"}
"""Modules the rules exempt by name: the compatibility module names the product as strings."""
ADAPTER_MODULES_ON_THE_PRODUCT = ("examples", "testing")
"""Adapter modules that are not capture: demo agents and test helpers may use the product."""
BRIDGES = {"hbeval_crewai._faultrun"}
"""The one module per adapter that runs a battery from the adapter's own API (CrewAI's
``FaultRun``): it imports the product lazily, inside its functions."""


def package_roots(root: Path = ROOT) -> dict[str, Path]:
    """Import name -> folder of every package this checkout ships."""
    roots = {CORE: root / CORE, PRODUCT: root / PRODUCT}
    for folder in sorted((root / "adapters").iterdir()):
        if (folder / "__init__.py").is_file():
            roots[f"hbeval_{folder.name}"] = folder
    return roots


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    lazy: bool
    """Inside a function (or a lazy export table), not at the top of the file."""


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    packages: set[str] = field(default_factory=set)
    edges: list[Edge] = field(default_factory=list)


def _module_names(roots: dict[str, Path]) -> tuple[dict[str, Path], set[str]]:
    modules: dict[str, Path] = {}
    packages: set[str] = set()
    for top, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
                packages.add(".".join(parts))
            modules[".".join(parts)] = path
    return modules, packages


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> Iterator[tuple[ast.AST, bool]]:
    """Every import node (and lazy export table) with whether it sits inside a function."""

    def walk(node: ast.AST, lazy: bool) -> Iterator[tuple[ast.AST, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    yield from walk_one(other, lazy)
                continue
            yield from walk_one(child, lazy)

    def walk_one(node: ast.AST, lazy: bool) -> Iterator[tuple[ast.AST, bool]]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, lazy
        elif isinstance(node, ast.Assign) and _is_export_table(node):
            yield node, True
        elif _is_literal_import(node):
            yield node, True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from walk(node, True)
        else:
            yield from walk(node, lazy)

    yield from walk(tree, False)


def _is_export_table(node: ast.Assign) -> bool:
    return any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets) and isinstance(
        node.value, ast.Dict
    )


def _is_literal_import(node: ast.AST) -> bool:
    """``import_module("x.y")`` or ``importlib.import_module("x.y")`` with a string literal."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    first = node.args[0]
    return (
        name == "import_module"
        and isinstance(first, ast.Constant)
        and isinstance(first.value, str)
        and not first.value.startswith(".")
    )


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The shipped module ``name`` is (or lies in), or None for anything else."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(
    node: ast.AST, source: str, is_package: bool, modules: dict[str, Path]
) -> Iterable[str]:
    base = source if is_package else source.rpartition(".")[0]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            parts = base.split(".")
            parts = parts[: len(parts) - (node.level - 1)]
            module = ".".join([*parts, node.module] if node.module else parts)
        else:
            module = node.module or ""
        found = []
        for alias in node.names:
            full = f"{module}.{alias.name}"
            found.append(full if full in modules else module)
        return found
    if isinstance(node, ast.Call):
        first = node.args[0]
        assert isinstance(first, ast.Constant)
        return [str(first.value)]
    assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
    out = []
    for value in node.value.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            target = value.value
            if target.startswith("."):
                dots = len(target) - len(target.lstrip("."))
                parts = source.split(".") if is_package else base.split(".")
                parts = parts[: len(parts) - (dots - 1)]
                target = ".".join([*parts, target.lstrip(".")])
            out.append(target)
    return out


def build_graph(roots: dict[str, Path]) -> Graph:
    modules, packages = _module_names(roots)
    graph = Graph(modules, packages)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, lazy in _imports(tree):
            for target in _targets(node, name, name in packages, modules):
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != name:
                    graph.edges.append(Edge(name, resolved, getattr(node, "lineno", 0), lazy))
    return graph


def _top(module: str) -> str:
    return module.split(".")[0]


def core_violations(graph: Graph) -> list[str]:
    return [
        f"{e.source}:{e.line} imports {e.target}"
        for e in graph.edges
        if _top(e.source) == CORE and _top(e.target) != CORE and e.source not in EXEMPT
    ]


def adapter_violations(graph: Graph) -> list[str]:
    found = []
    for e in graph.edges:
        top = _top(e.source)
        if top in (CORE, PRODUCT) or _top(e.target) != PRODUCT:
            continue
        leaf = e.source.rpartition(".")[2]
        if leaf in ADAPTER_MODULES_ON_THE_PRODUCT:
            continue
        if e.source in BRIDGES and e.lazy:
            continue
        found.append(f"{e.source}:{e.line} imports {e.target} (an adapter's capture)")
    for e in graph.edges:  # adapters never import one another
        a, b = _top(e.source), _top(e.target)
        if a != b and a not in (CORE, PRODUCT) and b not in (CORE, PRODUCT):
            found.append(f"{e.source}:{e.line} imports another adapter, {e.target}")
    return found


def subpackage_of(module: str, packages: set[str]) -> str:
    """The unit a cycle is counted between: ``hbeval.runner``, ``hbeval_core.faults``,
    ``hbeval_core.vocab``, an adapter package."""
    parts = module.split(".")
    if _top(module) not in (CORE, PRODUCT):
        return parts[0]
    return ".".join(parts[:2])


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def file_cycles(graph: Graph) -> list[list[str]]:
    return cycles((e.source, e.target) for e in graph.edges if e.source not in EXEMPT)


def subpackage_cycles(graph: Graph) -> list[list[str]]:
    return cycles(
        (subpackage_of(e.source, graph.packages), subpackage_of(e.target, graph.packages))
        for e in graph.edges
        if e.source not in EXEMPT
    )


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(package_roots())


def test_the_core_imports_nothing_of_the_product(graph: Graph) -> None:
    assert not core_violations(graph)


def test_adapters_capture_on_the_core_alone(graph: Graph) -> None:
    assert not adapter_violations(graph)


def test_no_file_imports_itself_through_others(graph: Graph) -> None:
    assert not file_cycles(graph)


def test_no_subpackage_imports_itself_through_others(graph: Graph) -> None:
    assert not subpackage_cycles(graph)


def test_the_graph_sees_every_package(graph: Graph) -> None:
    assert {_top(m) for m in graph.modules} >= {CORE, PRODUCT, "hbeval_plain"}
    assert len(graph.edges) > 1000  # the whole tree was read, lazy imports included


# --------------------------------------------------------------------------- planted imports
def _planted(tmp_path: Path, files: dict[str, str]) -> Graph:
    """A copy of the shipped tree with ``files`` (relative path -> source) added or replaced."""
    import shutil

    for name in (CORE, PRODUCT, "adapters"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, text in files.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return build_graph(package_roots(tmp_path))


def test_a_planted_back_import_from_the_core_fails(tmp_path: Path) -> None:
    graph = _planted(
        tmp_path,
        {"hbeval_core/_planted.py": "def f():\n    from hbeval.runner import run_battery\n"},
    )
    assert core_violations(graph) == ["hbeval_core._planted:2 imports hbeval.runner"]


def test_a_planted_import_under_type_checking_is_allowed(tmp_path: Path) -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import hbeval.scoring\n"
    graph = _planted(tmp_path, {"hbeval_core/_planted.py": source})
    assert not core_violations(graph)


def test_a_planted_export_table_into_the_product_fails(tmp_path: Path) -> None:
    source = '_EXPORTS = {"Report": "hbeval.scoring._report_model"}\n'
    graph = _planted(tmp_path, {"hbeval_core/_planted.py": source})
    assert core_violations(graph) == ["hbeval_core._planted:1 imports hbeval.scoring._report_model"]


def test_a_planted_capture_import_of_the_product_fails(tmp_path: Path) -> None:
    graph = _planted(
        tmp_path, {"adapters/langgraph/_planted.py": "from hbeval.store import open_store\n"}
    )
    assert adapter_violations(graph) == [
        "hbeval_langgraph._planted:1 imports hbeval.store (an adapter's capture)"
    ]


def test_a_planted_cycle_between_files_fails(tmp_path: Path) -> None:
    graph = _planted(
        tmp_path,
        {
            "hbeval/runner/_planted_a.py": "def f():\n    from . import _planted_b\n",
            "hbeval/runner/_planted_b.py": "from . import _planted_c\n",
            "hbeval/runner/_planted_c.py": "from ._planted_a import f\n",
        },
    )
    assert [
        "hbeval.runner._planted_a",
        "hbeval.runner._planted_b",
        "hbeval.runner._planted_c",
    ] in file_cycles(graph)


def test_a_planted_literal_import_module_counts(tmp_path: Path) -> None:
    source = "import importlib\n\ndef f():\n    return importlib.import_module('hbeval.cli')\n"
    graph = _planted(tmp_path, {"hbeval_core/_planted.py": source})
    assert core_violations(graph) == ["hbeval_core._planted:4 imports hbeval.cli"]


def test_a_planted_cycle_between_subpackages_fails(tmp_path: Path) -> None:
    graph = _planted(
        tmp_path, {"hbeval/store/_planted.py": "def f():\n    from ..runner import registry\n"}
    )
    found = subpackage_cycles(graph)
    assert any({"hbeval.store", "hbeval.runner"} <= set(c) for c in found), found
