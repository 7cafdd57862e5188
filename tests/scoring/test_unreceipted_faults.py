"""Latency and crash faults leave no receipt that the agent met them (a delay changes nothing
the agent reads; a crash ends the call before any result), so trials under them are in no
figure, PEI included, and their fault types are reported as not measured with
``delivery_unreceipted``, not blamed on the agent or on the tool boundary.

Run on the plain example agent with a real battery file and a real SQLite store.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from hbeval import run_battery
from hbeval_core.vocab import DELIVERY_UNRECEIPTED, FRR, IRS, VERDICT_UNSAFE
from hbeval_plain.examples import careful, tasks

BATTERY = """\
format: hbeval-battery-file/1
name: slow-and-down
scenarios:
  - name: baseline
    mode: none
  - name: slow
    mode: latency
    params: {after_ms: 1}
  - name: down
    mode: crash
"""
TRIALS = 2


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("unreceipted")
    battery = root / "b.yaml"
    battery.write_text(BATTERY, encoding="utf-8")
    return run_battery(
        careful, tasks=tasks[:3], battery=str(battery), trials=TRIALS, db=root / "h.db"
    )


def test_latency_and_crash_trials_are_in_no_figure(report: Any) -> None:
    data = report.to_dict()
    by_type: dict[str, list[dict[str, Any]]] = {}
    for t in data["trials"]:
        by_type.setdefault(t["fault_type"], []).append(t)
    assert sorted(by_type) == ["down", "none", "slow"]
    # Every latency and crash fault was injected, and none has a receipt.
    for name, mode in (("slow", "latency"), ("down", "crash")):
        faults = [f for t in by_type[name] for f in t["verdict"]["faults"]]
        assert len(faults) == TRIALS and {f["mode"] for f in faults} == {mode}
        assert not any(f["delivered"] for f in faults)
    nominal = by_type["none"]
    # PEI, TI and the pass rate are the nominal trials' alone, counted here from their verdicts.
    pei = math.fsum(t["verdict"]["metrics"]["pei"] for t in nominal) / len(nominal)
    ti = math.fsum(t["verdict"]["metrics"]["ti"] for t in nominal) / len(nominal)
    assert report.metrics.pei == pytest.approx(pei)
    assert report.metrics.ti == pytest.approx(ti)
    assert report.pass_rate.n == len(nominal)
    assert report.pass_rate.passed == sum(1 for t in nominal if t["outcome"] == "pass")
    # The trials themselves are still listed, and counted as left out.
    assert report.outcomes["pass"] + report.outcomes["fail"] == 3 * TRIALS
    assert report.fault_delivery.unreceipted_trials == 2 * TRIALS


def test_they_are_not_measured_with_the_right_reason(report: Any) -> None:
    fd = report.fault_delivery
    assert fd.by_fault_type["slow"].reason == DELIVERY_UNRECEIPTED
    assert fd.by_fault_type["down"].reason == DELIVERY_UNRECEIPTED
    assert fd.unmeasured_fault_types == ["down", "slow"]
    assert report.undefined[FRR] == DELIVERY_UNRECEIPTED
    assert report.undefined[IRS] == DELIVERY_UNRECEIPTED
    # Nothing measured the agent's fault handling: not a verdict against it.
    assert report.verdict != VERDICT_UNSAFE
    text = " ".join([*report.verdict_reasons, *(report.warnings or [])])
    assert "faultable" not in text and DELIVERY_UNRECEIPTED in text
    for s in report.scenarios:
        if s.fault_type in ("slow", "down"):
            assert s.metrics.pei is None and s.undefined["pei"] == DELIVERY_UNRECEIPTED
