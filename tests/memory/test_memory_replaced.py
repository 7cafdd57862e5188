"""``replaced`` (how admission writes an episode's computed figures) equals ``dataclasses.replace``."""

from __future__ import annotations

import dataclasses

import pytest

from hbeval.memory._episode import Episode, parse_episode, replaced


def _episode() -> Episode:
    return parse_episode(
        {
            "agent_id": "a",
            "run_id": "r",
            "trial_key": "t",
            "context": "Refund order 7",
            "metrics": {"pei": 0.9, "frr": None, "irs": None, "ti": 4.5},
            "evidence": "E2",
            "passed": True,
        },
        now="2026-01-01T00:00:00Z",
    )


def test_replaced_equals_dataclasses_replace_field_by_field() -> None:
    ep = _episode()
    changes = {"summary": "s", "metrics": {"pei": 1.0}, "evidence_level": "E1", "route": "x"}
    fast, slow = replaced(ep, **changes), dataclasses.replace(ep, **changes)  # type: ignore[arg-type]
    assert type(fast) is Episode
    for f in dataclasses.fields(Episode):
        assert getattr(fast, f.name) == getattr(slow, f.name), f.name
    assert fast == slow and hash(fast.episode_id) == hash(slow.episode_id)
    assert ep.summary != "s" and ep.route is None  # the original is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.summary = "changed"  # type: ignore[misc]


def test_replaced_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError, match="no field colour"):
        replaced(_episode(), colour="red")
