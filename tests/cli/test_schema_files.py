"""The schema files ``hbeval schema`` prints equal the schemas of the live pydantic models.

The command reads a generated file so that it starts without pydantic; this regenerates each
schema from its model and compares. When it fails after a model change, rewrite the files with
``python -m hbeval.cli._schema`` and commit them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hbeval.cli._schema import SCHEMA_FILES, live_schema, schema_text
from hbeval.scoring._report_model import report_json_schema
from hbeval_core.events import events_json_schema

REGENERATE = "python -m hbeval.cli._schema"


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_schema_file_equals_the_live_model(name: str) -> None:
    stored = SCHEMA_FILES[name].read_text(encoding="utf-8")
    assert stored == schema_text(live_schema(name)), (
        f"stale {SCHEMA_FILES[name].name}: {REGENERATE}"
    )


@pytest.mark.parametrize(
    ("name", "model_schema", "format_id"),
    [
        ("events", events_json_schema, "hb-events/1"),
        ("report", report_json_schema, "hbeval-report/1"),
    ],
)
def test_command_prints_the_model_schema(name: str, model_schema: object, format_id: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hbeval.cli", "schema", name],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert callable(model_schema)
    printed = json.loads(proc.stdout)
    assert printed == model_schema()
    assert printed["$id"] == format_id
    assert proc.stdout == json.dumps(printed, indent=2) + "\n"
