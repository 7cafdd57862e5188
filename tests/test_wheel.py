"""The wheel as a user gets it: built from this checkout, installed with ``[langgraph]`` into a
fresh venv outside it, and ``hbeval demo`` run there, away from the source.

The editable install every other test uses hides packaging mistakes (0.1's wheel left out
``hbeval_core.testing.helpdesk`` and its ``hbeval demo`` exited 2), so this test looks only at the
wheel: every module and data file of the source is in it, its build says nothing deprecated about
the license, and the installed ``hbeval demo`` prints the seed-42 figures that the reference spec,
the demo's own per-trial records and the README's table agree on.

The tests that build and install are marked ``slow`` (one build, one venv, one install resolved
from pip's cache or the package index: under a minute when cached). ``scripts/test.sh`` runs
them with the rest of the suite, as CI does (the last test here keeps it so); ``-m "not slow"``
leaves them out of a quick local run.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

slow = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 900
_NOT_COPIED = {".venv", ".git", "build", "dist", ".hbeval", "test-output"}
"""Top-level folders of a checkout that are not source (a stale ``build/lib`` would leak old
files into the wheel, which is why the wheel is built from a clean copy)."""


def package_folders() -> dict[str, Path]:
    """Import name -> source folder of every package the distribution ships."""
    folders = {"hbeval": ROOT / "hbeval", "hbeval_core": ROOT / "hbeval_core"}
    for folder in sorted((ROOT / "adapters").iterdir()):
        if (folder / "__init__.py").is_file():
            folders[f"hbeval_{folder.name}"] = folder
    return folders


def expected_files() -> tuple[set[str], set[str]]:
    """``(modules, data)``: the wheel paths every ``.py`` file and every data file of the source
    must have (an adapter's README is documentation, not package data)."""
    modules: set[str] = set()
    data: set[str] = set()
    for name, folder in package_folders().items():
        for path in folder.rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".pyc", ".md"):
                continue
            wheel_path = f"{name}/{path.relative_to(folder).as_posix()}"
            (modules if path.suffix == ".py" else data).add(wheel_path)
    return modules, data


def _ignore(folder: str, names: list[str]) -> set[str]:
    top = Path(folder).resolve() == ROOT
    return {
        n
        for n in names
        if n == "__pycache__" or n.endswith(".egg-info") or (top and n in _NOT_COPIED)
    }


@dataclass(frozen=True)
class Built:
    wheel: Path
    log: str
    """pip's verbose output: the build backend's warnings are in it."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel, built with the venv's setuptools (no build isolation, so no download) from a
    clean copy of the checkout, which leaves the checkout untouched."""
    source = tmp_path_factory.mktemp("source") / "hbeval"
    shutil.copytree(ROOT, source, ignore=_ignore)
    out = tmp_path_factory.mktemp("dist")
    args = ["wheel", "-v", "--no-deps", "--no-build-isolation", "-w", str(out), "."]
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, f"pip wheel failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    (wheel,) = out.glob("hbeval-*.whl")
    return Built(wheel=wheel, log=done.stdout + done.stderr)


def user_env(venv: Path) -> dict[str, str]:
    """The environment of a user with only the fresh venv: nothing from this checkout or its
    venv on the path, no hbeval settings from the test run."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
        and not k.startswith("HBEVAL_")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONNOUSERSITE"] = "1"
    env.update(
        CREWAI_DISABLE_TELEMETRY="true", OTEL_SDK_DISABLED="true", CREWAI_TRACING_ENABLED="false"
    )
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, built: Built) -> Path:
    """A fresh venv outside the checkout with ``hbeval[langgraph]`` installed from the wheel, the
    way the README says (langgraph and the rest come from pip's cache or the index)."""
    home = tmp_path_factory.mktemp("venv")
    assert ROOT not in home.resolve().parents
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, timeout=TIMEOUT)
    requirement = f"hbeval[langgraph] @ {built.wheel.as_uri()}"
    done = subprocess.run(
        [str(home / "bin" / "python"), "-m", "pip", "install", "-q", requirement],
        cwd=home,
        env=user_env(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, (
        f"pip install failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return home


@slow
def test_the_wheel_holds_every_module_and_data_file(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as whl:
        names = set(whl.namelist())
        top_level = set(whl.read("hbeval-0.1.0.dist-info/top_level.txt").decode().split())
    modules, data = expected_files()
    in_wheel = {n for n in names if n.endswith(".py")}
    assert sorted(modules - in_wheel) == [], "modules left out of the wheel"
    assert sorted(in_wheel - modules) == [], "modules in the wheel that the source does not have"
    assert sorted(data - names) == [], "package data left out of the wheel"
    # The kinds of data the product needs at run time, named so that an empty glob cannot pass.
    assert any(re.fullmatch(r"hbeval/report/templates/\w+\.html\.j2", n) for n in names)
    for needed in (
        "hbeval/demo/demo_trace.jsonl",
        "hbeval/scoring/hbeval-report-1.schema.json",
        "hbeval_core/events/hb-events-1.schema.json",
        *(f"{package}/py.typed" for package in package_folders()),
    ):
        assert needed in names
    # Adapters install as hbeval_<framework>; never a top-level "adapters" (PyPI has one).
    assert top_level == set(package_folders())
    assert not any(n.startswith("adapters/") for n in names)


@slow
def test_the_build_says_nothing_deprecated_about_the_license(built: Built) -> None:
    warned = [
        line
        for line in built.log.splitlines()
        if re.search(r"SetuptoolsDeprecationWarning|BuildBackendWarning", line)
        or re.search(r"licen[cs]e.*deprecat|deprecat.*licen[cs]e", line, re.I)
    ]
    assert warned == [], "the build warned:\n" + "\n".join(warned)
    with zipfile.ZipFile(built.wheel) as whl:
        metadata = whl.read("hbeval-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata.splitlines()  # the SPDX string, not a table


def run_in(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=cwd, env=user_env(venv), capture_output=True, text=True, timeout=TIMEOUT
    )


_WHERE = """
import importlib.util, json, warnings
names = ["hbeval", "hbeval_core", "hbeval_plain", "hbeval_langgraph", "hbeval_crewai",
         "hbeval_autogen"]
where = {n: importlib.util.find_spec(n).origin for n in names}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from hbeval_core.testing import helpdesk  # 0.1's path, what 0.1's wheel could not import
import hbeval.testing.helpdesk as new
same = all(getattr(helpdesk, n) is getattr(new, n) for n in new.__all__)  # a forwarding module
print(json.dumps({"where": where, "same": same,
                  "warned": [str(w.message) for w in caught if w.category is DeprecationWarning]}))
"""


@slow
def test_the_packages_import_from_the_venv_not_the_checkout(venv: Path, tmp_path: Path) -> None:
    done = run_in(venv, tmp_path, str(venv / "bin" / "python"), "-c", _WHERE)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    for name, origin in found["where"].items():
        assert Path(origin).resolve().is_relative_to(venv.resolve()), (name, origin)
    assert found["same"]
    assert any("hbeval.testing" in message for message in found["warned"])


# The reference's 10-step SDK demo session (spec §2.1 vectors): after each step PEI (v2), FRR,
# IRS, TI; None is undefined (no fault observed yet).
REFERENCE_SESSION = [
    *[(1.0, None, None, 5.0)] * 3,
    (0.75, 0.0, 0.0, 3.75),
    (0.8, 0.0, 0.0, 3.0),
    (0.8333, 0.0, 0.0, 2.5),
    (1.0, 0.25, 0.25, 2.86),
    (1.0, 0.25, 0.25, 3.12),
    (1.0, 0.25, 0.25, 3.33),
    (1.0, 0.25, 0.25, 3.5),
]


def table_rows(text: str) -> list[list[str]]:
    """The cells of every body row of the rich tables in ``text``."""
    return [
        [cell.strip() for cell in line.strip().strip("│").split("│")]
        for line in text.splitlines()
        if line.strip().startswith("│")
    ]


def readme_seed_42_table() -> dict[str, list[str]]:
    """The README's table of the demo on seed 42: first word of the figure -> its two cells."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (?!figure|---)(.+?) \| (.+?) \| (.+?) \|$", readme, re.M)
    return {figure.split()[0]: [careful, naive] for figure, careful, naive in rows}


def pass_hat_k(trials: list[dict[str, object]], k: int) -> float:
    """pass^k from the per-trial records: per task C(c,k)/C(n,k), averaged over tasks."""
    passed: dict[object, list[bool]] = defaultdict(list)
    for trial in trials:
        passed[trial["task_id"]].append(trial["outcome"] == "pass")
    per_task = [math.comb(sum(p), k) / math.comb(len(p), k) for p in passed.values()]
    return sum(per_task) / len(per_task)


def check_live_table(rows: list[list[str]]) -> None:
    steps = [row for row in rows if row[0].isdigit()]
    assert [int(row[0]) for row in steps] == list(range(1, 11))
    for row, expected in zip(steps, REFERENCE_SESSION, strict=True):
        for cell, value in zip(row[1:], expected, strict=True):
            if value is None:
                assert cell == "undefined (no_fault_observed)", row
            else:
                assert float(cell) == pytest.approx(value, abs=5e-4), row


def check_battery_table(figures: dict[str, list[str]], reports: dict[str, dict]) -> None:
    """The printed figures against the same run's per-trial records, computed here."""
    for column, agent in enumerate(("careful", "naive")):
        report = reports[agent]
        assert (report["run"]["seed"], report["run"]["trials"]) == (42, 3)
        trials = report["trials"]
        assert len(trials) == 18 * 3
        faulted = [t for t in trials if any(f["delivered"] for f in t["faults"])]
        frr = sum(t["outcome"] == "pass" for t in faulted) / len(faulted)
        assert figures["FRR"][column].startswith(f"{frr:.3f} ["), (agent, figures["FRR"])
        assert f"({len(faulted)} faulted trials)" in figures["faults delivered"][column]
        rate = sum(t["outcome"] == "pass" for t in trials) / len(trials)
        assert figures["pass rate"][column].startswith(f"{rate:.3f} [")
        pass_k = figures["pass^k (all k trials pass)"][column]
        assert pass_k == ", ".join(f"k={k}: {pass_hat_k(trials, k):.3f}" for k in (1, 2, 3))
        assert figures["CSI"][column] == "undefined (single_run)"  # one run: no CSI, never 0


@slow
def test_hbeval_demo_runs_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    done = run_in(venv, tmp_path, str(venv / "bin" / "hbeval"), "demo")
    assert done.returncode == 0, f"hbeval demo exited {done.returncode}:\n{done.stderr[-4000:]}"
    for written in ("hbeval-report.html", "hbeval-report.json", "hbeval-passport.json"):
        assert (tmp_path / written).is_file(), written
    assert (tmp_path / ".hbeval" / "hbeval.db").is_file()

    rows = table_rows(done.stdout)
    check_live_table(rows)
    assert "breaches: 16; with halt policy frr<0.5x3 the run halts at step 6" in done.stdout

    figures = {row[0]: row[1:] for row in rows if not row[0].isdigit()}
    assert figures["verdict"] == ["SAFE", "UNSAFE"]
    reports = json.loads((tmp_path / "hbeval-report.json").read_text(encoding="utf-8"))
    check_battery_table(figures, reports)

    # The README's seed-42 table is this run.
    readme = readme_seed_42_table()
    assert readme["verdict"] == figures["verdict"]
    assert readme["FRR"] == figures["FRR"]
    assert readme["IRS"] == figures["IRS"]
    for column in (0, 1):
        k3 = figures["pass^k (all k trials pass)"][column].rpartition("k=3: ")[2]
        assert readme["pass^3"][column] == k3


def test_ci_runs_the_slow_tests() -> None:
    """Not slow itself: CI (.ci/run -> scripts/test.sh) selects no markers, so it runs the above."""
    tomllib: Any = pytest.importorskip("tomllib")
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    pytest_options = options["pytest"]["ini_options"]
    assert "-m" not in pytest_options["addopts"].split()
    assert any(m.startswith("slow:") for m in pytest_options["markers"])
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    runs = [
        line
        for line in (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8").splitlines()
        if "-m pytest" in line and not line.lstrip().startswith("#")
    ]
    assert runs == ['.venv/bin/python -m pytest "$@"'], runs
