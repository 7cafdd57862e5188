"""An approximate index in front of EDM's exact search: faiss IVF-Flat, saved beside the database.

For an agent with many episodes, scanning every vector costs milliseconds per query and loading
them all costs most of a second on first use. ``ApproxIndex`` proposes candidates instead: an
inverted-file index (k-means cells; a query scans the vectors of the ``nprobe`` nearest cells),
saved to a file next to the SQLite database and memory-mapped when opened, so opening costs
milliseconds. It only proposes: EDM reads the candidates' stored vectors and their episodes
from SQLite and ranks them exactly (see ``EDM._approx_search``), so a score is always the exact
cosine, an episode deleted from SQLite is never returned, and one never stored is never seen.

Chosen by measurement (``benchmarks/bench_edm.py``): at 100k hashed contexts, IVF-Flat with
``nprobe`` 8 found 99.6% of the exact top 3 among 64 candidates and built in 16 s; an HNSW graph
(usearch, faiss) found 97% and took 38-77 s to build on two cores.

Files, for agent A and embedder E of database ``x.db``: ``x.db.edm-ann/<key>.faiss`` and
``<key>.json`` (format, agent, embedder, dim, the largest ``edm_vectors`` rowid it holds, its
size). Vectors added since (larger rowids) are searched exactly beside it; a deletion removes
the files, so retrieval falls back to the exact path until the index is built again.

``faiss-cpu`` is an optional dependency (extra ``[fast]``); without it EDM searches exactly.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ANN_FORMAT",
    "ApproxIndex",
    "ann_paths",
    "faiss_available",
    "remove_agent_files",
]

ANN_FORMAT = "hb-edm-ann/1"
DEFAULT_NPROBE = 8


def faiss_available() -> bool:
    """Whether faiss (``pip install 'hbeval[fast]'``) can be imported."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def ann_paths(db_path: str, agent_id: str, embedder: str) -> tuple[Path, Path]:
    """(index file, metadata file) of one agent's index for one embedder."""
    key = hashlib.blake2b(f"{agent_id}\0{embedder}".encode(), digest_size=12).hexdigest()
    folder = Path(f"{db_path}.edm-ann")
    return folder / f"{key}.faiss", folder / f"{key}.json"


class ApproxIndex:
    """Candidates by inner product from an IVF-Flat index keyed by ``edm_vectors`` rowids."""

    def __init__(self, index: Any, meta: dict[str, Any]) -> None:
        self._index = index
        self.meta = meta

    @property
    def max_rowid(self) -> int:
        """The largest ``edm_vectors`` rowid in the index; larger ones were added since."""
        return int(self.meta["max_rowid"])

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @classmethod
    def build(
        cls,
        rowids: npt.NDArray[np.int64],
        vectors: npt.NDArray[np.float32],
        *,
        agent_id: str,
        embedder: str,
        nprobe: int = DEFAULT_NPROBE,
        seed: int = 1234,
    ) -> ApproxIndex:
        """An index over ``vectors`` (unit rows) keyed by ``rowids``; k-means seeded, so the
        same vectors give the same index."""
        import faiss

        n, dim = vectors.shape
        nlist = max(1, min(int(4 * math.sqrt(n)), n // 39))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = seed
        sample = vectors
        if n > 64 * nlist:
            pick = np.random.default_rng(seed).choice(n, 64 * nlist, replace=False)
            sample = vectors[np.sort(pick)]
        index.train(np.ascontiguousarray(sample, dtype=np.float32))
        index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), rowids)
        index.nprobe = min(nprobe, nlist)
        meta = {
            "format": ANN_FORMAT,
            "agent_id": agent_id,
            "embedder": embedder,
            "dim": dim,
            "count": n,
            "nlist": nlist,
            "nprobe": index.nprobe,
            "max_rowid": int(rowids.max()) if n else 0,
        }
        return cls(index, meta)

    def save(self, index_path: Path, meta_path: Path) -> None:
        """Write the index, then its metadata (each through a temporary file and a rename)."""
        import faiss

        index_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = index_path.with_suffix(".faiss.tmp")
        faiss.write_index(self._index, str(tmp))
        os.replace(tmp, index_path)
        tmp_meta = meta_path.with_suffix(".json.tmp")
        tmp_meta.write_text(json.dumps(self.meta, sort_keys=True))
        os.replace(tmp_meta, meta_path)

    @classmethod
    def open(
        cls, index_path: Path, meta_path: Path, *, embedder: str, dim: int
    ) -> ApproxIndex | None:
        """The saved index, memory-mapped; None when absent, unreadable or for another embedder."""
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            return None
        if (
            not isinstance(meta, dict)
            or meta.get("format") != ANN_FORMAT
            or meta.get("embedder") != embedder
            or meta.get("dim") != dim
            or not isinstance(meta.get("max_rowid"), int)
        ):
            return None
        try:
            import faiss

            index = faiss.read_index(str(index_path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        except (ImportError, RuntimeError, OSError):
            return None
        index.nprobe = int(meta.get("nprobe", DEFAULT_NPROBE))  # type: ignore[attr-defined]
        # One query at a time: waking a thread pool per query costs more than it saves.
        faiss.omp_set_num_threads(1)
        _no_prefetch_threads(faiss, index)
        return cls(index, meta)

    def candidates(self, query: npt.NDArray[np.float32], n: int) -> npt.NDArray[np.int64]:
        """Rowids of up to ``n`` stored vectors with the highest inner product with ``query``."""
        _scores, ids = self._index.search(query.reshape(1, -1), n)
        found: npt.NDArray[np.int64] = ids[0]
        return found[found >= 0]


def _no_prefetch_threads(faiss: Any, index: Any) -> None:
    """Search a memory-mapped index's lists on the calling thread.

    Opened with ``IO_FLAG_MMAP``, an IVF index's lists are ``OnDiskInvertedLists``, which by
    default start up to 32 threads per search to read the probed lists ahead. The file is in the
    page cache after first use, so those threads only cost: at 100k episodes they took a search
    from 0.20 to 0.53 ms (median CPU) and its p99 from 0.5 to 2.3-4.0 ms; at 1M from 0.9-1.1 to
    1.3-1.5 ms, p99 2.2-2.4 to 3.3-5.0 (``benchmarks/bench_edm.py``). Results are the same.
    """
    try:
        lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists)
    except (AttributeError, RuntimeError):  # not an IVF index, or an older faiss
        return
    if hasattr(lists, "prefetch_nthread"):
        lists.prefetch_nthread = 0


def remove_agent_files(db_path: str, agent_id: str) -> None:
    """Drop every saved index of an agent (after a deletion); missing files are fine."""
    folder = Path(f"{db_path}.edm-ann")
    if not folder.is_dir():
        return
    for meta_path in folder.glob("*.json"):
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("agent_id") == agent_id:
            for path in (meta_path.with_suffix(".faiss"), meta_path):
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
