"""Finding 12 of the second adversarial pass: valid JSONL was refused.

The Pi, DSH, Hermes, OpenClaw and OTLP-JSONL readers split on ``str.splitlines``, which also
breaks on U+2028, U+2029 and U+0085: characters a JSON string may hold raw. Lines are now split
on ``\\n`` only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.importers._common import jsonl_lines

SESSION = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "openclaw_session.jsonl"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_a_raw_line_separator_inside_a_json_string_is_read(tmp_path: Path, separator: str) -> None:
    text = SESSION.read_text(encoding="utf-8")
    marked = text.replace("List the files", f"List{separator}the files", 1)
    assert marked != text and json.loads(marked.splitlines()[0])  # the first line still parses
    path = tmp_path / "session.jsonl"
    path.write_text(marked, encoding="utf-8")
    res = CliRunner().invoke(app, ["import", "pi", str(path), "--db", str(tmp_path / "h.db")])
    assert res.exit_code == 0, res.output
    plain = tmp_path / "plain.jsonl"
    plain.write_text(text, encoding="utf-8")
    same = CliRunner().invoke(app, ["import", "pi", str(plain), "--db", str(tmp_path / "p.db")])
    assert same.exit_code == 0, same.output


def test_lines_split_on_newline_only() -> None:
    assert jsonl_lines('{"a": "x\u2028y"}\r\n{"b": 1}\n') == ['{"a": "x\u2028y"}', '{"b": 1}']
    assert jsonl_lines("a\n\nb") == ["a", "", "b"] and jsonl_lines("") == []
