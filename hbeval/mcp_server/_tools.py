"""What the MCP tools answer, as plain functions over a store: no MCP import here.

Each function builds the same document as the command line's ``--json`` output for the same
question, from the same functions (``runs list``, ``report``, ``score``, ``compare``,
``memory explain``), so an assistant and a terminal never see two different figures. Nothing
here writes to the store. Bad input raises :class:`ToolInputError`, whose message starts with
the argument's name.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from hbeval_core.vocab import LIVE_METRICS, PEI_V2, PEI_VERSIONS

from ..scoring import decide_verdict

if TYPE_CHECKING:
    from ..scoring import Report

__all__ = [
    "MAX_K",
    "MAX_TRACE_CHARS",
    "StoreTools",
    "ToolInputError",
]

MAX_TRACE_CHARS: Final = 20_000_000
"""Largest hb-events JSONL text ``score_trace`` accepts (characters)."""

MAX_K: Final = 20
"""Most precedents ``recall_memory`` returns."""

MEAN_NOT_PROPORTION: Final = "mean_not_proportion"
"""Why a defined metric has no interval: it is a mean over trials (PEI, TI), not a rate."""


class ToolInputError(ValueError):
    """A tool argument is wrong; the message names the argument and what would be right."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _text(field: str, value: object, *, max_chars: int = 1_000) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(field, f"must be a non-empty string, got {value!r}")
    if len(value) > max_chars:
        raise ToolInputError(field, f"is {len(value)} characters; at most {max_chars} are accepted")
    return value


def _plain(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document exactly as the CLI prints it with ``--json`` (same encoder, same defaults)."""
    plain: dict[str, Any] = json.loads(json.dumps(document, allow_nan=False, default=str))
    return plain


def _label(report: Report) -> str:
    return str(report.run.agent_id or report.run_id or "report")


class StoreTools:
    """The read-only questions an MCP client may ask of one hbeval store.

    ``db`` is a path, ``sqlite:///path`` or ``postgresql://...``; it must exist (a query never creates a store). The
    store is opened per question, so runs that land while the server is up are seen.
    """

    def __init__(self, db: str | Path | None = None) -> None:
        from ..store import resolve_path
        from ..store.postgres import is_postgres_url

        if is_postgres_url(str(db)):
            self.db = str(db)
            return
        path = resolve_path(None if db is None else str(db))
        if path == ":memory:" or not Path(path).is_file():
            raise ToolInputError(
                "--db", f"no store at {path}; pass the store a battery run or the demo wrote"
            )
        self.db = path

    @contextmanager
    def _store(self) -> Iterator[Any]:
        from ..store import NoStoreError, open_store
        from ..store.postgres import public_url

        try:
            store = open_store(self.db, read_only=True)
        except NoStoreError:  # a PostgreSQL database without hbeval's tables
            raise ToolInputError(
                "--db",
                f"no store at {public_url(self.db)}; pass the store a battery run or the demo wrote",
            ) from None
        try:
            yield store
        finally:
            store.close()

    def _report(self, store: Any, field: str, run_id: object) -> Report:
        run = _text(field, run_id, max_chars=500)
        report: Report | None = store.get_report(run)
        if report is None:
            known = "" if store.get_run(run) is None else " (the run has no report yet)"
            raise ToolInputError(
                field, f"no report for run {run!r} in this store{known}; list_runs shows the runs"
            )
        from ..scoring._recheck import describe, report_discrepancies

        found = report_discrepancies(report)
        if found:
            raise ToolInputError(
                field,
                f"the stored report of run {run!r} does not follow from its own trials "
                f"({describe(found)}); it was changed after hbeval built it",
            )
        return report

    # ------------------------------------------------------------------ runs
    def list_runs(self, agent_id: str | None = None) -> dict[str, Any]:
        """``hbeval runs list --json``: every run, newest first (one agent's with ``agent_id``)."""
        from ..store._listing import runs_document

        agent = None if agent_id is None else _text("agent_id", agent_id)
        with self._store() as store:
            return _plain(runs_document(store, agent))

    def run_metrics(self, run_id: str) -> dict[str, Any]:
        """A run's metrics with undefined reasons, 95% intervals and scores, from its report.

        The values are the stored report's (``hbeval report RUN_ID --json``); an interval is
        the rate's interval clustered by scenario, as the terminal table shows it (with its
        effective n, design effect and the independent-trials interval beside it), and absent
        with a reason for a mean (PEI, TI) or an undefined metric.
        """
        from ..report.scores import proportion_counts, report_scores
        from ..scoring._uncertainty import rate_interval

        with self._store() as store:
            report = self._report(store, "run_id", run_id)
        doc = report.to_dict()  # the figures are passed on as the report writes them
        metrics: Mapping[str, Any] = doc["metrics"]
        undefined: Mapping[str, str] = report.undefined
        intervals: dict[str, Any] = {}
        interval_undefined: dict[str, str] = {}
        for name in (*LIVE_METRICS, "pass_rate"):
            if name != "pass_rate" and metrics.get(name) is None:
                interval_undefined[name] = undefined.get(name, "not_measured")
                continue
            counts = (
                (report.pass_rate.passed, report.pass_rate.n)
                if name == "pass_rate"
                else proportion_counts(report, name)
            )
            shown = rate_interval(report, name) if counts is not None else None
            if shown is None or counts is None:
                interval_undefined[name] = (
                    report.pass_rate.undefined.get("rate", "no_trials")
                    if name == "pass_rate"
                    else MEAN_NOT_PROPORTION
                )
                continue
            intervals[name] = {
                "low": shown.interval[0],
                "high": shown.interval[1],
                "successes": counts[0],
                "n": counts[1],
                "clusters": shown.clusters,
                "effective_n": shown.effective_n,
                "design_effect": shown.design_effect,
                "independent": None if shown.independent is None else list(shown.independent),
                "method": "cluster_wilson",
            }
        return _plain(
            {
                "run_id": report.run_id,
                "agent_id": report.run.agent_id,
                "verdict": decide_verdict(report).verdict,
                "summary": report.summary,
                "metrics": dict(metrics),
                "undefined": dict(undefined),
                "intervals": intervals,
                "interval_undefined": interval_undefined,
                "confidence": 0.95,
                "defined_counts": doc.get("defined_counts"),
                "thresholds": doc.get("thresholds"),
                "unmeasured_metrics": doc.get("unmeasured_metrics"),
                "pass_rate": doc["pass_rate"],
                "reliability_gap": doc.get("reliability_gap"),
                "pass_at_k": doc.get("pass_at_k"),
                "pass_hat_k": doc.get("pass_hat_k"),
                "csi_info": doc.get("csi_info"),
                "agentdojo": doc.get("agentdojo"),
                "evidence": doc.get("evidence"),
                "scores": report_scores(report),
                "fingerprints": doc.get("fingerprints"),
                "manifest_hash": doc.get("manifest_hash"),
                "metric_versions": doc.get("metric_versions"),
            }
        )

    def compare_runs(self, run_a: str, run_b: str) -> dict[str, Any]:
        """``hbeval compare A B --json`` for two stored runs of one measurement fingerprint."""
        from ..report.compare import CompareRefused, compare_reports

        with self._store() as store:
            report_a = self._report(store, "run_a", run_a)
            report_b = self._report(store, "run_b", run_b)
        label_a, label_b = _label(report_a), _label(report_b)
        if label_a == label_b:
            label_a, label_b = "A", "B"
        try:
            result = compare_reports(report_a, report_b, labels=(label_a, label_b))
        except CompareRefused as exc:
            raise ToolInputError("run_b", str(exc)) from None
        return _plain(result)

    def reliability_trend(self, agent_id: str) -> dict[str, Any]:
        """An agent's reported runs, oldest first, one series per measurement fingerprint.

        Runs of different fingerprints are never put on one series (their figures are not
        comparable). Each series carries the CSI its newest run's report computed over the
        runs before it, as stored. A report whose figures do not follow from its trials (edited
        in the store) is refused, naming its run.
        """
        agent = _text("agent_id", agent_id)
        with self._store() as store:
            records = store.list_reports(agent_id=agent)
            known = sorted({r.agent_id for r in store.list_runs()})
        from ..scoring._recheck import describe, report_discrepancies

        series: dict[str, list[dict[str, Any]]] = {}
        for rec in records:
            report = rec.report
            found = report_discrepancies(report)
            if found:  # served only what follows from its trials, as run_metrics does
                raise ToolInputError(
                    "agent_id",
                    f"the stored report of run {rec.run_id!r} does not follow from its own "
                    f"trials ({describe(found)}); it was changed after hbeval built it",
                )
            written = report.to_dict()
            series.setdefault(rec.measurement_fingerprint, []).append(
                {
                    "run_id": rec.run_id,
                    "created_at": rec.created_at,
                    "verdict": decide_verdict(report).verdict,
                    "metrics": written["metrics"],
                    "undefined": written["undefined"],
                    "pass_rate": report.pass_rate.rate,
                    "pass_rate_interval": written["pass_rate"].get("interval"),
                    "manifest_hash": report.manifest_hash,
                }
            )
        by_fingerprint = []
        for fingerprint, points in series.items():
            newest = next(r.report for r in reversed(records) if r.run_id == points[-1]["run_id"])
            by_fingerprint.append(
                {
                    "measurement_fingerprint": fingerprint,
                    "runs": points,
                    "csi": newest.to_dict().get("csi_info"),
                }
            )
        doc: dict[str, Any] = {
            "agent_id": agent,
            "run_count": len(records),
            "series": by_fingerprint,
        }
        if not records:
            doc["note"] = (
                f"no reported runs for agent {agent!r}; agents in this store: "
                f"{', '.join(known) or 'none'}"
            )
        return _plain(doc)

    # ------------------------------------------------------------------ traces
    def score_trace(
        self,
        events: str,
        pei_version: str = PEI_V2,
        halt_policy: str | None = None,
        steps: bool | None = None,
    ) -> dict[str, Any]:
        """``hbeval score EVENTS.jsonl --json`` on hb-events/1 JSONL text."""
        from hbeval_core.live._document import score_trace
        from hbeval_core.live._policy import parse_halt

        text = _text("events", events, max_chars=MAX_TRACE_CHARS)
        if pei_version not in PEI_VERSIONS:
            raise ToolInputError(
                "pei_version", f"must be one of {', '.join(PEI_VERSIONS)}, got {pei_version!r}"
            )
        if halt_policy is not None:
            try:
                parse_halt(_text("halt_policy", halt_policy))
            except ValueError as exc:
                raise ToolInputError("halt_policy", str(exc)) from None
        try:
            return _plain(
                score_trace(
                    io.StringIO(text),
                    label="events",
                    pei_version=pei_version,
                    halt_policy=halt_policy,
                    steps=steps,
                )
            )
        except ValueError as exc:  # EventFormatError names the line and field
            raise ToolInputError("events", str(exc)) from None

    # ------------------------------------------------------------------ memory
    def recall_memory(self, context: str, agent_id: str = "default", k: int = 3) -> dict[str, Any]:
        """The agent's qualified precedents for a context, most similar first.

        Only episodes admitted by EDM are stored, so each precedent earned its place; each
        comes with its recorded figures and similarity, and the prompt line EDM would give.
        """
        from ..memory import ContextError
        from ..memory._open import open_memory

        query = _text("context", context, max_chars=20_000)
        agent = _text("agent_id", agent_id)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ToolInputError("k", f"must be an integer from 1 to {MAX_K}, got {k!r}")
        edm = open_memory(self.db, read_only=True)
        try:
            try:
                matches = edm.retrieve(query, agent, k)
            except ContextError as exc:
                raise ToolInputError("context", str(exc)) from None
            return _plain(
                {
                    "agent_id": agent,
                    "embedder": edm.embedder.name,
                    "threshold": edm.threshold,
                    "count": len(matches),
                    "precedents": [m.as_dict() for m in matches],
                    "rendered": [m.render() for m in matches],
                }
            )
        finally:
            edm.close()

    def explain(self, text: str, agent_id: str = "default") -> dict[str, Any]:
        """``hbeval memory explain TEXT --json``: cite a qualified precedent or defer to a human."""
        from ..memory import ContextError
        from ..memory._open import open_memory

        query = _text("text", text, max_chars=20_000)
        agent = _text("agent_id", agent_id)
        edm = open_memory(self.db, read_only=True)
        try:
            return _plain(edm.explain(query, agent))
        except ContextError as exc:
            raise ToolInputError("text", str(exc)) from None
        finally:
            edm.close()
