"""HCI-EDM: explanations quote stored figures verbatim, or defer to a human."""

from __future__ import annotations

from typing import Any

import pytest

from hbeval_core.memory import EDM, ContextError, render_context

REFUND = "Refund the duplicate charge on order 4411"
QUERY = "Order 4411 was charged twice; issue a refund for the extra charge"


def episode(**over: Any) -> dict[str, Any]:
    return {
        "agent_id": "support",
        "run_id": "run-42",
        "trial_key": "s3-t1",
        "context": REFUND,
        "summary": "lookup_order -> refund -> verified",
        "metrics": {"pei": 0.8333, "frr": None, "irs": None, "ti": 4.5},
        "metrics_undefined": {"frr": "no_fault_observed", "irs": "no_fault_observed"},
        "evidence": "E2",
        "passed": True,
        **over,
    }


def test_grounded_quotes_stored_figures_verbatim() -> None:
    edm = EDM()
    eid = edm.admit(episode()).episode_id
    out = edm.explain(QUERY, agent_id="support")
    assert out["grounded"] is True and out["deferred_to_human"] is False
    assert out["cited_episode_id"] == eid
    assert out["similarity"] >= edm.threshold
    assert out["cited_metrics"] == {"pei": 0.8333, "frr": None, "irs": None, "ti": 4.5}
    text = out["explanation"]
    assert (
        f"PEI 0.8333, FRR undefined (no_fault_observed), IRS undefined (no_fault_observed) and TI 4.5, recorded for episode {eid} (run run-42"
        in text
    )
    assert "lookup_order -> refund -> verified" in text
    assert out["undefined"] == {"frr": "no_fault_observed", "irs": "no_fault_observed"}
    assert out["evidence"] == {"pei": 0.8333, "ti": 4.5}
    assert out["embedder"] == edm.embedder.name and out["threshold"] == edm.threshold


def test_figures_are_not_rounded() -> None:
    edm = EDM()
    edm.admit(
        episode(metrics={"pei": 0.83333333, "frr": 0.30000000000000004, "irs": None, "ti": 4.0})
    )
    text = edm.explain(REFUND, "support")["explanation"]
    assert "PEI 0.83333333" in text and "FRR 0.30000000000000004" in text and "TI 4.0" in text


def test_defers_when_nothing_qualifies() -> None:
    edm = EDM()
    edm.admit(episode())
    out = edm.explain("Translate the product description into Spanish", agent_id="support")
    assert out["grounded"] is False and out["deferred_to_human"] is True
    assert out["explanation"].startswith("Uncertain — human review advised: no qualified precedent")
    assert out["cited_episode_id"] is None and out["cited_metrics"] is None
    assert isinstance(out["similarity"], float) and out["similarity"] < edm.threshold
    assert "0.8333" not in out["explanation"]  # nothing is quoted without a citation


def test_empty_store_and_other_agents_defer_with_no_similarity() -> None:
    edm = EDM()
    out = edm.explain(QUERY)
    assert out["grounded"] is False and out["similarity"] is None
    assert "no qualified episodes are stored for agent 'default'" in out["explanation"]
    edm.admit(episode(agent_id="ops"))
    assert edm.explain(QUERY, agent_id="support")["grounded"] is False
    assert edm.explain(QUERY, agent_id="ops")["grounded"] is True


def test_refused_and_unsafe_episodes_are_never_cited() -> None:
    edm = EDM()
    edm.admit(episode(evidence="E0"))
    edm.admit(episode(trial_key="x", forbidden_tools_run=["wire"]))
    edm.admit(episode(trial_key="y", metrics={"pei": 0.5, "ti": 4.5}))
    out = edm.explain(REFUND, agent_id="support")
    assert out["grounded"] is False and out["cited_episode_id"] is None


def test_dict_context_renders_in_reference_order() -> None:
    ctx = {"tool": "carrier_api", "ti": None, "pei": 0.85, "domain": "logistics", "attempts": 2}
    assert render_context(ctx) == "domain=logistics; pei=0.85; ti=n/a; attempts=2; tool=carrier_api"
    assert render_context({}) == "domain=unspecified; pei=n/a; ti=n/a"
    with pytest.raises(ContextError, match=r"context\.nested"):
        render_context({"nested": {"a": 1}})
    with pytest.raises(ContextError):
        render_context(42)


def test_dict_context_finds_an_episode_stored_by_summary() -> None:
    edm = EDM()
    d = edm.admit(
        {"domain": "logistics", "pei": 0.85, "ti": 4.25, "evidence": "E1", "passed": True}
    )
    out = edm.explain({"domain": "logistics", "pei": 0.85, "ti": 4.25})
    assert out["grounded"] is True and out["cited_episode_id"] == d.episode_id
    assert out["similarity"] == pytest.approx(1.0, abs=1e-4)
    assert out["query"] == "domain=logistics; pei=0.85; ti=4.25"
