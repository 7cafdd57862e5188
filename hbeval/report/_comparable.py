"""Whether two reports may be compared at all: the same scoring version, the same battery.

A comparison or a baseline check between reports scored under different scoring versions
compares rules, not agents; between different batteries it compares different faults. Both are
refused, naming the two versions (and fingerprints) and the way out: ``hbeval rescore RUN_ID``
scores a stored run again under the current version, as a new report beside the old one (in a
run of its own when its measurement fingerprint moves).
The measurement-fingerprint check comes after this one (``compare``, ``gate``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core.vocab import SCORING_VERSION

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = ["comparability_refusal"]


def _scoring(report: Report) -> str | None:
    return None if report.versions is None else report.versions.scoring


def _rescore_commands(reports: tuple[Report, Report]) -> str:
    ids = [str(r.run_id or "RUN_ID") for r in reports if _scoring(r) != SCORING_VERSION]
    targets = ids or [str(r.run_id or "RUN_ID") for r in reports]
    return ", ".join(f"`hbeval rescore {i} --db STORE`" for i in dict.fromkeys(targets))


def comparability_refusal(
    a: Report, b: Report, labels: tuple[str, str], action: str = "compare"
) -> str | None:
    """Why ``a`` and ``b`` must not be compared (different scoring versions or battery
    fingerprints), or None. ``action`` names what is refused ("compare", "run the baseline
    check")."""
    sa, sb = _scoring(a), _scoring(b)
    versions = f"{labels[0]} under {sa or 'an unknown version'}, {labels[1]} under {sb or 'an unknown version'}"
    if sa is not None and sb is not None and sa != sb:
        return (
            f"refusing to {action}: the runs were scored under different scoring versions "
            f"({versions}); figures of different scoring versions are never compared. Score the "
            f"older run again under {SCORING_VERSION} with {_rescore_commands((a, b))} (a new "
            "report beside the old one: a new run, RUN_ID-rescored-<fingerprint>, when its "
            f"measurement fingerprint moves; the command prints it), then {action} with it"
        )
    fa = a.fingerprints.battery_spec if a.fingerprints is not None else None
    fb = b.fingerprints.battery_spec if b.fingerprints is not None else None
    if fa is not None and fb is not None and fa != fb:
        return (
            f"refusing to {action}: battery fingerprints differ ({labels[0]} {fa}, {labels[1]} "
            f"{fb}; scored {versions}): the runs faced different batteries, which no "
            f"`hbeval rescore RUN_ID` can change; run both on the same battery"
        )
    return None
