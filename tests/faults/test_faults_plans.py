"""Fault specs and plans: validation, fingerprints, the deterministic decision."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest

from hbeval_core.faults import (
    CascadePlan,
    CascadeStage,
    FaultPlan,
    FaultSpec,
    decide_fires,
    decision_draw,
    plan_from_dict,
)
from hbeval_core.vocab import EMPTY_KINDS, FAULT_MODES, HTTP_STATUSES, MALFORMED_KINDS


def make(**kw: Any) -> FaultSpec:
    base: dict[str, Any] = {"id": "F1", "target": "api", "mode": "timeout"}
    return FaultSpec(**{**base, **kw})


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"mode": "explode"}, "mode"),
        ({"target": ""}, "target"),
        ({"id": ""}, "id"),
        ({"after_ms": -1}, "after_ms"),
        ({"after_ms": 1.5}, "after_ms"),
        ({"probability": 1.5}, "probability"),
        ({"probability": -0.1}, "probability"),
        ({"probability": math.nan}, "probability"),
        ({"probability": "0.5"}, "probability"),
        ({"mode": "error_5xx", "http_status": 404}, "http_status"),
        ({"mode": "timeout", "http_status": 503}, "http_status"),
        ({"mode": "empty_response", "empty_kind": "object"}, "empty_kind"),
        ({"mode": "timeout", "empty_kind": "null"}, "empty_kind"),
        ({"mode": "malformed", "malformed_kind": "garbled"}, "malformed_kind"),
        ({"mode": "latency", "malformed_kind": "wrong_type"}, "malformed_kind"),
        ({"on_calls": ()}, "on_calls"),
        ({"on_calls": (-1,)}, "on_calls"),
        ({"on_calls": "0"}, "on_calls"),
        ({"on_calls": (True,)}, "on_calls"),
    ],
)
def test_bad_fault_spec_fields_name_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"field '{field}'"):
        make(**fields)


def test_bad_mode_message_lists_the_valid_modes() -> None:
    with pytest.raises(ValueError) as err:
        make(mode="explode")
    assert all(mode in str(err.value) for mode in FAULT_MODES)


def test_every_vocab_value_is_accepted() -> None:
    for mode in FAULT_MODES:
        assert make(mode=mode).mode == mode
    for status in HTTP_STATUSES:
        assert make(mode="error_5xx", http_status=status).http_status == status
    for kind in EMPTY_KINDS:
        assert make(mode="empty_response", empty_kind=kind).empty_kind == kind
    for kind in MALFORMED_KINDS:
        assert make(mode="malformed", malformed_kind=kind).malformed_kind == kind


def test_normalisation() -> None:
    spec = make(probability=1, on_calls=[2, 0, 2])
    assert spec.probability == 1.0 and isinstance(spec.probability, float)
    assert spec.on_calls == (0, 2)
    assert spec.allows(0) and spec.allows(2) and not spec.allows(1)
    assert make().allows(99)
    assert make(target="*").matches("anything") and not make().matches("other")


def test_plan_validation() -> None:
    with pytest.raises(ValueError, match="field 'seed'"):
        FaultPlan(id="P", seed=None, faults=[])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="field 'id'"):
        FaultPlan(id="", seed=1)
    with pytest.raises(ValueError, match="duplicate"):
        FaultPlan(id="P", seed=1, faults=[make(), make()])
    with pytest.raises(ValueError, match="field 'faults'"):
        FaultPlan(id="P", seed=1, faults=[{"id": "F1"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="field 'mode'"):
        CascadeStage(target="a", mode="nope")
    with pytest.raises(ValueError, match="field 'stages'"):
        CascadePlan(id="C", seed=1, stages=[make()])  # type: ignore[list-item]


def test_plans_are_frozen_and_hashable() -> None:
    plan = FaultPlan(id="P", seed=1, faults=[make()])
    assert isinstance(plan.faults, tuple)
    assert hash(plan) == hash(FaultPlan(id="P", seed=1, faults=(make(),)))
    with pytest.raises(AttributeError):
        plan.seed = 2  # type: ignore[misc]


def test_fingerprint_ignores_ids_and_sorts_by_target_and_mode() -> None:
    a = FaultPlan(id="A", seed=1, faults=[make(id="x", target="b"), make(id="y", target="a")])
    b = FaultPlan(id="B", seed=1, faults=[make(id="p", target="a"), make(id="q", target="b")])
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() == a.fingerprint().upper()
    assert a.fingerprint() != FaultPlan(id="A", seed=2, faults=a.faults).fingerprint()


def test_unset_kinds_fingerprint_as_reference_defaults() -> None:
    # The reference body always carries empty_kind "null" and malformed_kind "wrong_schema".
    unset = FaultPlan(id="P", seed=1, faults=[make(mode="malformed")])
    explicit = FaultPlan(
        id="P", seed=1, faults=[make(mode="malformed", malformed_kind="wrong_schema")]
    )
    assert unset.fingerprint() == explicit.fingerprint()
    body = FaultPlan(
        id="P", seed=1, faults=[make(mode="empty_response", empty_kind="empty_object")]
    )
    assert body.fingerprint_body()["faults"][0]["empty_kind"] == "empty_object"


def test_cascade_extensions_change_the_fingerprint_only_when_set() -> None:
    plain = CascadePlan(id="C", seed=1, stages=[CascadeStage(target="a", mode="malformed")])
    kinded = CascadePlan(
        id="C",
        seed=1,
        stages=[CascadeStage(target="a", mode="malformed", malformed_kind="invalid_json")],
    )
    assert "malformed_kind" not in plain.fingerprint_body()["stages"][0]
    assert plain.fingerprint() != kinded.fingerprint()


def test_draw_matches_an_independent_sha256() -> None:
    for attempt in range(3):
        digest = hashlib.sha256(f"7:plan-x:*:{attempt}".encode()).hexdigest()
        assert decision_draw(7, "plan-x", "*", attempt) == int(digest[:8], 16) / 0xFFFFFFFF


def test_decide_fires_edges() -> None:
    assert all(decide_fires(42, "FI-001", "carrier_api", a, 1.0) for a in range(5))
    assert not any(decide_fires(42, "FI-001", "carrier_api", a, 0.0) for a in range(5))
    fired = [a for a in range(5) if decide_fires(42, "FI-001", "carrier_api", a, 0.3)]
    assert fired == [2, 4]


def test_plan_round_trips_through_dicts() -> None:
    plan = FaultPlan(
        id="P",
        seed=3,
        faults=[
            make(on_calls=(1,)),
            make(id="F2", mode="empty_response", empty_kind="empty_array"),
        ],
    )
    cascade = CascadePlan(
        id="C",
        seed=3,
        stages=[CascadeStage(target="a", mode="timeout", after_ms=10, on_calls=(0,))],
    )
    assert plan_from_dict(plan.to_dict()) == plan
    assert plan_from_dict(cascade.to_dict()) == cascade
    with pytest.raises(ValueError, match="kind"):
        plan_from_dict({"kind": "other"})
