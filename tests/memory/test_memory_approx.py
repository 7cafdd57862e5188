"""EDM's approximate index gives the exact path's results, and never a deleted episode.

The approximate index (faiss IVF-Flat, ``EDM.build_index``) only proposes candidates; EDM ranks
them from the vectors SQLite holds. Here every query is answered both ways and compared: on the
labelled pairs at both calibrated thresholds (0.31 for the hashing embedder, 0.87, MiniLM's),
and on a few thousand episodes spread over many index cells. A deleted episode, one deleted
behind EDM's back (rows removed with SQL, the saved index left as it was) and a quarantined one
are never returned.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hbeval.memory import EDM, HashingEmbedder
from hbeval.memory._ann import ann_paths
from tests.memory_traces import trace

pytest.importorskip("faiss")

PAIRS = Path(__file__).resolve().parents[1] / "fixtures" / "edm_pairs.json"
AGENT = "support"
VERBS = ["refund", "restart", "rotate", "cancel", "update", "escalate", "reset", "unlock"]
OBJECTS = ["order", "payment service", "TLS certificate", "subscription", "ticket", "password"]
CAUSES = ["after the 503 errors", "because the customer asked", "after a timeout", "twice"]


def episode(context: str, trial: str, agent: str = AGENT) -> dict[str, Any]:
    return {
        "agent_id": agent,
        "run_id": "run-1",
        "trial_key": trial,
        "context": context,
        "summary": f"handled: {context}",
        "events": trace(3),
        "metrics": {"pei": 1.0, "frr": None, "irs": None, "ti": 5.0},
        "metrics_undefined": {"frr": "no_fault_observed", "irs": "no_fault_observed"},
        "evidence": "E2",
        "passed": True,
    }


def answers(edm: EDM, query: str, k: int = 3) -> list[tuple[str, float]]:
    return [(m.episode.episode_id, round(m.similarity, 5)) for m in edm.retrieve(query, AGENT, k)]


def both(path: Path, threshold: float | None = None) -> tuple[EDM, EDM]:
    approx = EDM(path, threshold=threshold)
    exact = EDM(path, threshold=threshold, approximate=False)
    return approx, exact


@pytest.mark.parametrize("threshold", [HashingEmbedder().threshold, 0.87])
def test_labelled_pairs_give_the_exact_results(tmp_path: Path, threshold: float) -> None:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    path = tmp_path / "edm.db"
    with EDM(path) as edm:
        decisions = edm.admit_many([episode(p["a"], p["id"]) for p in pairs])
        assert all(decisions)
        assert edm.build_index(AGENT) == len(pairs)
    approx, exact = both(path, threshold)
    found = 0
    for p in pairs:
        want = answers(exact, p["b"])
        assert answers(approx, p["b"]) == want, p["id"]
        found += bool(want)
        got = approx.explain(p["b"], AGENT)
        ref = exact.explain(p["b"], AGENT)
        assert got["grounded"] == ref["grounded"]
        assert got.get("cited_episode_id") == ref.get("cited_episode_id")
    # the hashing embedder finds most similar pairs at its 0.31, few at MiniLM's 0.87
    assert found >= (10 if threshold < 0.5 else 1), "the fixture's similar pairs are found"
    assert approx._approx.get(AGENT) is not None, "the approximate path was the one used"


def contexts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(VERBS).capitalize()} the {rng.choice(OBJECTS)} {i % 97} "
        f"{rng.choice(CAUSES)} for customer {rng.randrange(500)}"
        for i in range(n)
    ]


def test_many_cells_rank_exactly_and_see_later_admissions(tmp_path: Path) -> None:
    path = tmp_path / "edm.db"
    with EDM(path) as edm:
        texts = contexts(4_000, 1)
        edm.admit_many([episode(t, f"t{i}") for i, t in enumerate(texts)])
        assert edm.build_index(AGENT) == 4_000
        # admitted after the index was built: searched exactly beside it
        later = contexts(200, 2)
        edm.admit_many([episode(t, f"later{i}") for i, t in enumerate(later)])
    approx, exact = both(path)
    assert approx._approx_for(AGENT) is not None
    same = total = 0
    for query in contexts(150, 3) + later[:50]:
        want, got = answers(exact, query), answers(approx, query)
        # every answer is exact: a returned episode has its exact similarity, best first
        assert set(got) <= set(answers(exact, query, 400))
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        same += [s for _, s in got] == [s for _, s in want]  # equal scores: ties may swap
        total += 1
    assert same / total >= 0.9, same / total
    for i, text in enumerate(later[:20]):
        assert f"later{i}" in {m.episode.trial_key for m in approx.retrieve(text, AGENT, 3)}


def test_deleted_and_quarantined_episodes_never_come_back(tmp_path: Path) -> None:
    path = tmp_path / "edm.db"
    texts = contexts(600, 4)
    with EDM(path) as edm:
        edm.admit_many([episode(t, f"t{i}") for i, t in enumerate(texts)])
        unsafe = {**episode(texts[1], "poison"), "forbidden_tools_run": ["drop_database"]}
        assert edm.admit(unsafe).quarantined
        edm.build_index(AGENT)
    first = EDM(path).retrieve(texts[0], AGENT, 1)[0].episode
    victim = EDM(path).retrieve(texts[2], AGENT, 1)[0].episode

    # behind EDM's back: rows removed with SQL, the saved index left holding them
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM edm_episodes WHERE episode_id = ?", (victim.episode_id,))
    conn.commit()
    conn.close()
    approx = EDM(path)
    assert (
        approx._approx_for(AGENT) is not None
        and ann_paths(str(path), AGENT, approx.embedder.name)[0].exists()
    )
    for text in texts[:50]:
        ids = {m.episode.episode_id for m in approx.retrieve(text, AGENT, 5)}
        assert victim.episode_id not in ids
        assert all(m.episode.trial_key != "poison" for m in approx.retrieve(text, AGENT, 5))

    # through EDM: the saved index is dropped, retrieval is exact again
    assert approx.delete(first.episode_id)
    assert not ann_paths(str(path), AGENT, approx.embedder.name)[0].exists()
    assert first.episode_id not in {
        m.episode.episode_id for m in approx.retrieve(texts[0], AGENT, 5)
    }
    assert approx._approx_for(AGENT) is None


def test_no_index_without_a_file_or_for_another_embedder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="in-memory"):
        EDM().build_index(AGENT)
    path = tmp_path / "edm.db"
    with EDM(path) as edm:
        edm.admit_many([episode(t, f"t{i}") for i, t in enumerate(contexts(100, 5))])
        edm.build_index(AGENT)
    other = EDM(path, embedder=HashingEmbedder(dim=256))
    assert other._approx_for(AGENT) is None
    assert other.retrieve(contexts(100, 5)[0], AGENT)  # the exact path still answers


def test_a_reopened_index_searches_on_the_callers_thread_with_the_same_candidates(
    tmp_path: Path,
) -> None:
    import faiss
    import numpy as np

    path = tmp_path / "edm.db"
    with EDM(path) as edm:
        edm.admit_many([episode(t, f"t{i}") for i, t in enumerate(contexts(2_000, 4))])
        edm.build_index(AGENT)
    with EDM(path) as edm:
        approx = edm._approx_for(AGENT)
        assert approx is not None
        index = approx.index._index
        ivf: Any = faiss.extract_index_ivf(index)
        lists: Any = faiss.downcast_InvertedLists(ivf.invlists)
        # Memory-mapped lists would start up to 32 read-ahead threads per search by default.
        assert lists.prefetch_nthread == 0
        queries = np.asarray(edm.embedder.embed(contexts(40, 5)), dtype=np.float32)
        without = [approx.index.candidates(q, 16).tolist() for q in queries]
        lists.prefetch_nthread = 32
        with_threads = [approx.index.candidates(q, 16).tolist() for q in queries]
    assert without == with_threads and all(without)
