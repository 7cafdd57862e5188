"""The always-valid bound behind ``battery run --until-decided`` (hbeval_core.metrics._sequential)."""

from __future__ import annotations

import math
import random

import pytest

from hbeval_core.metrics import METRICS
from hbeval_core.metrics._sequential import sequential_bound, waves_of


def _by_hand(waves: list[list[tuple[str, float]]], confidence: float) -> tuple[float, float]:
    """The Waudby-Smith–Ramdas predictable plug-in empirical-Bernstein bound, written out:
    one bet per wave from the earlier waves, each trial centred on its own scenario's earlier
    mean (½ before it has one), the running intersection over the looks."""
    log_inv = math.log(1 / (1 - confidence))
    history: dict[str, list[float]] = {}
    residuals: list[float] = []
    bets, weighted, penalty, n = 0.0, 0.0, 0.0, 0
    low, high = 0.0, 1.0
    for wave in waves:
        t = n + 1
        var = (0.25 + sum(r * r for r in residuals)) / (1 + len(residuals))
        lam = min(0.75, math.sqrt(2 * log_inv / (var * t * math.log(1 + t))))
        new: list[tuple[str, float]] = []
        for key, x in wave:
            earlier = history.get(key, [])
            centre = sum(earlier) / len(earlier) if earlier else 0.5
            bets += lam
            weighted += lam * x
            penalty += (x - centre) ** 2 * (-math.log(1 - lam) - lam)
            if earlier:
                residuals.append(x - centre)
            new.append((key, x))
            n += 1
        for key, x in new:
            history.setdefault(key, []).append(x)
        low = max(low, (weighted - penalty - log_inv) / bets)
        high = min(high, (weighted + penalty + log_inv) / bets)
    return low, high


def test_ten_scenarios_that_always_pass_by_hand() -> None:
    # ln 20 = 2.995732; every bet is the cap 0.75 (cost −ln 0.25 − 0.75 = 0.636294). Wave 1:
    # ten residuals of ½ from the centre ½, penalty 10 · ¼ · 0.636294 = 1.590736; Σλ = 7.5.
    # Waves 2 and 3 add no residual (each scenario's centre is its own earlier 1.0).
    wave = [(f"s{i}", 1.0) for i in range(10)]
    b1 = sequential_bound([wave], 0.95)
    assert b1.lower == pytest.approx((7.5 - 1.590736 - 2.995732) / 7.5, abs=1e-6)  # 0.388471
    b3 = sequential_bound([wave, wave, wave], 0.95)
    assert b3.lower == pytest.approx((22.5 - 1.590736 - 2.995732) / 22.5, abs=1e-6)  # 0.796157
    assert b3.upper == 1.0
    assert b3.estimate == 1.0 and b3.n == 30 and b3.waves == 3


def test_noisy_waves_match_the_written_out_bound() -> None:
    rng = random.Random(7)
    p = {f"s{i}": rng.random() for i in range(12)}
    waves = [[(k, float(rng.random() < q)) for k, q in p.items()] for _ in range(6)]
    for k in range(1, 7):
        got = sequential_bound(waves[:k], 0.9)
        low, high = _by_hand(waves[:k], 0.9)
        assert got.lower == pytest.approx(low, abs=1e-12)
        assert got.upper == pytest.approx(high, abs=1e-12)


def test_peeking_at_every_wave_keeps_each_side_under_alpha() -> None:
    # Scenario means differ; each side of the bound must hold at all 6 looks together in at
    # least 90% of 400 simulated runs (each side is one-sided at α = 0.1), and the bound must
    # still be informative (narrower than half the range after six waves on average).
    rng = random.Random(31)
    above = below = 0
    widths: list[float] = []
    for _ in range(400):
        p = [rng.choice((0.0, 0.3, 0.7, 0.95, 1.0)) for _ in range(10)]
        mu = sum(p) / len(p)
        waves: list[list[tuple[int, float]]] = []
        low_missed = high_missed = False
        for _ in range(6):
            waves.append([(i, float(rng.random() < q)) for i, q in enumerate(p)])
            b = sequential_bound(waves, 0.9)
            assert b.lower is not None and b.upper is not None
            low_missed |= b.lower > mu + 1e-12
            high_missed |= b.upper < mu - 1e-12
        above += low_missed
        below += high_missed
        widths.append(b.upper - b.lower)
    assert above / 400 <= 0.10 and below / 400 <= 0.10
    assert sum(widths) / len(widths) < 0.5


def test_empty_waves_and_bad_values() -> None:
    b = sequential_bound([], 0.95)
    assert b.lower is None and b.upper is None and b.estimate is None and b.n == 0
    assert waves_of({("a", 1): 1.0, ("b", 0): 0.0}) == [[("b", 0.0)], [("a", 1.0)]]
    with pytest.raises(ValueError, match="from 0 to 1"):
        sequential_bound([[("a", 1.5)]])
    with pytest.raises(ValueError):
        sequential_bound([[("a", 1.0)]], confidence=1.0)
    assert "sequential_bound" in METRICS
