"""``hbeval schema``: JSON Schemas of hbeval's formats.

Each schema is printed from a file generated from the live pydantic model and shipped beside
it, so the command starts without importing pydantic; ``tests/cli/test_schema_files.py``
regenerates both and fails when a file no longer equals its model's schema. After changing the
event or report model, rewrite the files with ``python -m hbeval.cli._schema``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import typer

import hbeval_core

from ._common import EXIT_INSUFFICIENT, fail, plain_app

__all__ = ["schema_app"]

schema_app = plain_app("schema", "Print JSON Schemas of hbeval's formats.")

_CORE: Final = Path(hbeval_core.__file__).resolve().parent
_PRODUCT: Final = Path(__file__).resolve().parent.parent
SCHEMA_FILES: Final = {
    "events": _CORE / "events" / "hb-events-1.schema.json",
    "report": _PRODUCT / "scoring" / "hbeval-report-1.schema.json",
}
"""Where each generated schema file lives (read by path: importing its package loads pydantic)."""


def live_schema(name: str) -> dict[str, Any]:
    """The schema ``name`` ("events" or "report") computed from its pydantic model."""
    if name == "events":
        from hbeval_core.events import events_json_schema

        return events_json_schema()
    from ..scoring._report_model import report_json_schema

    return report_json_schema()


def schema_text(schema: dict[str, Any]) -> str:
    """The text ``hbeval schema`` prints (and the file holds) for ``schema``."""
    return json.dumps(schema, indent=2) + "\n"


def _print(name: str) -> None:
    try:
        text = SCHEMA_FILES[name].read_text(encoding="utf-8")
    except OSError:  # an install without the generated file: compute it
        text = schema_text(live_schema(name))
    typer.echo(text, nl=False)


@schema_app.command("events")
def schema_events() -> None:
    """JSON Schema of one hb-events/1 event."""
    _print("events")


@schema_app.command("report")
def schema_report() -> None:
    """JSON Schema of an hbeval-report/1 battery report."""
    if not SCHEMA_FILES["report"].is_file():
        try:
            from ..scoring import _report_model  # noqa: F401
        except ImportError:
            raise fail(
                "the report schema is not available in this build", EXIT_INSUFFICIENT
            ) from None
    _print("report")


def write_schema_files() -> None:
    """Regenerate every schema file from its live model."""
    for name, path in SCHEMA_FILES.items():
        path.write_text(schema_text(live_schema(name)), encoding="utf-8")


if __name__ == "__main__":
    write_schema_files()
