"""The capture base on its own: run status by exception class, Instrumentor, monitor signals."""

from __future__ import annotations

from typing import Any

import pytest

from hbeval_core.capture import BaseRecorder, Instrumentor, never_raises
from hbeval_core.contract import (
    BudgetExceeded,
    InfraError,
    TrialCancelled,
    ended_by,
    is_infra_error,
    run_status_of,
)
from hbeval_core.events import Halt, RunStart
from hbeval_core.faults.runtime import InjectedCrash
from hbeval_core.live.monitor import Monitor, SafeHaltError
from hbeval_core.versions import UnsupportedVersionError


class _SpentBudget(BudgetExceeded):
    """A subclass maps as its base does."""


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (SafeHaltError({"reason": "policy"}), "halted"),
        (BudgetExceeded("tool_calls", 3, 4), "halted"),
        (_SpentBudget("turns", 2, 3), "halted"),
        (TrialCancelled("cut"), "timeout"),
        (InjectedCrash("boom", tool="t", call_id="c", fault=None), "cancelled"),  # type: ignore[arg-type]
        (ValueError("the agent's own"), "error"),
        (InfraError("disk full"), "error"),
    ],
)
def test_run_status_follows_the_exception_class(exc: BaseException, status: str) -> None:
    assert run_status_of(exc) == status
    ended = ended_by(exc)
    assert ended.status == status
    assert ended.error_type == type(exc).__name__
    assert ended.error == f"{type(exc).__name__}: {exc}"
    assert ended.infra is isinstance(exc, InfraError) is is_infra_error(exc)


def test_instrumentor_installs_once_and_removes_once() -> None:
    calls: list[str] = []
    inst: Instrumentor[object] = Instrumentor(
        lambda: calls.append("check"),
        lambda rec: calls.append("install") or "token",
        lambda rec, token: calls.append(f"uninstall {token}"),
    )
    first = inst.instrument(object)
    assert inst.instrument(object) is first and inst.active is first
    inst.uninstrument()
    inst.uninstrument()
    assert not inst.is_instrumented()
    assert calls == ["check", "install", "uninstall token"]
    inst.instrument(object)  # checked once per process by default
    assert calls[-1] == "install" and calls.count("check") == 1


def test_instrumentor_refuses_an_unsupported_version_and_installs_nothing() -> None:
    installed: list[Any] = []

    def refuse() -> None:
        raise UnsupportedVersionError("framework 9.0 is outside >=1,<2")

    inst: Instrumentor[object] = Instrumentor(refuse, installed.append, lambda r, s: None)
    with pytest.raises(UnsupportedVersionError, match="outside"):
        inst.instrument(object)
    assert not inst.is_instrumented() and installed == []
    inst.instrument(object, check_version=False)
    assert inst.is_instrumented() and len(installed) == 1


def test_a_halt_requested_from_outside_becomes_one_halt_event() -> None:
    halts: list[dict[str, Any]] = []
    rec = BaseRecorder(run_id="r1", monitor=Monitor(enforce=True), on_halt=halts.append)
    rec.emit(RunStart, framework="plain")
    rec.monitor.halt("operator stop")
    rec.emit(RunStart, framework="plain")
    rec.emit(RunStart, framework="plain")
    found = [e for e in rec.events if isinstance(e, Halt)]
    assert len(found) == 1 and len(halts) == 1
    assert found[0].trigger == "manual" and found[0].enforced is True
    assert found[0].reason == "operator stop"
    assert [e.seq for e in rec.events] == list(range(len(rec.events)))


class _Flaky(BaseRecorder):
    @never_raises("flaky")
    def callback(self, value: int) -> int:
        if value < 0:
            raise ValueError("negative")
        return value * 2


def test_never_raises_keeps_the_error_and_strict_re_raises() -> None:
    rec = _Flaky(run_id="r")
    assert rec.callback(2) == 4
    assert rec.callback(-1) is None
    assert rec.errors == ["flaky: ValueError: negative"]
    with pytest.raises(ValueError, match="negative"):
        _Flaky(run_id="r", strict=True).callback(-1)
