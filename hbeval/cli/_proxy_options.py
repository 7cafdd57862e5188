"""Options ``hbeval mcp-proxy`` and ``hbeval proxy openai`` share (one definition each)."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["BatteryOption", "RecordOption", "ScenarioOption"]

BatteryOption = Annotated[
    str | None,
    typer.Option("--battery", metavar="FILE", help="Plant one scenario of a battery file."),
]
ScenarioOption = Annotated[
    str | None,
    typer.Option("--scenario", help="The battery file's scenario (when it has several)."),
]
RecordOption = Annotated[
    str | None,
    typer.Option(
        "--record", metavar="STORE", help="Store the sessions (hb-events, receipts) here."
    ),
]
