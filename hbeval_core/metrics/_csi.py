"""CSI, the consistency stability index: how steady PEI, IRS and outcomes stay across runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..vocab import CSI, INSUFFICIENT_RUNS, METRIC_VERSIONS, SINGLE_RUN
from ._registry import metric
from ._validate import check_probability, check_real

SLOPE_CLIP = "clip"
"""ρ = clip(β / c, 0, 1): the reference's current code, a gradient (default)."""
SLOPE_SIGN = "sign"
"""ρ = clip(β / max(|β|, 1e−6), 0, 1): the published Eq. 8, a cliff from 1 to 0."""
SLOPE_FORMS = (SLOPE_CLIP, SLOPE_SIGN)

CSI_STABLE = "STABLE"
CSI_ACCEPTABLE = "ACCEPTABLE"
CSI_MARGINAL = "MARGINAL"
CSI_UNSTABLE = "UNSTABLE"
CSI_BANDS: tuple[tuple[float, str], ...] = (
    (0.80, CSI_STABLE),
    (0.70, CSI_ACCEPTABLE),
    (0.50, CSI_MARGINAL),
)
"""Lower bounds of the reference's CSI bands, best first; below the last is UNSTABLE."""


def csi_status(value: float | None) -> str | None:
    """The reference's band for a CSI value (STABLE, ACCEPTABLE, MARGINAL, UNSTABLE); None stays None."""
    if value is None:
        return None
    for floor, name in CSI_BANDS:
        if value >= floor:
            return name
    return CSI_UNSTABLE


@dataclass(frozen=True)
class CSIResult:
    """CSI and its parts. ``value`` is None with ``reason`` when it cannot be computed.

    ``valid`` is the reference's flag: True exactly when ``value`` is defined.

    ``runs_used`` = runs in the window (the last ``window_runs``); ``pei_defined`` and
    ``irs_defined`` = how many of them had a value (None entries are skipped);
    ``outcomes_used`` = outcomes in the trend window. Parts that could be computed are filled in
    even when ``value`` is not.
    """

    value: float | None
    reason: str | None
    valid: bool
    sigma_pei: float | None
    sigma_irs: float | None
    pei_factor: float | None
    irs_factor: float | None
    beta: float | None
    rho: float | None
    trend_factor: float | None
    runs_total: int
    runs_used: int
    pei_defined: int
    irs_defined: int
    outcomes_used: int
    c: float
    slope: str

    @property
    def status(self) -> str | None:
        """The reference band of the value, or None when undefined."""
        return csi_status(self.value)


def _sample_std(values: Sequence[float]) -> float | None:
    # ddof = 1, as the reference; needs two values.
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _ols_slope(ys: Sequence[float]) -> float | None:
    # Slope of ys against their index 0..m-1.
    m = len(ys)
    if m < 2:
        return None
    x_mean = (m - 1) / 2.0
    y_mean = math.fsum(ys) / m
    sxy = math.fsum((i - x_mean) * (y - y_mean) for i, y in enumerate(ys))
    sxx = math.fsum((i - x_mean) ** 2 for i in range(m))
    return sxy / sxx


def _defined(name: str, values: Sequence[float | None]) -> list[float]:
    return [check_real(name, v) for v in values if v is not None]


@metric("csi", version=METRIC_VERSIONS[CSI])
def csi(
    pei: Sequence[float | None],
    irs: Sequence[float | None],
    outcomes: Sequence[float],
    *,
    window_runs: int = 100,
    window_outcomes: int = 20,
    c: float = 0.5,
    slope: str = SLOPE_CLIP,
) -> CSIResult:
    """How stable an agent is across repeated runs: steady PEI, steady IRS, no rising failures.

    ``pei`` and ``irs`` hold one value per run, oldest first (None where undefined, skipped);
    ``outcomes`` holds 1 for success and 0 for failure, oldest first (a pass rate in [0, 1] also
    works). Over the last ``window_runs`` runs, σ is the sample std (ddof 1) and each factor is
    1 − min(1, 2σ/c). Over the last ``window_outcomes`` outcomes, β is the OLS slope of the
    failure indicator 1 − outcome against 0..m−1, and ρ = clip(β/c, 0, 1) (``slope="clip"``, the
    reference's current code) or the sign form of the published Eq. 8 (``slope="sign"``).
    CSI = pei_factor · irs_factor · (1 − ρ), not rounded.

    The slope saturates at c = 0.5, as the reference code does (its comment says 0.05; the code
    divides by c). Undefined with one run (single_run), and with fewer than two defined PEI or IRS
    values or fewer than two outcomes in the windows (insufficient_runs).
    """
    if len(pei) != len(irs):
        raise ValueError(f"irs must have one entry per run like pei ({len(pei)}), got {len(irs)}")
    for name, window in (("window_runs", window_runs), ("window_outcomes", window_outcomes)):
        if isinstance(window, bool) or not isinstance(window, int) or window < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {window!r}")
    scale = check_real("c", c)
    if scale <= 0:
        raise ValueError(f"c must be > 0, got {c!r}")
    if slope not in SLOPE_FORMS:
        raise ValueError(f"slope must be one of {SLOPE_FORMS}, got {slope!r}")

    runs_total = len(pei)
    recent_pei = _defined("pei", pei[-window_runs:])
    recent_irs = _defined("irs", irs[-window_runs:])
    recent_outcomes = [check_probability("outcomes", o) for o in outcomes[-window_outcomes:]]

    sigma_pei = _sample_std(recent_pei)
    sigma_irs = _sample_std(recent_irs)
    pei_factor = None if sigma_pei is None else 1.0 - min(1.0, 2.0 * sigma_pei / scale)
    irs_factor = None if sigma_irs is None else 1.0 - min(1.0, 2.0 * sigma_irs / scale)

    beta = _ols_slope([1.0 - o for o in recent_outcomes])
    rho: float | None = None
    if beta is not None:
        raw = beta / scale if slope == SLOPE_CLIP else beta / max(abs(beta), 1e-6)
        rho = max(0.0, min(1.0, raw))
    trend_factor = None if rho is None else 1.0 - rho

    value: float | None = None
    reason: str | None = None
    if runs_total == 1:
        reason = SINGLE_RUN
    elif pei_factor is None or irs_factor is None or trend_factor is None:
        reason = INSUFFICIENT_RUNS
    else:
        value = pei_factor * irs_factor * trend_factor
    return CSIResult(
        value=value,
        reason=reason,
        valid=value is not None,
        sigma_pei=sigma_pei,
        sigma_irs=sigma_irs,
        pei_factor=pei_factor,
        irs_factor=irs_factor,
        beta=beta,
        rho=rho,
        trend_factor=trend_factor,
        runs_total=runs_total,
        runs_used=min(window_runs, runs_total),
        pei_defined=len(recent_pei),
        irs_defined=len(recent_irs),
        outcomes_used=len(recent_outcomes),
        c=scale,
        slope=slope,
    )
