"""Exact top-k cosine search over one agent's episode vectors, in memory, with numpy.

Vectors are unit columns of a float32 matrix laid out dimension-major (``dim x capacity``), so
each dimension's values over all episodes are contiguous. A query's cosines with every stored
episode are computed exactly, one of two ways:

* **sparse query** (at most half its entries non-zero, as with the hashing embedder, whose
  queries touch about 80 of 384 buckets): only the query's non-zero dimensions are read,
  ``scores += q[j] * M[j]`` per dimension. Zero entries contribute nothing, so this is the
  same sum as the full dot product while reading a fraction of the memory;
* **dense query** (e.g. a sentence-embedding model): one ``einsum`` over the whole matrix.

Both are single-threaded numpy loops (no BLAS thread pool to wake per query). Rows at or above
the threshold are kept, ``argpartition`` picks the best ``k``, and a final sort orders them.
Deletion moves the last column into the freed slot, so the matrix stays dense and a deleted
episode can never be returned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_TRANSPOSE_BLOCK = 256


class VectorIndex:
    """Unit vectors keyed by episode id; exact top-k by cosine (dot product)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._mat: npt.NDArray[np.float32] = np.empty((dim, 0), dtype=np.float32)
        self._scores: npt.NDArray[np.float32] = np.empty(0, dtype=np.float32)
        self._tmp: npt.NDArray[np.float32] = np.empty(0, dtype=np.float32)
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self._pos

    @property
    def nbytes(self) -> int:
        """Bytes held by the live vectors (not counting spare capacity)."""
        return len(self._ids) * self.dim * 4

    def export(self) -> tuple[list[str], npt.NDArray[np.float32]]:
        """A copy of the ids and their vectors as an ``(n, dim)`` matrix, in row order."""
        n = len(self._ids)
        return list(self._ids), np.ascontiguousarray(self._mat[:, :n].T)

    def _reserve(self, n: int) -> None:
        capacity = self._mat.shape[1]
        if n <= capacity:
            return
        capacity = max(n, 2 * capacity, 64)
        grown = np.empty((self.dim, capacity), dtype=np.float32)
        grown[:, : len(self._ids)] = self._mat[:, : len(self._ids)]
        self._mat = grown
        self._scores = np.empty(capacity, dtype=np.float32)
        self._tmp = np.empty(capacity, dtype=np.float32)

    def add(self, ids: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Append ``vectors`` (one unit row per id); ids already present are skipped."""
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(
                f"expected vectors of shape ({len(ids)}, {self.dim}), got {vectors.shape}"
            )
        keep = [i for i, eid in enumerate(ids) if eid not in self._pos]
        if not keep:
            return
        start = len(self._ids)
        self._reserve(start + len(keep))
        block = vectors if len(keep) == len(ids) else vectors[keep]
        for lo in range(0, len(keep), _TRANSPOSE_BLOCK):  # blocked: a cache-friendly transpose
            hi = min(len(keep), lo + _TRANSPOSE_BLOCK)
            self._mat[:, start + lo : start + hi] = block[lo:hi].T
        for offset, i in enumerate(keep):
            self._ids.append(ids[i])
            self._pos[ids[i]] = start + offset

    def remove(self, episode_id: str) -> bool:
        """Drop ``episode_id``; True when it was present."""
        row = self._pos.pop(episode_id, None)
        if row is None:
            return False
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._mat[:, row] = self._mat[:, last]
            self._ids[row] = moved
            self._pos[moved] = row
        self._ids.pop()
        return True

    def scores(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosine of ``query`` with every stored vector, in row order (a reused buffer)."""
        n = len(self._ids)
        out = self._scores[:n]
        nonzero = np.flatnonzero(query)
        if nonzero.size == 0:
            out.fill(0.0)
        elif nonzero.size <= self.dim // 2:
            tmp = self._tmp[:n]
            first, rest = nonzero[0], nonzero[1:]
            np.multiply(self._mat[first, :n], query[first], out=out)
            for j in rest:
                np.multiply(self._mat[j, :n], query[j], out=tmp)
                np.add(out, tmp, out=out)
        else:
            np.einsum("i,ij->j", query, self._mat[:, :n], out=out)
        return out

    def search(
        self, query: npt.NDArray[np.float32], k: int, threshold: float
    ) -> tuple[list[tuple[str, float]], float | None]:
        """Best ``k`` episodes with cosine >= ``threshold``, best first, and the best cosine.

        Ties are broken by row position, so results are deterministic. The best cosine is
        reported even when it is below the threshold (None when the index is empty).
        """
        if not self._ids or k <= 0:
            return [], None
        query = np.ascontiguousarray(query, dtype=np.float32)
        if query.shape != (self.dim,):
            raise ValueError(f"expected a query of shape ({self.dim},), got {query.shape}")
        return _top(self._ids, self.scores(query), k, threshold)


def _top(
    ids: Sequence[str], scores: npt.NDArray[np.float32], k: int, threshold: float
) -> tuple[list[tuple[str, float]], float | None]:
    """The best ``k`` of ``scores`` at or above ``threshold``, ties by position; the best."""
    best = float(scores.max())
    hits = np.flatnonzero(scores >= threshold)
    if hits.size == 0:
        return [], best
    if hits.size > k:
        part = np.argpartition(-scores[hits], k - 1)[:k]
        hits = hits[part]
    order = np.lexsort((hits, -scores[hits]))
    return [(ids[i], float(scores[i])) for i in hits[order]], best


def rank_rows(
    ids: Sequence[str],
    rows: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    k: int,
    threshold: float,
) -> tuple[list[tuple[str, float]], float | None]:
    """What a ``VectorIndex`` holding ``rows`` (unit vectors of distinct ``ids``, in this
    order) answers for ``query``, scores equal bit for bit, without building one: for ranking
    a few candidates. A sparse query's products are summed dimension by dimension in the same
    order as :meth:`VectorIndex.scores` (``np.add.accumulate`` adds left to right, in float32);
    a dense query goes through a ``VectorIndex``."""
    dim = rows.shape[1]
    if not ids or k <= 0:
        return [], None
    query = np.ascontiguousarray(query, dtype=np.float32)
    if query.shape != (dim,):
        raise ValueError(f"expected a query of shape ({dim},), got {query.shape}")
    nonzero = np.flatnonzero(query)
    if nonzero.size > dim // 2:
        index = VectorIndex(dim)
        index.add(ids, rows)
        return index.search(query, k, threshold)
    if nonzero.size == 0:
        scores = np.zeros(len(ids), dtype=np.float32)
    else:
        products = rows[:, nonzero] * query[nonzero]
        scores = np.add.accumulate(products, axis=1)[:, -1]
    return _top(ids, scores, k, threshold)
