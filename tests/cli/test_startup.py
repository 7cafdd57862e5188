"""The command line starts at typer's own cost: a bare ``hbeval --help`` loads typer and the
root module, and a subcommand's help loads that command's module and nothing heavy."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT_MODULES = {
    "hbeval",
    "hbeval_core",
    "hbeval_core._lazy",
    "hbeval_core._moved",
    "hbeval.cli",
    "hbeval.cli._app",
    "hbeval.cli._common",
}
OURS = ("hbeval", "hbeval_core")
"""Every hbeval module a bare ``hbeval --help`` or ``--version`` loads."""

HEAVY = (
    "pydantic",
    "numpy",
    "rich",
    "yaml",
    "jinja2",
    "cryptography",
    "hbeval_langgraph",
    "hbeval_crewai",
    "hbeval_autogen",
    "langgraph",
    "langchain_core",
    "crewai",
    "autogen_core",
    "mcp",
)
"""Packages no command's start-up (nor its ``--help``) may load."""


def loaded_by(tmp_path: Path, code: str) -> set[str]:
    """The modules in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    out = tmp_path / "modules.json"
    script = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        with open({str(out)!r}, "w") as fh:
            json.dump(sorted(sys.modules), fh)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(out.read_text(encoding="utf-8")))


def run_hbeval(tmp_path: Path, *args: str) -> set[str]:
    return loaded_by(
        tmp_path,
        f"""
        import sys
        sys.argv = ["hbeval", *{list(args)!r}]
        from hbeval.cli import main
        try:
            main()
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        """,
    )


def third_party(modules: set[str]) -> set[str]:
    """Top-level names of the non-stdlib packages among ``modules``."""
    tops = {m.split(".")[0] for m in modules}
    return {t for t in tops if t not in sys.stdlib_module_names and not t.startswith("_")}


@pytest.fixture(scope="module")
def typer_alone(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """What importing typer (and building a command with it) loads by itself."""
    return loaded_by(
        tmp_path_factory.mktemp("typer"),
        """
        import typer, typer.main, typer.core
        app = typer.Typer()
        @app.command()
        def hello(name: str = "x") -> None:
            pass
        typer.main.get_command(app)
        """,
    )


@pytest.mark.parametrize("args", [("--help",), ("--version",)])
def test_root_loads_typer_and_the_root_module_only(
    tmp_path: Path, typer_alone: set[str], args: tuple[str, ...]
) -> None:
    modules = run_hbeval(tmp_path, *args)
    assert {m for m in modules if m.split(".")[0] in OURS} == ROOT_MODULES
    assert third_party(modules) <= third_party(typer_alone) | set(OURS)
    heavy = [m for m in HEAVY if m in modules and m not in typer_alone]
    assert not heavy, heavy
    if "click" not in typer_alone:  # typer >= 0.29 carries its own click
        assert "click" not in modules


C = "hbeval.cli."


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("score", "--help"),
            {
                C + "_score",
                "hbeval_core.vocab",
                "hbeval_core.live",
                "hbeval_core.live._document",
                "hbeval_core.live._policy",
            },
        ),
        (("report", "--help"), {C + "_report"}),
        (("gate", "--help"), {C + "_report"}),
        (
            ("battery", "run", "--help"),
            {
                C + "_battery",
                C + "_battery_options",
                C + "_battery_proxy",
                C + "_waves",
                "hbeval_core.vocab",
            },
        ),
        (
            ("memory", "explain", "--help"),
            {C + "_memory", "hbeval.memory", "hbeval.memory._open"},
        ),
        (("passport", "verify", "--help"), {C + "_passport"}),
        (("import", "--help"), {C + "_importers"}),
        (("mcp", "--help"), {C + "_mcp"}),
        (("demo", "--help"), {C + "_demo", "hbeval_core.vocab"}),
        (("runs", "list", "--help"), {C + "_runs"}),
        (("store", "copy", "--help"), {C + "_store"}),
        (("replay", "--help"), {C + "_replay"}),
        (("export", "otlp", "--help"), {C + "_export"}),
        (("init", "--help"), {C + "_init"}),
        (("schema", "events", "--help"), {C + "_schema"}),
    ],
)
def test_a_commands_help_loads_that_command_only(
    tmp_path: Path, typer_alone: set[str], args: tuple[str, ...], expected: set[str]
) -> None:
    modules = run_hbeval(tmp_path, *args)
    assert {m for m in modules if m.split(".")[0] in OURS} == ROOT_MODULES | expected
    heavy = [m for m in HEAVY if m in modules and m not in typer_alone]
    assert not heavy, heavy


FAULTS = "hbeval_core.faults."


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("schema", "events"), {C + "_schema"}),
        (("schema", "report"), {C + "_schema"}),
        (
            ("battery", "spec", "--json"),
            {
                C + "_battery",
                C + "_battery_options",
                C + "_battery_proxy",
                C + "_waves",
                "hbeval_core._lazy",
                "hbeval_core.faults",
                FAULTS + "battery",
                FAULTS + "compat",
                FAULTS + "perturb",
                FAULTS + "plans",
                "hbeval_core.fingerprint",
                "hbeval_core.vocab",
            },
        ),
    ],
)
def test_commands_that_print_fixed_documents_load_no_model(
    tmp_path: Path, typer_alone: set[str], args: tuple[str, ...], expected: set[str]
) -> None:
    """The schemas come from their generated files and the battery spec from the battery
    module alone: no event or report model (pydantic), no tool boundary, no battery files."""
    modules = run_hbeval(tmp_path, *args)
    assert {m for m in modules if m.split(".")[0] in OURS} == ROOT_MODULES | expected
    heavy = [m for m in HEAVY if m in modules and m not in typer_alone]
    assert not heavy, heavy


def test_the_root_listing_matches_each_commands_own_help() -> None:
    import typer.main

    from hbeval.cli import COMMANDS, app

    root = typer.main.get_command(app)
    ctx = root.make_context("hbeval", ["--help"], resilient_parsing=True)
    assert list(COMMANDS) == root.list_commands(ctx)
    for name, entry in COMMANDS.items():
        real = root.get_command(ctx, name)
        assert real is not None, name
        assert entry.help == (real.help or "").split("\n\n")[0].replace("\n", " "), name
        for limit in (40, 60, 200):
            listed = typer.core.TyperCommand(name=name, help=entry.help)
            assert listed.get_short_help_str(limit) == real.get_short_help_str(limit), name


def test_the_memory_commands_default_agent_is_edms() -> None:
    from hbeval.cli._memory import DEFAULT_AGENT_ID
    from hbeval.memory import DEFAULT_AGENT_ID as EDM_DEFAULT
    from hbeval.memory import EMBEDDERS

    assert DEFAULT_AGENT_ID == EDM_DEFAULT
    assert EMBEDDERS == ("hash", "minilm")


def test_an_unknown_command_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", "nope"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "No such command" in proc.stderr and "Traceback" not in proc.stderr
