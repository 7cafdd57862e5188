"""``EDM.snapshot``: a read-only, picklable copy that retrieves exactly as the EDM did when taken.

A battery's trials recall from it on every executor (threads, or Ray workers in other
processes), so it must answer as the live EDM would at that moment, in another process too, and
never see what is admitted after it was taken.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from hbeval.memory import EDM, EDMSnapshot, SnapshotError, open_edm

from .conftest import Backend
from .test_memory_retrieval import LOGIN, REFUND, RESTART, episode, fixed_clock

ROOT = Path(__file__).resolve().parents[2]
QUERIES = [
    "Order 4411 was charged twice; issue a refund for the extra charge",
    "The customer is locked out after a password reset",
    "Payment gateway returns 503: restart the service",
    "Translate the product description into Spanish",
    {"domain": "billing", "pei": 0.9, "tool": "refund_api"},
]


def answers(memory: EDM | EDMSnapshot, agent: str = "support") -> list[object]:
    """Everything retrieval gives for ``QUERIES``: ids with similarities, recall, explanations."""
    out: list[object] = []
    for q in QUERIES:
        out.append([(m.episode.as_dict(), m.similarity) for m in memory.retrieve(q, agent, k=3)])
        out.append(memory.recall(q, agent))
        out.append(memory.explain(q, agent))
        out.append(memory.precedents_for(str(q), agent)(None))
    return out


def filled(db: str | None = None) -> EDM:
    edm = EDM(db, clock=fixed_clock)
    edm.admit_many(
        [
            episode(LOGIN, "login"),
            episode(REFUND, "refund"),
            episode(RESTART, "restart"),
            episode(REFUND + " today", "refund-2"),
            episode(REFUND, "other-refund", agent="other"),
        ]
    )
    return edm


def test_a_snapshot_answers_as_the_edm_did_and_ignores_later_admissions(backend: Backend) -> None:
    with filled(backend.db) as edm:
        # A deletion reorders the live index (the last row moves into the hole): the snapshot
        # keeps the EDM's search order, so ties and ranks stay the same.
        assert edm.delete(edm.retrieve_ids(LOGIN, "support", k=1)[0])
        before = answers(edm)
        snap = edm.snapshot(["support"])
        assert snap.agent_ids == ("support",) and snap.count("support") == 3
        assert answers(snap) == before
        assert [e.episode_id for e in snap.list_episodes("support")] == [
            e.episode_id for e in edm.list_episodes("support")
        ]
        edm.admit(episode(REFUND + " again", "refund-3"))
        assert answers(edm) != before  # the EDM sees its new episode...
        assert answers(snap) == before  # ...the snapshot does not
        whole = edm.snapshot()
        assert whole.agent_ids == ("other", "support") and whole.count() == 5


def test_a_snapshot_pickles_and_answers_the_same_in_another_process(tmp_path: Path) -> None:
    with filled(str(tmp_path / "m.db")) as edm:
        snap = edm.snapshot(["support"])
        expected = answers(snap)
    assert answers(pickle.loads(pickle.dumps(snap))) == expected
    blob = tmp_path / "snap.pickle"
    blob.write_bytes(pickle.dumps((snap, expected)))
    code = (
        "import pickle, sys\n"
        "from tests.memory.test_memory_snapshot import answers\n"
        "snap, expected = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "assert answers(snap) == expected, 'answers differ in a new process'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(blob)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_snapshot_admits_nothing_and_names_what_it_lacks() -> None:
    edm = filled()
    snap = edm.snapshot(["support"])
    with pytest.raises(SnapshotError, match="read-only"):
        snap.admit(episode(REFUND, "x"))
    with pytest.raises(SnapshotError, match=r"not of agent 'other'.*EDM.snapshot\(\['other'"):
        snap.recall(REFUND, "other")
    with pytest.raises(ValueError, match="agent_id must be a non-empty string"):
        edm.snapshot([""])
    assert edm.count() == 5  # nothing changed
    empty = edm.snapshot(["nobody"])
    assert (
        empty.recall(REFUND, "nobody") == []
        and empty.explain(REFUND, "nobody")["grounded"] is False
    )


def test_open_edm_on_a_missing_file_snapshots_an_empty_memory(tmp_path: Path) -> None:
    with open_edm(tmp_path / "fresh.db") as edm:
        assert edm.snapshot().agent_ids == ()
