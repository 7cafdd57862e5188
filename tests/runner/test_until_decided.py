"""``run_battery(until_decided=)`` and ``battery run --until-decided``: waves that stop once the
verdict is decided, with the same verdict as the fixed run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hbeval.runner._waves import run_in_waves
from hbeval.runner.run import run_battery
from hbeval.scoring import decide_verdict
from hbeval.scoring._until_decided import WaveDecision
from hbeval_core.faults import Battery


class _Job:
    def __init__(self, scenario: int, wave: int) -> None:
        self.key = f"s{scenario}-t{wave}"
        self.trial_index = wave


def _decision(decided: bool) -> WaveDecision:
    return WaveDecision(decided, "SAFE" if decided else "INSUFFICIENT_DATA", ())


def test_the_stopping_rule_runs_whole_waves_and_stops_at_the_first_decided_one() -> None:
    jobs = [_Job(s, w) for s in range(3) for w in range(4)]  # report order: scenario first
    ran: list[list[str]] = []
    looked: list[int] = []

    def decide(waves: int) -> WaveDecision:
        looked.append(waves)
        return _decision(waves == 2)

    out = run_in_waves(jobs, 4, lambda w: ran.append([j.key for j in w]), lambda: True, decide)  # type: ignore[arg-type]
    assert ran == [["s0-t0", "s1-t0", "s2-t0"], ["s0-t1", "s1-t1", "s2-t1"]]
    assert looked == [1, 2]
    assert (out.waves_run, out.stopped) == (2, "decided")
    # Decided only at the last wave: every wave ran, and the run ended decided.
    out = run_in_waves(jobs, 4, lambda w: None, lambda: True, lambda w: _decision(w == 4))  # type: ignore[arg-type]
    assert (out.waves_run, out.stopped) == (4, "decided")
    # Never decided: every wave runs.
    out = run_in_waves(jobs, 4, lambda w: None, lambda: True, lambda w: _decision(False))  # type: ignore[arg-type]
    assert (out.waves_run, out.stopped) == (4, "max_trials")
    # A budget that ran out ends it after the wave it stopped in, without a decision.
    out = run_in_waves(jobs, 4, lambda w: None, lambda: False, lambda w: _decision(True))  # type: ignore[arg-type]
    assert (out.waves_run, out.stopped, out.decision) == (1, "budget_exhausted", None)


@pytest.mark.parametrize("name", ["careful", "naive"])
def test_until_decided_reaches_the_fixed_runs_verdict_with_at_most_60_percent(name: str) -> None:
    from hbeval_plain import examples

    agent = getattr(examples, name)
    fixed = run_battery(None, agent, examples.tasks, Battery.hbeval(seed=42), trials=6, seed=42)
    waves = run_battery(
        None,
        agent,
        examples.tasks,
        Battery.hbeval(seed=42),
        trials=6,
        seed=42,
        until_decided=0.95,
    )
    info = waves.run.until_decided
    assert info is not None and fixed.run.until_decided is None
    assert decide_verdict(waves).verdict == decide_verdict(fixed).verdict
    assert info.stopped == "decided" and info.bound == "wsr_prpl_eb_cs"
    assert info.trials_planned == len(fixed.trials) == 18 * 6
    assert info.trials_run == len(waves.trials) == 18 * info.waves_run
    assert len(waves.trials) <= 0.6 * len(fixed.trials)
    # Every trial of the waves run, none after: trial indices 0 .. waves_run − 1.
    assert {t.trial_index for t in waves.trials} == set(range(info.waves_run))
    states = {c.metric: c.state for c in info.checks}
    if name == "careful":  # SAFE: every check passed at 95%
        assert set(states.values()) == {"passed"}
        assert waves.scores is not None and waves.scores.security_gate.status == "passed"
    else:  # UNSAFE: a check failed at 95% (the forbidden tool, IRS 0)
        assert states["security"] == "failed"


def test_battery_run_until_decided_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "hbeval.cli", "battery", "run", "hbeval_plain.examples:careful"]
    db = ["--db", str(tmp_path / "h.db")]
    proc = subprocess.run(
        [*cmd, *db, "--trials", "6", "--until-decided", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "verdict SAFE" in proc.stdout
    info = json.loads(out.read_text())["run"]["until_decided"]
    assert info["stopped"] == "decided" and info["waves_run"] < 6
    assert f"until decided: stopped after wave {info['waves_run']} of 6" in proc.stdout
    bad = subprocess.run(
        [*cmd, *db, "--confidence", "1.5", "--until-decided"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "--confidence must be strictly between 0 and 1" in bad.stderr
    assert "Traceback" not in bad.stderr
