"""HCI-EDM: explanations quote stored figures verbatim, or defer to a human."""

from __future__ import annotations

from typing import Any

import pytest

from hbeval.memory import EDM, ContextError, render_context
from tests.memory_traces import text_only, trace

REFUND = "Refund the duplicate charge on order 4411"
QUERY = "Order 4411 was charged twice; issue a refund for the extra charge"


def episode(**over: Any) -> dict[str, Any]:
    return {
        "agent_id": "support",
        "run_id": "run-42",
        "trial_key": "s3-t1",
        "context": REFUND,
        "summary": "lookup_order -> refund -> verified",
        # trace(5, 1): PEI 1 - 1/6, FRR 0/1 = 0.0, IRS 0.0 (not deliberate), TI 5.0
        "events": trace(5, 1),
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
    assert out["cited_metrics"] == {"pei": 1 - 1 / 6, "frr": 0.0, "irs": 0.0, "ti": 5.0}
    text = out["explanation"]
    assert (
        f"PEI {1 - 1 / 6!r}, FRR 0.0, IRS 0.0 and TI 5.0, recorded for episode {eid} (run run-42"
        in text
    )
    assert "lookup_order -> refund -> verified" in text
    assert out["undefined"] == {}
    assert out["evidence"] == {"pei": 1 - 1 / 6, "ti": 5.0}
    assert out["embedder"] == edm.embedder.name and out["threshold"] == edm.threshold


def test_figures_are_not_rounded() -> None:
    edm = EDM()
    edm.admit(episode())  # PEI 1 - 1/6 is stored and quoted with every digit
    text = edm.explain(REFUND, "support")["explanation"]
    assert "PEI 0.8333333333333334," in text and "TI 5.0" in text


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
    edm.admit(episode(events=text_only()))  # E0
    edm.admit(episode(trial_key="x", forbidden_tools_run=["wire"]))
    edm.admit(episode(trial_key="y", events=trace(1, 1)))  # PEI 0.5, IRS 0.0: no route
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
    d = edm.admit({"domain": "logistics", "events": trace(3), "passed": True})
    # the summary is written from the computed figures: PEI 1.0, TI 5.0
    out = edm.explain({"domain": "logistics", "pei": 1.0, "ti": 5.0})
    assert out["grounded"] is True and out["cited_episode_id"] == d.episode_id
    assert out["similarity"] == pytest.approx(1.0, abs=1e-4)
    assert out["query"] == "domain=logistics; pei=1.0; ti=5.0"
