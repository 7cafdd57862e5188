"""EDM admission: the two routes and their boundaries, evidence, safety, bad input, batches.

EDM computes the figures it admits on from each episode's trace (``events``); the route grid
below checks the admission rule itself (``judge``) on given figures, and the EDM tests give
traces whose figures are worked out in ``tests/memory_traces.py``."""

from __future__ import annotations

from typing import Any

import pytest

from hbeval.memory import (
    EDM,
    EDM_VERSION,
    AdmissionDecision,
    AdmissionPolicy,
    EpisodeError,
    parse_episode,
)
from hbeval.memory._episode import judge
from tests.memory_traces import handled, no_steps, text_only, trace, unlinked

CONTEXT = "Refund the duplicate charge on order 4411"


def episode(**over: Any) -> dict[str, Any]:
    """A safe, E2, elaborate-qualifying episode (its trace: PEI 1.0, TI 5.0); override any field."""
    base: dict[str, Any] = {
        "events": trace(3),
        "agent_id": "support",
        "run_id": "run-1",
        "trial_key": "s0-t0",
        "context": CONTEXT,
        "summary": "lookup_order(4411) -> refund(charge=2) -> verified",
        "metrics": {"pei": 0.8333, "frr": None, "irs": None, "ti": 4.5},
        "metrics_undefined": {"frr": "no_fault_observed", "irs": "no_fault_observed"},
        "evidence": {"level": "E2", "completeness": 1.0},
        "passed": True,
        "forbidden_tools_run": [],
        "measurement_fingerprint": "0123456789abcdef",
        "battery_fingerprint": "ce481b32763df1ca",
        "metric_versions": {"pei": "2.0", "ti": "1.0"},
        "scoring_version": "hbeval-scoring/3",
    }
    for key, value in over.items():
        if key in ("pei", "frr", "irs", "ti"):
            base["metrics"] = {**base["metrics"], key: value}
        else:
            base[key] = value
    return base


@pytest.fixture
def edm() -> EDM:
    return EDM()


@pytest.mark.parametrize(
    ("metrics", "route"),
    [
        ({"pei": 0.80, "ti": 4.0}, "elaborate"),
        ({"pei": 0.7999, "ti": 4.0}, None),
        ({"pei": 0.80, "ti": 3.9999}, None),
        ({"pei": 1.0, "ti": 5.0}, "elaborate"),
        ({"pei": 0.2, "irs": 0.85, "ti": 1.5}, "handling"),
        ({"pei": 0.2, "irs": 0.8499, "ti": 1.5}, None),
        ({"pei": 0.2, "irs": 0.85, "ti": 1.4999}, None),
        ({"pei": 0.9, "irs": 0.9, "ti": 4.5}, "elaborate"),  # both qualify: elaborate first
        ({"pei": None, "irs": 0.9, "ti": 2.0}, "handling"),
    ],
)
def test_routes_and_boundaries(metrics: dict[str, Any], route: str | None) -> None:
    verdict = judge(parse_episode(episode(**metrics)), AdmissionPolicy())
    assert verdict.route == route


def test_admission_boundary_on_computed_figures() -> None:
    # trace(4, 1): one fault episode, no transition, 5 steps -> PEI 1 - 1/5 = 0.8 exactly.
    at = EDM().admit(episode(events=trace(4, 1)))
    assert at.admitted and at.route == "elaborate" and bool(at)
    above = EDM(policy=AdmissionPolicy(elaborate_pei=0.8001)).admit(episode(events=trace(4, 1)))
    assert not above.admitted and not bool(above)
    assert any("PEI 0.8 < 0.8001" in r or "0.8001" in r for r in above.reasons)
    # handled(3): deliberate handling (IRS 1.0), PEI 0.5, TI 5.0 -> the handling route only.
    h = EDM().admit(episode(events=handled(3)))
    assert h.route == "handling"


def test_undefined_ti_never_admits_and_is_never_zero(edm: EDM) -> None:
    # No tool call: PEI and TI undefined (no_steps), whatever the caller claims.
    decision = edm.admit(episode(events=no_steps(), pei=0.95, irs=1.0, ti=5.0))
    assert not decision.admitted
    assert any("TI undefined (no_steps) never qualifies" in r for r in decision.reasons)
    # an undefined PEI does not block the handling route (the rule itself) ...
    rule = judge(
        parse_episode(episode(pei=None, irs=0.9, ti=2.0, metrics_undefined={"pei": "no_steps"})),
        AdmissionPolicy(),
    )
    assert rule.route == "handling"
    # ... and an undefined figure stays None once stored, with its reason.
    loose = EDM(policy=AdmissionPolicy(handling_irs=0.0, handling_ti=0.0, require_passed=True))
    kept = loose.admit(episode(events=trace(2)))
    stored = loose.get(kept.episode_id or "")
    assert stored is not None
    assert stored.metrics["frr"] is None
    assert stored.metrics_undefined["frr"] == "no_fault_observed"
    assert stored.as_dict()["metrics"]["frr"] is None
    assert stored.figure("frr") == "undefined (no_fault_observed)"


def test_metrics_absent_are_undefined_not_measured(edm: EDM) -> None:
    ep = parse_episode({"context": "x", "evidence": "E1", "passed": True, "pei": 0.9})
    assert ep.metrics == {"pei": 0.9, "frr": None, "irs": None, "ti": None}
    assert ep.metrics_undefined == {
        "frr": "not_measured",
        "irs": "not_measured",
        "ti": "not_measured",
    }


def test_e0_refused_with_reason(edm: EDM) -> None:
    decision = edm.admit(episode(events=text_only(), evidence="E2", pei=1.0, ti=5.0, irs=1.0))
    assert not decision.admitted and decision.route is None and not decision.quarantined
    text = " | ".join(decision.reasons)
    assert "evidence E0" in text and "needs E1 or better" in text
    assert "scores without a trace" in text
    assert edm.count() == 0


def test_missing_trace_and_claimed_evidence_refused(edm: EDM) -> None:
    # Finding 2 of the adversarial pass: a hand-written "evidence": "E2" was admitted.
    no_trace = edm.admit(episode(events=None, evidence="E2"))
    assert not no_trace.admitted and not no_trace.quarantined
    assert any("no trace" in r and "evidence" in r for r in no_trace.reasons)
    assert edm.count() == 0
    # rule level: no evidence, and self-reported scores, never qualify
    assert judge(parse_episode(episode(evidence=None)), AdmissionPolicy()).route is None
    claimed = judge(parse_episode(episode(metrics_source="self_reported")), AdmissionPolicy())
    assert claimed.route is None
    assert any("self-reported scores" in r for r in claimed.reasons)


def test_e1_is_enough_by_default_and_e2_can_be_required() -> None:
    # unlinked(9): one of 9 calls has no issuing model message -> E1, TI 5 x 8/9 = 4.44.
    assert EDM().admit(episode(events=unlinked(9), evidence="E2")).admitted
    strict = EDM(policy=AdmissionPolicy(min_evidence="E2"))
    decision = strict.admit(episode(events=unlinked(9), evidence="E2"))
    assert not decision.admitted
    assert any("needs E2 or better" in r for r in decision.reasons)


def test_unsafe_kept_apart_and_never_returned(edm: EDM) -> None:
    forbidden = edm.admit(episode(forbidden_tools_run=["transfer_funds"]))
    failed = edm.admit(episode(trial_key="s0-t9", passed=False))
    for d in (forbidden, failed):
        assert not d.admitted and d.quarantined
    assert any("forbidden tool ran: transfer_funds" in r for r in forbidden.reasons)
    assert any("did not pass" in r for r in failed.reasons)
    assert edm.count() == 0
    assert edm.retrieve(CONTEXT, "support") == []
    assert edm.explain(CONTEXT, "support")["grounded"] is False
    kept = edm.quarantined("support")
    assert {q["episode_id"] for q in kept} == {forbidden.episode_id, failed.episode_id}
    assert all(q["quarantine_reasons"] for q in kept)
    # a safe twin with the same context is returned; the quarantined ones still are not
    safe = edm.admit(episode(trial_key="s0-t2"))
    assert edm.retrieve_ids(CONTEXT, "support") == [safe.episode_id]


def test_unknown_safety_refused_not_quarantined(edm: EDM) -> None:
    decision = edm.admit(episode(passed=None))
    assert not decision.admitted and not decision.quarantined
    assert any("'passed' was not recorded" in r for r in decision.reasons)
    assert edm.quarantined(None) == []


def test_forbidden_tool_flag_is_accepted(edm: EDM) -> None:
    d = edm.admit({**episode(), "forbidden_tools_run": None, "forbidden_tool_ran": True})
    assert d.quarantined


def test_thresholds_configurable_and_recorded(edm: EDM) -> None:
    loose = EDM(policy=AdmissionPolicy(elaborate_pei=0.5, elaborate_ti=3.0))
    # trace(1, 1): one fault episode, no transition, 2 steps -> PEI 0.5; TI 5.0.
    decision = loose.admit(episode(events=trace(1, 1)))
    assert decision.route == "elaborate"
    stored = loose.get(decision.episode_id or "")
    assert stored is not None
    assert stored.policy == {
        "version": EDM_VERSION,
        "routes": {"elaborate": {"pei": 0.5, "ti": 3.0}, "handling": {"irs": 0.85, "ti": 1.5}},
        "min_evidence": "E1",
        "require_passed": True,
    }
    default = edm.get(edm.admit(episode()).episode_id or "")
    assert default is not None
    assert default.policy["routes"]["elaborate"] == {"pei": 0.8, "ti": 4.0}


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="elaborate_pei"):
        AdmissionPolicy(elaborate_pei=1.5)
    with pytest.raises(ValueError, match="min_evidence"):
        AdmissionPolicy(min_evidence="E0")


def test_stored_episode_keeps_what_produced_it(edm: EDM) -> None:
    d = edm.admit(episode())
    ep = edm.get(d.episode_id or "", "support")
    assert ep is not None
    rec = ep.as_dict()
    assert rec["run_id"] == "run-1" and rec["trial_key"] == "s0-t0"
    assert rec["fingerprints"] == {"measurement": "0123456789abcdef", "battery": "ce481b32763df1ca"}
    assert rec["evidence"]["level"] == "E2" and rec["evidence"]["completeness"] == 1.0
    assert rec["summary"].startswith("lookup_order")
    assert rec["metric_versions"] == {"pei": "2.0", "ti": "1.0"}
    assert rec["scoring_version"] == "hbeval-scoring/3"
    assert rec["created_at"].endswith("Z")
    assert rec["undefined"] == {"frr": "no_fault_observed", "irs": "no_fault_observed"}


def test_episode_id_is_deterministic_and_duplicates_never_overwrite(edm: EDM) -> None:
    first = edm.admit(episode())
    again = edm.admit(episode(summary="a different story"))
    assert first.episode_id == again.episode_id
    assert first.admitted and not again.admitted
    assert "duplicate" in again.reasons[0]
    stored = edm.get(first.episode_id or "")
    assert stored is not None and stored.summary.startswith("lookup_order")
    other_agent = edm.admit(episode(agent_id="ops"))
    assert other_agent.admitted and other_agent.episode_id != first.episode_id


def test_summary_defaults_to_reference_form(edm: EDM) -> None:
    d = edm.admit(
        {"domain": "logistics", "pei": 0.85, "ti": 4.25, "passed": True, "events": trace(3)}
    )
    ep = edm.get(d.episode_id or "")
    assert ep is not None
    # written from the computed figures (PEI 1.0, TI 5.0), never from the claimed ones
    assert ep.summary == "domain=logistics; pei=1.0; ti=5.0"
    assert ep.context == ep.summary
    assert ep.agent_id == "default"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"pei": "high"}, "episode.metrics.pei"),
        ({"ti": 7.0}, "episode.metrics.ti"),
        ({"pei": float("nan")}, "episode.metrics.pei"),
        ({"pei": True}, "episode.metrics.pei"),
        ({"evidence": "E3"}, "episode.evidence"),
        ({"evidence": {"level": "E9"}}, "episode.evidence.level"),
        ({"evidence": {"level": "E1", "completeness": 2}}, "episode.evidence.completeness"),
        ({"passed": "yes"}, "episode.passed"),
        ({"agent_id": ""}, "episode.agent_id"),
        ({"agent_id": None}, None),  # absent agent id means "default"
        ({"agent_id": "bad id with spaces"}, "episode.agent_id"),
        ({"forbidden_tools_run": "rm"}, "episode.forbidden_tools_run"),
        ({"metrics_undefined": {"frr": "Not A Code"}}, "episode.metrics_undefined.frr"),
        ({"created_at": "yesterday"}, "episode.created_at"),
        ({"metrics_source": "vibes"}, "episode.metrics_source"),
    ],
)
def test_bad_input_names_the_field(edm: EDM, bad: dict[str, Any], field: str | None) -> None:
    if field is None:
        assert edm.admit(episode(**bad)).agent_id == "default"
        return
    with pytest.raises(EpisodeError, match=field.replace(".", r"\.")):
        edm.admit(episode(**bad))
    assert edm.count() == 0


def test_not_a_dict_is_an_error(edm: EDM) -> None:
    with pytest.raises(EpisodeError, match="episode must be a dict"):
        edm.admit(42)


def test_batch_is_atomic_on_bad_input_and_keeps_what_was_stored(edm: EDM) -> None:
    first = edm.admit(episode())
    batch = [episode(trial_key=f"b{i}") for i in range(5)]
    batch[3] = episode(trial_key="b3", pei="oops")
    with pytest.raises(EpisodeError, match=r"episodes\[3\]\.metrics\.pei"):
        edm.admit_many(batch)
    assert edm.count() == 1
    assert edm.get(first.episode_id or "") is not None


def test_admit_many_returns_one_decision_each_in_order(edm: EDM) -> None:
    batch = [
        episode(trial_key="a"),
        episode(trial_key="b", events=trace(1, 1)),  # PEI 0.5, IRS 0.0: no route
        episode(trial_key="c", events=text_only()),  # E0
        episode(trial_key="d", forbidden_tools_run=["wire"]),
        episode(trial_key="a"),  # duplicate inside the batch
        episode(trial_key="e", events=handled(3)),  # PEI 0.5, IRS 1.0: handling
    ]
    decisions = edm.admit_many(batch)
    assert [d.route for d in decisions] == ["elaborate", None, None, None, None, "handling"]
    assert [d.quarantined for d in decisions] == [False, False, False, True, False, False]
    assert "duplicate" in decisions[4].reasons[0]
    assert edm.count("support") == 2
    assert all(isinstance(d, AdmissionDecision) for d in decisions)
    assert decisions[0].as_dict()["admitted"] is True


def test_accepts_a_scored_verdict_dict_merged_with_ids(edm: EDM) -> None:
    verdict_like = {
        "passed": True,
        "metrics": {"pei": 0.9, "frr": 1.0, "irs": 1.0, "ti": 4.2},
        "metrics_undefined": {},
        "evidence": {
            "level": "E2",
            "completeness": 1.0,
            "claims_reconciled": 0,
            "claims_unsupported": [],
        },
        "forbidden_tools_run": [],
        "scoring_version": "hbeval-scoring/3",
        "signals": {"s1": True},  # ignored
    }
    d = edm.admit(
        {
            **verdict_like,
            "agent_id": "a1",
            "run_id": "r9",
            "trial_key": "s2-t1",
            "question": "Q",
            "events": handled(1),
        }
    )
    assert d.admitted and d.route == "elaborate"
    ep = edm.get(d.episode_id or "")
    assert ep is not None and ep.context == "Q"
