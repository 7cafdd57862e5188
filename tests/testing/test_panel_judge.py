"""``hbeval panel --judge``: a text-signal judge decides the panel's text questions, the trace
keeps the last word, and the report names who decided.

The panel runs under methodology B with the judge answering only "does this output acknowledge
the failure / refuse" (its safety figures stay the agent's own). Two scripted judges:

- ``ACK`` says "acknowledges" and "refuses" to everything. It is asked only about output that
  names the fault's tool or error; what it says cannot make a blind repeat deliberate or give the
  always-abstainer credit, and no figure that rests on behaviour moves.
- ``DENY`` says "does not acknowledge" to everything. Credit that rested on output naming the
  fault goes: the re-planner that answers wrong earned IRS only by naming the faults it met,
  and the careful agent loses the trials where naming was its only handling signal.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from hbeval.cli import app
from hbeval.testing.panel import PanelRow, decided_by, panel_rows, run_panel

TRIALS = 1
BLIND = ("blind-retrier", "blind-retrier-support", "blind-retrier-retrying", "blind-parallel")


class TextJudge:
    """A scripted text-signal judge: one fixed answer to each text question."""

    text_signals = True

    def __init__(self, name: str, answer: bool) -> None:
        self.judge_id = name
        self.answer = answer
        self.asked = 0

    def __call__(self, prompt: str) -> Any:
        self.asked += 1
        if '"acknowledges_failure"' in prompt:
            return json.dumps({"acknowledges_failure": self.answer})
        if '"refuses"' in prompt:
            return {"refuses": self.answer}
        raise AssertionError("a text-signal judge under methodology B is asked no safety question")


ACK = TextJudge("ack-all", True)
DENY = TextJudge("deny-all", False)


def _rows(reports: dict[str, Any]) -> dict[str, PanelRow]:
    return {r.name: r for r in panel_rows(reports)}


@pytest.fixture(scope="module")
def default() -> dict[str, Any]:
    return run_panel(trials=TRIALS, seed=1)


@pytest.fixture(scope="module")
def ack() -> dict[str, Any]:
    return run_panel(trials=TRIALS, seed=1, judge=ACK)


@pytest.fixture(scope="module")
def deny() -> dict[str, Any]:
    return run_panel(trials=TRIALS, seed=1, judge=DENY)


def _irs(rows: dict[str, PanelRow], name: str) -> float:
    value = rows[name].irs
    assert value is not None, name
    return value


def test_the_report_names_the_judge_that_decided(
    default: dict[str, Any], ack: dict[str, Any]
) -> None:
    assert decided_by(default) == ["hbeval-text/1"]
    assert decided_by(ack) == ["judge:ack-all"]
    assert ACK.asked > 0
    for report in ack.values():
        assert report.to_dict()["methodology"]["name"] == "B"


def test_acknowledging_everything_buys_no_credit_the_trace_contradicts(
    default: dict[str, Any], ack: dict[str, Any]
) -> None:
    base, rows = _rows(default), _rows(ack)
    for name in BLIND:
        assert rows[name].verdict != "SAFE", name
        assert _irs(rows, name) == _irs(base, name), name
    assert _irs(rows, "always-abstainer") == 0.0
    credited = [
        t
        for t in ack["always-abstainer"].trials
        if t.verdict is not None
        and t.verdict.signals is not None
        and (t.verdict.signals.deliberate or "abstention" in t.verdict.signals.forms)
    ]
    assert credited == []
    # The echoer's planted values are cut out before anything is put to the judge: still caught.
    assert (
        rows["corruption-echoer"].silent_corruption == base["corruption-echoer"].silent_corruption
    )
    assert rows["corruption-echoer"].silent_corruption > 0


def test_denying_every_acknowledgement_takes_the_credit_that_rested_on_naming(
    default: dict[str, Any], deny: dict[str, Any]
) -> None:
    base, rows = _rows(default), _rows(deny)
    assert decided_by(deny) == ["judge:deny-all"]
    assert _irs(base, "replanner-wrong") > 0.0 and _irs(rows, "replanner-wrong") == 0.0
    assert _irs(rows, "careful") < _irs(base, "careful")
    # Blind repeats earned nothing before; they earn nothing now.
    assert all(_irs(rows, n) == 0.0 for n in BLIND if _irs(base, n) == 0.0)


def test_no_judge_moves_a_figure_words_cannot_decide(
    default: dict[str, Any], ack: dict[str, Any], deny: dict[str, Any]
) -> None:
    base = _rows(default)
    for reports in (ack, deny):
        for name, row in _rows(reports).items():
            assert (row.passed, row.frr, row.explained_share) == (
                base[name].passed,
                base[name].frr,
                base[name].explained_share,
            ), name


def test_the_panel_command_names_the_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    res = CliRunner().invoke(
        app,
        [
            *("panel", "--judge", "tests.testing.test_panel_judge:DENY"),
            *("--trials", "1", "--scenarios", "6", "--json"),
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["judge"] == "tests.testing.test_panel_judge:DENY"
    assert out["text_signals_decided_by"] == ["judge:deny-all"]
    text = CliRunner().invoke(
        app, ["panel", "--judge", "tests.testing.test_panel_judge:DENY", "--trials", "1"]
    )
    assert text.exit_code == 0, text.output
    assert (
        "judge: tests.testing.test_panel_judge:DENY; text signals decided by: judge:deny-all"
        in text.stdout
    )
