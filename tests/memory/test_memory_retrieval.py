"""EDM retrieval: threshold, agent isolation, deletion, exact top-k, persistence and migrations."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hbeval.memory import (
    EDM,
    EDM_SCHEMA_VERSION,
    DBLocationError,
    EDMSchemaError,
    HashingEmbedder,
    VectorIndex,
    open_edm,
    resolve_db,
)
from hbeval_core.live.monitor import Directive
from tests.memory_traces import trace

from .conftest import Backend

LOGIN = "Customer cannot log in after resetting their password"
REFUND = "Refund the duplicate charge on order 4411"
RESTART = "Restart the payment service after the 503 errors from the gateway"


def episode(context: str, trial: str, agent: str = "support", **over: Any) -> dict[str, Any]:
    return {
        "agent_id": agent,
        "run_id": "run-7",
        "trial_key": trial,
        "context": context,
        "summary": f"handled: {context}",
        "events": trace(3),  # PEI 1.0, TI 5.0, FRR and IRS undefined (no fault)
        "metrics": {"pei": 0.9, "frr": 1.0, "irs": None, "ti": 4.4},
        "metrics_undefined": {"irs": "no_fault_observed"},
        "evidence": "E2",
        "passed": True,
        **over,
    }


def fixed_clock() -> datetime:
    return datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.fixture
def edm() -> EDM:
    m = EDM(clock=fixed_clock)
    m.admit_many([episode(LOGIN, "login"), episode(REFUND, "refund"), episode(RESTART, "restart")])
    return m


def test_retrieves_the_similar_task_only(edm: EDM) -> None:
    matches = edm.retrieve(
        "Order 4411 was charged twice; issue a refund for the extra charge", "support"
    )
    assert [m.episode.trial_key for m in matches] == ["refund"]
    assert matches[0].similarity >= edm.threshold
    assert edm.retrieve("Translate the product description into Spanish", "support") == []


def test_threshold_is_the_embedders_and_configurable() -> None:
    assert EDM().threshold == HashingEmbedder().threshold
    strict = EDM(threshold=0.99)
    strict.admit(episode(REFUND, "r"))
    assert strict.retrieve("Refund the duplicate charge on order 4411 please", "support") == []
    assert strict.retrieve(REFUND, "support")  # identical text: cosine 1.0
    loose = EDM(threshold=-1.0)
    loose.admit(episode(REFUND, "r"))
    assert loose.retrieve("completely unrelated words", "support")
    with pytest.raises(ValueError, match="threshold"):
        EDM(threshold=1.5)


def test_agents_never_see_each_other(edm: EDM) -> None:
    other = edm.admit(episode(REFUND, "refund", agent="ops"))
    assert other.admitted
    ids_support = edm.retrieve_ids(REFUND, "support")
    ids_ops = edm.retrieve_ids(REFUND, "ops")
    assert ids_ops == [other.episode_id]
    assert other.episode_id not in ids_support and len(ids_support) == 1
    assert edm.retrieve(REFUND, "nobody") == []
    assert edm.get(other.episode_id or "", "support") is None
    assert not edm.delete(other.episode_id or "", "support")
    assert edm.retrieve_ids(REFUND, "ops") == [other.episode_id]


def test_deletion_makes_an_episode_unretrievable(edm: EDM) -> None:
    (refund,) = edm.retrieve(REFUND, "support")
    eid = refund.episode.episode_id
    assert edm.delete(eid)
    assert edm.retrieve(REFUND, "support") == []
    assert edm.get(eid) is None
    assert not edm.delete(eid)
    assert edm.count("support") == 2
    assert [m.episode.trial_key for m in edm.retrieve(LOGIN, "support")] == ["login"]


def test_top_k_is_exact_against_brute_force() -> None:
    rng = np.random.default_rng(7)
    index = VectorIndex(16)
    vectors = rng.standard_normal((500, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"e{i}" for i in range(500)]
    index.add(ids, vectors)
    for victim in ("e3", "e250", "e499"):
        index.remove(victim)
    alive = [i for i, eid in enumerate(ids) if eid not in ("e3", "e250", "e499")]
    for trial in range(40):
        q = rng.standard_normal(16).astype(np.float32)
        if trial % 2:  # sparse query: the path that reads only non-zero dimensions
            q[rng.permutation(16)[:11]] = 0.0
        q /= np.linalg.norm(q)
        hits, best = index.search(q, 5, 0.1)
        scores = {ids[i]: float(vectors[i] @ q) for i in alive}
        expected = sorted((s, e) for e, s in scores.items() if s >= 0.1)[::-1][:5]
        assert [e for e, _ in hits] == [e for _, e in expected]
        assert best == pytest.approx(max(scores.values()), abs=1e-6)
        assert all(s >= 0.1 for _, s in hits)


def test_k_and_agent_id_validated(edm: EDM) -> None:
    with pytest.raises(ValueError, match="k must be"):
        edm.retrieve(REFUND, "support", k=0)
    with pytest.raises(ValueError, match="agent_id"):
        edm.retrieve(REFUND, "")
    with pytest.raises(ValueError, match="context"):
        edm.retrieve("   ", "support")


def test_recall_renders_summary_and_quoted_figures(edm: EDM) -> None:
    (line,) = edm.recall(REFUND, "support")
    assert "handled: Refund the duplicate charge" in line
    assert "PEI 1.0" in line and "TI 5.0" in line and "IRS undefined (no_fault_observed)" in line
    assert "run run-7" in line


def test_precedents_for_feeds_monitor_directives(edm: EDM) -> None:
    lookup = edm.precedents_for(lambda: REFUND, "support")
    directive = Directive(action="replan", reason="PEI fell", step_index=3)
    (precedent,) = lookup(directive)
    assert precedent["trial_key"] == "refund" and precedent["similarity"] >= edm.threshold
    assert edm.precedents_for("Translate to Spanish", "support")(directive) == []


def test_persistence_across_reopen(backend: Backend) -> None:
    with EDM(backend.db, clock=fixed_clock) as first:
        d = first.admit(episode(REFUND, "refund"))
        first.admit(episode(LOGIN, "login", forbidden_tools_run=["wire"]))
        assert first.retrieve_ids(REFUND, "support") == [d.episode_id]
    with open_edm(backend.url) as second:
        assert second.count() == 1
        assert second.retrieve_ids(REFUND, "support") == [d.episode_id]
        ep = second.get(d.episode_id or "")
        assert ep is not None
        assert ep.metrics == {"pei": 1.0, "frr": None, "irs": None, "ti": 5.0}
        assert ep.metrics_undefined == {"frr": "no_fault_observed", "irs": "no_fault_observed"}
        assert ep.created_at == "2026-01-02T03:04:05.000000Z"
        assert len(second.quarantined("support")) == 1
        assert second.retrieve(LOGIN, "support") == []
        assert second.delete(d.episode_id or "")
    with EDM(backend.db) as third:
        assert third.retrieve(REFUND, "support") == []
        assert third.count() == 0


def test_vectors_are_float32_blobs_in_own_tables(backend: Backend) -> None:
    with EDM(backend.db) as edm:
        edm.admit(episode(REFUND, "refund"))
    tables = backend.tables()
    assert {"edm_meta", "edm_episodes", "edm_vectors", "edm_quarantine"} <= tables
    assert all(t.startswith("edm_") for t in tables)
    ((blob, dim, name),) = backend.sql("SELECT vector, dim, embedder FROM edm_vectors")
    assert dim == 384 and len(blob) == 384 * 4 and name == "hbeval-hash-ngram/1:384"
    vec = np.frombuffer(bytes(blob), dtype="<f4")
    assert float(np.linalg.norm(vec)) == pytest.approx(1.0, abs=1e-5)
    assert backend.sql("SELECT value FROM edm_meta WHERE key='schema_version'") == [
        (str(EDM_SCHEMA_VERSION),)
    ]
    # undefined is NULL, never zero
    assert backend.sql("SELECT pei, irs FROM edm_episodes") == [(1.0, None)]


def test_the_same_admissions_store_the_same_rows_on_both_backends(
    tmp_path: Path, postgres_url: str
) -> None:
    """What a PostgreSQL EDM stores and answers equals, row for row, what a SQLite one does."""
    seen = []
    for where in (Backend("sqlite", str(tmp_path / "hb.db")), Backend("postgres", postgres_url)):
        with EDM(where.db, clock=fixed_clock) as edm:
            decisions = edm.admit_many(
                [
                    episode(LOGIN, "login"),
                    episode(REFUND, "refund"),
                    episode(RESTART, "restart"),
                    episode(LOGIN, "unsafe", forbidden_tools_run=["wire"]),
                ]
            )
            assert edm.delete(decisions[1].episode_id or "")
            seen.append(
                (
                    [d.as_dict() for d in decisions],
                    [e.as_dict() for e in edm.list_episodes(None)],
                    edm.quarantined(None),
                    where.sql(
                        "SELECT episode_id, agent_id, embedder, dim, vector FROM edm_vectors "
                        "ORDER BY episode_id"
                    ),
                    [m.as_dict() for m in edm.retrieve(LOGIN, "support", k=3)],
                    edm.explain(RESTART, "support"),
                )
            )
    assert seen[0] == seen[1]
    assert len(seen[0][1]) == 2 and len(seen[0][2]) == 1 and len(seen[0][3]) == 2


def test_newer_schema_refused_clearly_and_nothing_lost(backend: Backend) -> None:
    with EDM(backend.db) as edm:
        edm.admit(episode(REFUND, "refund"))
    backend.sql("UPDATE edm_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(EDMSchemaError, match="schema version 99, newer than this hbeval"):
        EDM(backend.db)
    assert backend.sql("SELECT COUNT(*) FROM edm_episodes") == [(1,)]


def test_shares_the_store_without_touching_its_tables(backend: Backend) -> None:
    from hbeval.store import RunRecord, open_store

    record = RunRecord(
        run_id="r1",
        agent_id="a",
        battery="hbeval",
        measurement_fingerprint="m",
        manifest_hash=None,
        config={},
        created_at=1.0,
    )
    with open_store(backend.db) as store:
        store.start_run(record)
    with EDM(backend.db) as edm:
        edm.admit(episode(REFUND, "refund"))
    with open_store(backend.db, read_only=True) as store:
        assert store.get_run("r1") == record
    assert {"runs", "trials", "edm_episodes", "edm_vectors"} <= backend.tables()


def test_other_connections_changes_are_seen(backend: Backend) -> None:
    with EDM(backend.db) as reader, EDM(backend.db) as writer:
        assert reader.retrieve(REFUND, "support") == []  # loads an empty index
        d = writer.admit(episode(REFUND, "refund"))
        assert reader.retrieve_ids(REFUND, "support") == [d.episode_id]
        writer.delete(d.episode_id or "")
        assert reader.retrieve(REFUND, "support") == []
        # A writer that did not see another's admission reloads before it trusts its index.
        e = writer.admit(episode(LOGIN, "login"))
        f = reader.admit(episode(RESTART, "restart"))
        assert sorted(reader.retrieve_ids(LOGIN, "support", k=3)) == [e.episode_id]
        assert writer.retrieve_ids(RESTART, "support") == [f.episode_id]


def test_new_embedder_gets_its_own_vectors(backend: Backend) -> None:
    with EDM(backend.db) as edm:
        d = edm.admit(episode(REFUND, "refund"))
    with EDM(backend.db, embedder=HashingEmbedder(dim=128)) as other:
        assert other.retrieve_ids(REFUND, "support") == [d.episode_id]
    names = sorted(r[0] for r in backend.sql("SELECT embedder FROM edm_vectors"))
    assert names == ["hbeval-hash-ngram/1:128", "hbeval-hash-ngram/1:384"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, ".hbeval/hbeval.db"),
        ("sqlite:///x/y.db", "x/y.db"),
        ("sqlite:////abs/y.db", "/abs/y.db"),
        ("plain.db", "plain.db"),
        (":memory:", ":memory:"),
    ],
)
def test_resolve_db(given: str | None, expected: str) -> None:
    assert resolve_db(given) == expected


def test_resolve_db_keeps_postgres_urls_and_refuses_other_databases() -> None:
    assert resolve_db("postgresql://u@localhost:5432/hb") == "postgresql://u@localhost:5432/hb"
    assert resolve_db("postgres://localhost/hb") == "postgres://localhost/hb"
    with pytest.raises(DBLocationError, match="SQLite path, sqlite:///path or postgresql://"):
        resolve_db("mysql://localhost/hb")
