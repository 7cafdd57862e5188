"""The HB-Eval paper's study metrics (spec §2.5): per-episode PEI, FRR, IRS v1 and UAS."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ._registry import metric
from ._validate import check_count, check_probability, check_real

QF_PENALTY = 0.20
"""Quality factor lost per constraint violation in the paper's PEI (Eq. 5)."""

UAS_WEIGHTS: Mapping[str, tuple[float, float, float, float]] = {
    "default": (0.25, 0.30, 0.25, 0.20),
    "healthcare": (0.20, 0.40, 0.20, 0.20),
    "finance": (0.25, 0.35, 0.20, 0.20),
    "research": (0.30, 0.20, 0.30, 0.20),
    "real-time": (0.25, 0.25, 0.40, 0.10),
}
"""UAS weights (SR, FRR, PEI, TI_norm) from the older metrics doc, by domain."""


@metric("pei_paper", version="paper-1")
def pei_paper(l_oracle: int, l_actual: int, violations: int) -> float | None:
    """Paper PEI of one episode: (L_oracle / L_actual) · max(0, 1 − 0.20·violations).

    Not the live PEI (vocab PEI_V2). None when the agent took no step (L_actual = 0). Not
    clipped: an actual path shorter than the oracle's scores above 1, flagging a wrong oracle.
    """
    oracle = check_count("l_oracle", l_oracle)
    actual = check_count("l_actual", l_actual)
    count = check_count("violations", violations)
    if actual == 0:
        return None
    return oracle / actual * max(0.0, 1.0 - QF_PENALTY * count)


@metric("frr_paper", version="paper-1")
def frr_paper(q_scores: Sequence[float]) -> float | None:
    """Paper FRR: mean recovery quality q over fault encounters (1.0, 0.7, 0.4 or 0.0 each).

    None without encounters (the metric is undefined without a fault).
    """
    scores = [check_probability("q_scores", q) for q in q_scores]
    if not scores:
        return None
    return math.fsum(scores) / len(scores)


@metric("irs_paper_v1", version="paper-1")
def irs_paper_v1(episodes: Sequence[tuple[bool, bool, bool]]) -> float | None:
    """Paper IRS v1: share of successful recoveries that were intentional (C1 ∧ C2 ∧ C3).

    Each episode is (memory queried within 3 steps, retrieved episode similarity >= 0.87,
    verifiable modification from it). None without recoveries.
    """
    if not episodes:
        return None
    for i, episode in enumerate(episodes):
        if len(episode) != 3:
            raise ValueError(f"episodes[{i}] must be (c1, c2, c3), got {episode!r}")
    return sum(1 for episode in episodes if all(episode)) / len(episodes)


@metric("uas", version="paper-1")
def uas(
    sr: float | None,
    frr: float | None,
    pei: float | None,
    ti: float | None,
    weights: tuple[float, float, float, float] = UAS_WEIGHTS["default"],
) -> float | None:
    """Unified agent score: w1·SR + w2·FRR + w3·PEI + w4·(TI − 1)/4, TI on the 1–5 judge scale.

    None when any input is undefined: a missing part is not a zero part.
    """
    if len(weights) != 4:
        raise ValueError(f"weights must be (w_sr, w_frr, w_pei, w_ti), got {weights!r}")
    ws = [check_real("weights", w) for w in weights]
    if any(w < 0 for w in ws):
        raise ValueError(f"weights must be >= 0, got {weights!r}")
    if sr is None or frr is None or pei is None or ti is None:
        return None
    score = check_real("ti", ti)
    if not 1.0 <= score <= 5.0:
        raise ValueError(f"ti must be on the 1–5 judge scale, got {ti!r}")
    parts = (
        check_probability("sr", sr),
        check_probability("frr", frr),
        check_real("pei", pei),
        (score - 1.0) / 4.0,
    )
    return math.fsum(w * p for w, p in zip(ws, parts, strict=True))
