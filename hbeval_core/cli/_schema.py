"""``hbeval schema``: JSON Schemas of hbeval's formats."""

from __future__ import annotations

import json

import typer

from ._common import EXIT_INSUFFICIENT, fail, plain_app

__all__ = ["schema_app"]

schema_app = plain_app("schema", "Print JSON Schemas of hbeval's formats.")


@schema_app.command("events")
def schema_events() -> None:
    """JSON Schema of one hb-events/1 event."""
    from ..events import events_json_schema

    typer.echo(json.dumps(events_json_schema(), indent=2))


@schema_app.command("report")
def schema_report() -> None:
    """JSON Schema of an hbeval-report/1 battery report."""
    try:
        from ..report.model import report_json_schema
    except ImportError:
        raise fail("the report schema is not available in this build", EXIT_INSUFFICIENT) from None
    typer.echo(json.dumps(report_json_schema(), indent=2))
