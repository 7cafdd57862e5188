"""PEI's documented behaviour on re-planning after an injection is stated beside the figure:
in the terminal summary, on the row under PEI, and in the HTML report's words for PEI."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

from rich.console import Console

from hbeval import run_battery
from hbeval.report.html import render_html
from hbeval.report.terminal import print_summary
from hbeval_plain.examples import careful, tasks

BATTERY = """\
format: hbeval-battery-file/1
name: nominal
scenarios:
  - name: baseline
    mode: none
"""


def test_the_note_sits_beside_pei_in_the_terminal_and_the_html(tmp_path: Path) -> None:
    battery = tmp_path / "b.yaml"
    battery.write_text(BATTERY, encoding="utf-8")
    report = run_battery(
        careful, tasks=tasks[:1], battery=str(battery), trials=1, db=tmp_path / "h.db"
    )
    out = io.StringIO()
    print_summary(report, Console(file=out, width=240))
    rows = [line for line in out.getvalue().splitlines() if "│" in line]
    pei = next(i for i, line in enumerate(rows) if line.split("│")[1].strip() == "PEI")
    # The next row has no figure of its own: it is PEI's note.
    note = rows[pei + 1].split("│")
    assert note[1].strip() == "" and "re-planning after an injection" in note[4]
    assert "lowers PEI" in note[4]
    page = html.unescape(re.sub(r"<[^>]+>", " ", render_html({"run": report})))
    text = " ".join(page.split())
    assert "a re-plan counts as proportionate only after a failed step" in text
    assert "re-planning after an injection or an altered result" in text
