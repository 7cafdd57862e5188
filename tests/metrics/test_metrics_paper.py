"""The paper's study metrics (spec §2.5, §9)."""

from __future__ import annotations

import pytest

from hbeval_core.metrics import UAS_WEIGHTS, frr_paper, irs_paper_v1, pei_paper, uas


def test_pei_paper_vectors() -> None:
    assert pei_paper(3, 3, 0) == pytest.approx(1.0)
    assert pei_paper(3, 5, 1) == pytest.approx(0.48)
    assert pei_paper(3, 3, 6) == 0.0  # quality factor floors at 0
    assert pei_paper(3, 0, 0) is None  # no step taken: undefined, not 0
    with pytest.raises(ValueError, match="violations"):
        pei_paper(3, 3, -1)


def test_frr_paper_vectors() -> None:
    assert frr_paper([1.0, 0.4]) == pytest.approx(0.70)
    assert frr_paper([0.0]) == 0.0
    assert frr_paper([]) is None
    with pytest.raises(ValueError, match="q_scores"):
        frr_paper([1.2])


def test_irs_paper_v1_vector() -> None:
    episodes = [(True, True, True), (True, False, True), (False, True, True), (True, True, False)]
    assert irs_paper_v1(episodes) == pytest.approx(0.25)
    assert irs_paper_v1([]) is None


def test_uas_vector_and_undefined_inputs() -> None:
    assert uas(0.88, 1.0, 0.90, 4.8) == pytest.approx(0.935)
    assert UAS_WEIGHTS["default"] == (0.25, 0.30, 0.25, 0.20)
    assert uas(0.88, None, 0.90, 4.8) is None
    healthcare = uas(1.0, 1.0, 1.0, 5.0, UAS_WEIGHTS["healthcare"])
    assert healthcare == pytest.approx(1.0)
    with pytest.raises(ValueError, match="ti"):
        uas(0.5, 0.5, 0.5, 0.5)
