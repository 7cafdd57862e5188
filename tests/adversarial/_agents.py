"""Hostile values and small plain agents shared by the adversarial tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hbeval_core.contract import Task
from hbeval_core.faults import Battery


class BadRepr:
    """An object whose ``__repr__`` and ``__str__`` raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")

    __str__ = __repr__


class Opaque:
    """A plain object JSON does not know (its repr works)."""

    __slots__ = ()


def deep_list(depth: int = 5000) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def hostile_values() -> dict[str, Any]:
    """One of each value the issue says took a battery down or reached the agent changed."""
    return {
        "lone_surrogate": "bad \ud800 text",
        "huge_int": 10**5000,
        "bad_repr": BadRepr(),
        "deep_list": deep_list(),
        "opaque": Opaque(),
        "nan": float("nan"),
    }


TASK = Task(id="t1", question="look up A1", verify=lambda state, trace: True)


def battery(n: int = 6, fault_types: list[str] | None = None) -> Battery:
    return Battery.hbeval(n_scenarios=n, seed=42, fault_types=fault_types or ["tool_failure"])


def stored_careful_run(root: Path, name: str) -> Path:
    """A store ``root/NAME`` holding one completed run ``r1`` of the careful plain agent.

    Its report is written beside it as ``root/report.json``.
    """
    from hbeval.runner.run import run_battery
    from hbeval.store import open_store
    from hbeval_plain.examples import careful, tasks

    db = root / name
    with open_store(str(db)) as store:
        report = run_battery(
            None, careful, tasks, Battery.hbeval(n_scenarios=6, seed=42), trials=1,
            store=store, run_id="r1",
        )  # fmt: skip
    (root / "report.json").write_text(json.dumps(report.to_dict()))
    return db
