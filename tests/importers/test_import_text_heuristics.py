"""Methodology A's text heuristics on an imported recording: tau-bench's tasks list no required
keywords, so the keyword coverage that text FRR and PEI grade is undefined on every trial, and
so are their means (not 0.0)."""

from __future__ import annotations

from pathlib import Path

from hbeval_core.vocab import NO_REQUIRED_KEYWORDS
from tests.importers.test_importers import TAU, imported, needs_corpora, report_of

pytestmark = needs_corpora


def test_text_frr_and_pei_means_are_undefined_without_keywords(tmp_path: Path) -> None:
    db = tmp_path / "hb.db"
    run_id = imported(db, "tau-bench", str(TAU))["run_id"]
    report = report_of(db, run_id)
    verdicts = [t["verdict"] for t in report["trials"]]
    # Every imported trial was decided without keywords, and none of its responses is JSON.
    assert verdicts and all(v["keyword_coverage"] is None for v in verdicts)
    for v in verdicts:
        assert v["text_heuristics"]["undefined"]["frr"] == NO_REQUIRED_KEYWORDS
    methodology = report["methodology"]
    means = methodology["text_heuristics_mean"]
    assert means["frr"] is None and means["pei"] is None
    assert methodology["undefined"]["text_heuristics_mean.frr"] == NO_REQUIRED_KEYWORDS
    assert methodology["undefined"]["text_heuristics_mean.pei"] == NO_REQUIRED_KEYWORDS
    # TI reads only the response's wording: it stays defined.
    assert isinstance(means["ti"], float)
    assert "text_heuristics_mean.ti" not in methodology["undefined"]
