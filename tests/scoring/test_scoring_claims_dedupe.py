"""A final-state claim echoed into the trace as a claim event is counted once."""

from __future__ import annotations

from hbeval.scoring._claims import collect_claims
from hbeval_core.events import Claim


def test_final_state_claim_echoed_as_event_counts_once() -> None:
    echoed = Claim(
        run_id="r", name="recovered_intentionally", value=True, attrs={"source": "final_state"}
    )
    own = Claim(run_id="r", name="deliberate_handling", value=True)
    final_state = {"recovered_intentionally": True, "replanned": True, "answer": "done"}
    claims = collect_claims([echoed, own], final_state)
    assert sorted(claims) == sorted(
        [
            ("recovered_intentionally", True, "final_state"),
            ("deliberate_handling", True, "claim_event"),
            ("replanned", True, "final_state"),
        ]
    )
