"""``rank_rows`` (how the approximate path ranks its candidates) answers as a ``VectorIndex``
holding the same rows would: the same episodes in the same order, scores equal bit for bit.

The candidates' scores must be the exact path's own floats, so an episode at a threshold is
kept or dropped alike on both paths. The reference here is a ``VectorIndex`` built from the
rows, and a float64 dot product (to show the scores are real cosines, not just equal).
"""

from __future__ import annotations

import numpy as np
import pytest

from hbeval.memory import EDM
from hbeval.memory._index import VectorIndex, rank_rows

DIM = 384


def unit_rows(rng: np.random.Generator, n: int, nnz: int) -> np.ndarray:
    rows = np.zeros((n, DIM), dtype=np.float32)
    for row in rows:
        at = rng.choice(DIM, nnz, replace=False)
        row[at] = rng.standard_normal(nnz)
        row /= np.linalg.norm(row)
    return rows


def reference(ids: list[str], rows: np.ndarray, query: np.ndarray, k: int, thr: float):  # type: ignore[no-untyped-def]
    index = VectorIndex(DIM)
    index.add(ids, rows)
    return index.search(query, k, thr)


@pytest.mark.parametrize("nnz", [1, 12, 80, DIM // 2, DIM // 2 + 1, DIM])
def test_same_answers_as_an_index_of_the_rows(nnz: int) -> None:
    rng = np.random.default_rng(nnz)
    for trial in range(60):
        n = int(rng.integers(1, 70))
        rows = unit_rows(rng, n, int(rng.integers(1, DIM)))
        ids = [f"ep-{trial}-{i}" for i in range(n)]
        query = unit_rows(rng, 1, nnz)[0]
        if trial % 5 == 0:  # duplicated rows: ties, broken by position
            rows[n // 2 :] = rows[: n - n // 2]
        if trial % 7 == 0:
            query = rows[int(rng.integers(0, n))].copy()  # a perfect match
        for k, thr in ((3, -1.0), (1, 0.0), (10, 0.2), (n + 5, -1.0), (3, 1.0)):
            got = rank_rows(ids, rows, query, k, thr)
            want = reference(ids, rows, query, k, thr)
            assert [i for i, _ in got[0]] == [i for i, _ in want[0]]
            bits = [np.float32(s).view(np.int32) for _, s in got[0]]
            assert bits == [np.float32(s).view(np.int32) for _, s in want[0]]
            assert got[1] == want[1]
            for eid, score in got[0]:  # real cosines, to float32 rounding
                exact = float(rows[ids.index(eid)].astype(np.float64) @ query.astype(np.float64))
                assert abs(score - exact) < 1e-5


def test_empty_zero_query_and_shape_errors() -> None:
    rows = unit_rows(np.random.default_rng(3), 4, 10)
    ids = ["a", "b", "c", "d"]
    assert rank_rows([], rows[:0], rows[0], 3, 0.0) == ([], None)
    zero = np.zeros(DIM, dtype=np.float32)
    assert rank_rows(ids, rows, zero, 3, 0.0) == reference(ids, rows, zero, 3, 0.0)
    assert rank_rows(ids, rows, zero, 3, 0.5) == ([], 0.0)
    with pytest.raises(ValueError, match="shape"):
        rank_rows(ids, rows, np.zeros(DIM - 1, dtype=np.float32), 3, 0.0)


def test_an_edm_file_is_read_through_a_memory_map(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with EDM(tmp_path / "m.db") as edm:
        assert edm._tables.conn.execute("PRAGMA mmap_size").fetchone()[0] > 0
