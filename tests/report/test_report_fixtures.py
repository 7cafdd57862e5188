"""Shared data for the report, passport, gate and compare tests: one demo run per test process.

``demo()`` runs the packaged careful and naive agents through the default battery once (about
half a second) into a temporary folder and returns the reports and the store path; every test
module reuses it. The reports are typed ``Report`` models; to edit one, edit its ``to_dict()``
and read it back with ``validate_report`` (or ``model_copy(update=...)``).
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hbeval.report import build_report
from hbeval.scoring import Report
from hbeval.scoring._report_model import validate_report


@dataclass(frozen=True)
class DemoRun:
    """The demo's reports (careful, naive), the folder they ran in and the store path."""

    folder: Path
    db: Path
    reports: dict[str, Report]

    @property
    def careful(self) -> Report:
        return self.reports["careful"]

    @property
    def naive(self) -> Report:
        return self.reports["naive"]


@functools.lru_cache(maxsize=1)
def demo() -> DemoRun:
    """Run the demo once per process (reports of both agents, events in a SQLite store)."""
    from hbeval.demo import run_demo

    folder = Path(tempfile.mkdtemp(prefix="hbeval-report-tests-"))
    atexit.register(shutil.rmtree, folder, True)
    reports = run_demo(folder, agents="plain")  # the numbers below are the plain agents'
    return DemoRun(folder, folder / ".hbeval" / "hbeval.db", reports)


def empty_report(**run: Any) -> Report:
    """A valid report with no trial at all: every metric undefined."""
    info = {"run_id": "empty-run", "agent_id": "nobody", "trials": 3, **run}
    return build_report(run=info, trials=[])


def rebound(data: dict[str, Any]) -> dict[str, Any]:
    """A report dict whose identity was changed on purpose, bound again to its trials (what
    a genuine run of that identity would carry)."""
    from hbeval.scoring._binding import bind_report

    return bind_report(validate_report(data)).to_dict()


def mutated(report: Report, **changes: Any) -> Report:
    """``report`` with top-level keys of its JSON replaced, read back as a ``Report``."""
    return validate_report({**report.to_dict(), **changes})


def cli_app() -> Any:
    """The report commands mounted the way hbeval_core/cli.py mounts them."""
    import typer

    from hbeval.cli._passport import passport_app
    from hbeval.cli._report import compare_cmd, gate_cmd, report_cmd

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("report")(report_cmd)
    app.command("compare")(compare_cmd)
    app.command("gate")(gate_cmd)
    app.add_typer(passport_app, name="passport")
    return app


def hb(*args: str, env: dict[str, str] | None = None) -> Any:
    """Invoke a report command in-process; the result has exit_code, stdout and stderr."""
    from typer.testing import CliRunner

    return CliRunner(env=env).invoke(cli_app(), list(args))


def _as_json(value: Any) -> Any:
    if isinstance(value, Report):
        return value.to_dict()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` (a ``Report`` as its ``to_dict()``); return the path."""
    import json

    path.write_text(json.dumps(data, default=_as_json), encoding="utf-8")
    return path
