"""Recordings in, one stored hbeval run out: read every file, score every trial, then store.

Rules of an imported run (importer version ``IMPORTER_VERSION``):

* **All or nothing.** Every file is read and checked before anything is written; a file that
  cannot be read refuses the whole import (:class:`ImportRefused` names file, line and field).
* **Trials.** Each recorded agent run is a trial of its task; tasks keep the recording's ids
  and get scenario indices in the order they first appear. A (task, trial) pair seen twice
  (the same task set imported from two files) takes the next free trial index.
* **Pass.** The recording's own success label decides (tau-bench's reward 1.0). Formats with no
  label (Pi, DSH) leave every pass figure undefined (``no_success_label``), unless a labels file
  maps the trials' source ids (or task ids) to outcomes.
* **Faults.** Nothing was injected. A trial whose recording shows a tool call failing is
  faulted on that observation (``fault_basis`` "observed_error"), so the report's FRR is the
  share of such trials that still passed, and the reliability gap compares trials without a
  tool error (nominal) with trials with one. IRS judges deliberate handling of injected faults
  and stays undefined; so does the security gate (no attack was planted).
* **Fingerprint.** ``measurement`` = fingerprint of {kind "import", format, importer version,
  sorted source sha256s, derive version, and options that change the trials (OTLP grouping by
  session) when set}: an imported run is never compared with a battery run, nor with an import
  of other recordings. The manifest keeps every file's sha256.
* **Stored as the runner stores.** Each trial's events pass through ``storable_events`` with
  a ``Redactor`` before they are scored and stored, exactly as a battery trial's do: secrets
  are redacted, tool results capped, and values no store can hold (a lone surrogate, a NaN, an
  endless integer) replaced, each rebuilt event saying what changed (``attrs.sanitised``). One
  bad value in a foreign recording changes that value, not the import. The report's ``source``
  block counts the changes (``stored_changes``).
* **Provenance.** Each tool call says how its outcome and its link to the issuing reply were
  derived (``_common.OBSERVED_ERROR`` / ``ABSENCE_OF_ERROR`` / ``INFERRED``; ``LINK_*``); the
  report's ``source`` block counts them and names the figures resting on inferred fields.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from hbeval_core.fingerprint import fingerprint
from hbeval_core.vocab import (
    DERIVE_VERSION,
    FAULT_BASIS_OBSERVED,
    METHODOLOGY_B,
    NO_SUCCESS_LABEL,
    NOT_MEASURED,
    OUTCOME_FAIL,
    OUTCOME_PASS,
    OUTCOME_SKIPPED,
    PASS_UNVERIFIABLE,
    PEI,
    SCORING_VERSION,
)

from ._common import (
    ImportedTrial,
    ImportRefused,
    Skipped,
    finite_reward,
    inferred_figures,
)

if TYPE_CHECKING:
    from ..scoring import Report
    from ._stream import Tally

IMPORTER_VERSION = "hbeval-import/1"
"""Version of the import rules; part of every imported run's measurement fingerprint."""

FAULT_TYPE_OBSERVED = "observed_tool_error"
FAULT_TYPE_NONE = "none"

Reader = Callable[[str, bytes, Callable[[str, int], str], list[Skipped]], Iterable[ImportedTrial]]
"""Reads one file's trials; a reader may yield them one at a time (OTLP traces do)."""
Combiner = Callable[[list[ImportedTrial], list[Skipped]], list[ImportedTrial]]
"""Joins trials read from several files (DSH nests sub-agent sessions in their parent's run)."""


@dataclass
class ImportSummary:
    """What an import stored (or found already stored): the ``--json`` object of ``import``."""

    run_id: str
    format: str
    agent_id: str
    measurement_fingerprint: str
    tasks: int
    trials: int
    tool_calls: int
    tool_errors: int
    model_calls: int
    labelled: bool
    files: list[dict[str, Any]]
    skipped: list[dict[str, Any]] = field(default_factory=list)
    already_imported: bool = False
    report: Report | None = None
    derivation: dict[str, dict[str, int]] = field(default_factory=dict)
    inferred_figures: dict[str, str] = field(default_factory=dict)
    stored_changes: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON form (without the report)."""
        return {
            "run_id": self.run_id,
            "run_ids": [self.run_id],
            "format": self.format,
            "agent_id": self.agent_id,
            "measurement_fingerprint": self.measurement_fingerprint,
            "tasks": self.tasks,
            "trials": self.trials,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "model_calls": self.model_calls,
            "labelled": self.labelled,
            "files": self.files,
            "skipped": self.skipped,
            "already_imported": self.already_imported,
            "derivation": self.derivation,
            "inferred_figures": self.inferred_figures,
            "stored_changes": self.stored_changes,
        }


@dataclass
class SourceFile:
    """One recording file as read: where, its bytes and their sha256."""

    path: str
    data: bytes
    sha256: str

    def entry(self) -> dict[str, Any]:
        """The manifest's entry for this file."""
        return {"path": self.path, "sha256": self.sha256, "bytes": len(self.data)}


def read_source(path: Path) -> SourceFile:
    """Read a file once; its sha256 is of the bytes as stored (compressed files included)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImportRefused(str(path), f"cannot read: {exc.strerror or exc}") from None
    return SourceFile(str(path), data, hashlib.sha256(data).hexdigest())


def measurement_fingerprint(
    fmt: str, sources: Sequence[SourceFile], options: Mapping[str, Any] | None = None
) -> str:
    """The measurement fingerprint of an import of ``sources`` in format ``fmt``.

    ``options`` that change which trials a recording yields (OTLP's grouping by session) are
    part of it; the defaults add nothing, so fingerprints of default imports never change.
    """
    spec: dict[str, Any] = {
        "kind": "import",
        "format": fmt,
        "importer": IMPORTER_VERSION,
        "sources": sorted(s.sha256 for s in sources),
        "derive": DERIVE_VERSION,
    }
    if options:
        spec["options"] = dict(options)
    return fingerprint(spec)


_LABEL_WORDS = {"pass": True, "passed": True, "fail": False, "failed": False}


def read_labels(path: Path) -> tuple[dict[str, bool], str]:
    """A labels file: a JSON object mapping source ids (or task ids) to an outcome.

    An outcome is true/false, 1/0 (a reward: 1.0 is a pass) or "pass"/"fail". Returns the map
    and the file's sha256.
    """
    from .._inputs import TooLarge, read_bounded

    try:
        raw = read_bounded(path, "--labels")
    except TooLarge as exc:
        raise ImportRefused(str(path), str(exc), field="--labels") from None
    except OSError as exc:
        raise ImportRefused(str(path), f"cannot read: {exc.strerror or exc}") from None
    src = SourceFile(str(path), raw, hashlib.sha256(raw).hexdigest())
    try:
        data = json.loads(src.data)
    except ValueError as exc:
        raise ImportRefused(src.path, f"not valid JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise ImportRefused(src.path, "expected a JSON object mapping run ids to outcomes")
    labels: dict[str, bool] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            labels[str(key)] = value
        elif (reward := finite_reward(value)) is not None:
            labels[str(key)] = reward >= 1.0
        elif isinstance(value, str) and value.lower() in _LABEL_WORDS:
            labels[str(key)] = _LABEL_WORDS[value.lower()]
        else:
            raise ImportRefused(
                src.path,
                "outcome must be true/false, a finite reward (1.0 = pass) or 'pass'/'fail'; "
                f"got {value!r}",
                field=str(key),
            )
    return labels, src.sha256


def _grouped(skipped: Sequence[Skipped]) -> list[dict[str, Any]]:
    """Skipped items grouped by what and why, with their count and how many files had them."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for s in skipped:
        g = groups.setdefault(
            (s.what, s.reason), {"what": s.what, "reason": s.reason, "count": 0, "files": set()}
        )
        g["count"] += s.count
        g["files"].add(s.file)
    out = []
    for g in groups.values():
        files = sorted(g.pop("files"))
        g["files"] = len(files)
        g["example_file"] = files[0]
        out.append(g)
    return sorted(out, key=lambda g: (-g["count"], g["what"]))


# --------------------------------------------------------------------------- scoring
def _score(trial: ImportedTrial, fmt: str) -> dict[str, Any]:
    """The trial's verdict (hbeval-scoring/1, methodology B), on the recording's label."""
    from hbeval_core.contract import TrialResult

    from ..scoring import score_trial

    label = trial.label

    def verify(_state: Any, _trace: Any) -> bool:
        return bool(label)

    task = SimpleNamespace(
        id=trial.task_id,
        question="",
        verify=verify if label is not None else None,
        required=(),
        forbidden_tools=(),
        irreversible_tools=(),
        expected_calls=None,
        metadata={},
    )
    errored = trial.tool_errors > 0
    scenario = SimpleNamespace(
        fault_type=FAULT_TYPE_OBSERVED if errored else FAULT_TYPE_NONE,
        is_nominal=not errored,
        domain=fmt,
    )
    result = TrialResult(
        final_state=trial.response_text,
        events=trial.events,
        status=trial.status,
        response_text=trial.response_text,
    )
    verdict = score_trial(task, scenario, result, methodology=METHODOLOGY_B).as_dict()
    if errored:
        verdict["faulted"] = True
        verdict["fault_basis"] = FAULT_BASIS_OBSERVED
    if label is None:
        verdict["passed"] = False
        verdict["pass_basis"] = PASS_UNVERIFIABLE
        verdict["severity"] = None
        verdict["severity_reasons"] = []
        checks = {k: v for k, v in verdict["checks"].items() if k != "verifier"}
        verdict["checks"] = checks
        verdict["constraint_count"] = len(checks)
        verdict["constraint_violations"] = sorted(k for k, ok in checks.items() if not ok)
        verdict["undefined"] = {**verdict["undefined"], "passed": NO_SUCCESS_LABEL}
    return verdict


def _trial_dict(
    trial: ImportedTrial, key: str, scenario: int, fmt: str, isolated: bool
) -> dict[str, Any]:
    verdict = _score(trial, fmt)
    if trial.label is None:
        outcome = OUTCOME_FAIL  # a placeholder for build_report; withheld afterwards
    else:
        outcome = OUTCOME_PASS if trial.label else OUTCOME_FAIL
    usage = dict(verdict.get("usage") or {})
    usage["model_calls"] = trial.model_calls
    usage["interventions"] = 0
    errored = trial.tool_errors > 0
    return {
        "trial_key": key,
        "task_id": trial.task_id,
        "category": None,
        "scenario_index": scenario,
        "trial_index": trial.trial_index,
        "domain": fmt,
        "fault_type": FAULT_TYPE_OBSERVED if errored else FAULT_TYPE_NONE,
        "is_nominal": not errored,
        "outcome": outcome,
        "attempts": 1,
        "verdict": verdict,
        "usage": usage,
        # A trial that continued a session (Hermes session logs) did not start on a fresh agent.
        "isolated": isolated and not trial.attrs.get("shared_session"),
    }


def _manifest(
    fmt: str,
    sources: Sequence[SourceFile],
    labels_file: str | None,
    labels_sha256: str | None,
    options: Mapping[str, Any] | None,
    redact: Sequence[str] = (),
) -> dict[str, Any]:
    """What the import is (format, versions, files, labels, options, the user's redaction
    rules): the run's manifest."""
    manifest: dict[str, Any] = {
        "kind": "import",
        "format": fmt,
        "importer_version": IMPORTER_VERSION,
        "derive_version": DERIVE_VERSION,
        "scoring_version": SCORING_VERSION,
        "files": [s.entry() for s in sources],
        "labels": None if labels_file is None else {"path": labels_file, "sha256": labels_sha256},
    }
    if options:
        manifest["options"] = dict(options)
    if redact:  # only when given: imports without rules keep their manifest hashes
        manifest["redact"] = list(redact)
    return manifest


def unreadable(path: str, exc: BaseException) -> ImportRefused:
    """A refusal naming ``path`` for a value a reader took in whose type it did not check: the
    field of the event it reached when the event model names one."""
    errors = getattr(exc, "errors", None)
    if callable(errors):  # a pydantic ValidationError: the event and its field
        first = errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        title = getattr(exc, "title", "event")
        return ImportRefused(
            path,
            f"a value of the wrong type: {first.get('msg')} (got "
            f"{str(first.get('input'))[:60]!r}); check that field in the file",
            field=f"{title}.{where}",
        )
    return ImportRefused(
        path,
        f"a part of the recording has a type the reader does not expect "
        f"({type(exc).__name__}: {str(exc)[:200]})",
    )


def _storable_verdict(verdict: dict[str, Any], redactor: Any) -> dict[str, Any]:
    """The verdict with its secrets redacted and unstorable values replaced (usually as is)."""
    from ..store._sanitise import sanitised_json

    clean, _, _ = sanitised_json(verdict, "verdict", redactor)
    return dict(clean)


def _source_section(
    fmt: str,
    files: list[Any],
    labelled: bool,
    labels: Any,
    skipped: list[Skipped],
    derivation: dict[str, Any],
    inferred: dict[str, Any],
    stored_changes: dict[str, int],
) -> dict[str, Any]:
    """The report's ``source`` section: what was imported and what its figures rest on."""
    return {
        "format": fmt,
        "importer_version": IMPORTER_VERSION,
        "files": files,
        "labelled": labelled,
        "labels": labels,
        "skipped": _grouped(skipped),
        "notes": [
            "imported recording: no fault was injected; a trial is faulted when the recording "
            "shows a tool call failing (fault_basis observed_error)",
            "IRS and the security gate are not measured on recordings (no injected fault, no "
            "planted attack)",
            *(
                [
                    "figures resting on inferred fields (derived by hbeval, not flagged by the "
                    "recording): " + ", ".join(f"{k} ({v})" for k, v in sorted(inferred.items()))
                ]
                if inferred
                else []
            ),
        ],
        "derivation": derivation,
        "inferred_figures": inferred,
        "stored_changes": stored_changes,
    }


def _store_trial(
    store: Any, run_id: str, fmt: str, t: ImportedTrial, key: str, scenario: int,
    td: Mapping[str, Any], outcome: str,
) -> None:  # fmt: skip
    """Store one trial: its record, its one attempt and its events, with its figures."""
    from ..store import AttemptRecord, TrialRecord

    verdict = td["verdict"]
    metrics = dict(verdict["metrics"])
    undefined = {
        k: v for k, v in (verdict.get("metrics_undefined") or {}).items() if metrics.get(k) is None
    }
    store.record_trial_bundle(
        TrialRecord(
            run_id=run_id,
            trial_key=key,
            task_id=t.task_id,
            scenario_index=scenario,
            trial_index=t.trial_index,
            outcome=outcome,
            fault_type=td["fault_type"],
            domain=fmt,
            verdict=verdict,
        ),
        [AttemptRecord(run_id=run_id, trial_key=key, attempt=0, outcome=outcome)],
        {0: t.events},
        metrics=metrics,
        undefined=undefined,
    )


def _store_run_metrics(store: Any, run_id: str, report: Report) -> None:
    """The run's figures, once (undefined ones with their reasons)."""
    run_metrics = report.metrics.model_dump(mode="json")
    if not store.get_metrics(run_id).values:
        store.record_metrics(
            run_id,
            None,
            run_metrics,
            {k: report.undefined.get(k, NOT_MEASURED) for k, v in run_metrics.items() if v is None},
        )


def _trials(
    reader: Reader,
    sources: Sequence[SourceFile],
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
    combine: Combiner | None,
) -> Iterator[ImportedTrial]:
    """The trials of ``sources`` in turn; a combiner (DSH nesting, OTLP sessions across files)
    needs every trial read first."""
    from ._stream import read_all

    trials = read_all(reader, sources, run_id_of, skipped, unreadable)
    if combine is None:
        return trials
    return iter(combine(list(trials), skipped))


def _inferred(tally: Tally) -> dict[str, str]:
    inferred = inferred_figures(tally.derivation)
    if tally.replans:
        inferred[PEI] = (
            f"{tally.replans} re-plan(s) inferred (a failed call, then a model call, then a "
            "different call); the recording marks no re-plan"
        )
    return inferred


def _report(
    store: Any,
    run_info: dict[str, Any],
    tally: Tally,
    source: dict[str, Any],
) -> Report:
    """The run's report from what the tally kept of each trial (stored as it is scored)."""
    from ..scoring import build_report
    from ..scoring._binding import bind_report, bound_trials
    from ..scoring._consistency import with_consistency
    from ..scoring._csi_runs import combined_events_digest, csi_history, identity_of, with_csi_runs
    from ..scoring._recorded import separate_recorded_errors
    from ..scoring._withhold import withhold_pass_figures

    events = combined_events_digest(tally.digests)
    history, csi_runs = csi_history(store, run_info, identity_of(run_info, events))
    run_id = run_info["run_id"]
    trials = bound_trials(run_id, tally.trial_dicts)
    tally.trial_dicts = []  # the report holds them now
    report = build_report(run=run_info, trials=trials, history=history)
    del trials
    if not tally.labelled:
        report = withhold_pass_figures(report, NO_SUCCESS_LABEL)
    report = separate_recorded_errors(report, tally.errors)
    report = report.model_copy(update={"source": source})
    report = with_consistency(report, tally.names)
    report = with_csi_runs(report, csi_runs)
    return bind_report(report)


def _summary(
    run_id: str, fmt: str, agent_id: str, mfp: str, files: list[dict[str, Any]], tally: Tally,
    skipped: Sequence[Skipped], report: Report | None, *, already: bool,
) -> ImportSummary:  # fmt: skip
    stored_changes = dict(tally.stored_changes)
    if already:
        source = None if report is None else report.source
        changes = source.get("stored_changes") if isinstance(source, dict) else None
        stored_changes = dict(changes) if isinstance(changes, dict) else {}
    return ImportSummary(
        run_id=run_id,
        format=fmt,
        agent_id=agent_id,
        measurement_fingerprint=mfp,
        tasks=len(tally.scenario_of),
        trials=tally.trials,
        tool_calls=tally.tool_calls,
        tool_errors=tally.tool_errors,
        model_calls=tally.model_calls,
        labelled=bool(tally.labelled),
        files=files,
        skipped=_grouped(skipped),
        already_imported=already,
        report=report,
        derivation=tally.derivation,
        inferred_figures=_inferred(tally),
        stored_changes=stored_changes,
    )


# --------------------------------------------------------------------------- public
def ingest(
    fmt: str,
    reader: Reader,
    sources: Sequence[SourceFile],
    *,
    store: Any,
    run_id: str | None = None,
    agent_id: str | None = None,
    labels: Mapping[str, bool] | None = None,
    labels_file: str | None = None,
    labels_sha256: str | None = None,
    isolated: bool = True,
    skipped: list[Skipped] | None = None,
    combine: Combiner | None = None,
    options: Mapping[str, Any] | None = None,
    redact: Sequence[str] = (),
) -> ImportSummary:
    """Read ``sources`` with ``reader`` (then ``combine``), score and store trial by trial, as
    one run in one transaction.

    A refused file (at any point) leaves nothing stored, not even the run's row; a run id
    already stored and completed is reported as already imported (nothing is written again).
    What is stored is redacted and capped by a ``store.Redactor`` with the built-in rules plus
    ``redact`` (which the manifest then records).
    """
    # Long because: the import's phases in order (identify, refuse or skip a stored run, then
    # in one transaction: read, key, score and store each trial, report), each in a helper;
    # what stays is the state they hand each other.
    from ..store import RUN_COMPLETED, Redactor, RunRecord
    from ..store.protocol import one_transaction
    from ._stream import Tally

    if not sources:
        raise ImportRefused("(no files)", "no recording files to import")
    mfp = measurement_fingerprint(fmt, sources, options)
    run_id = run_id or f"import-{fmt}-{mfp}"
    agent_id = agent_id or f"import-{fmt}"
    skipped = list(skipped or [])
    where = ", ".join(s.path for s in sources)

    def run_id_of(task_id: str, trial: int) -> str:
        return f"{run_id}/{task_id}/t{trial}"

    redactor = Redactor.from_rules(redact)
    manifest = _manifest(fmt, sources, labels_file, labels_sha256, options, redact)
    manifest_hash = fingerprint(manifest)
    files = [s.entry() for s in sources]

    def score(t: ImportedTrial, key: str, scenario: int) -> dict[str, Any]:
        td = _trial_dict(t, key, scenario, fmt, isolated)
        td["verdict"] = _storable_verdict(td["verdict"], redactor)
        return td

    stored = store.get_run(run_id)
    if stored is not None:
        if stored.measurement_fingerprint != mfp or stored.manifest_hash != manifest_hash:
            what = (
                "other recordings"
                if stored.measurement_fingerprint != mfp
                else "the same recordings imported with other options (--labels, --redact, "
                "--agent-id or --group-by)"
            )
            raise ImportRefused(
                run_id,
                f"a run with this id already holds {what}, and a stored run is never changed; "
                f"pass another --run-id (say --run-id {run_id}-2) to store this import beside it",
                field="--run-id",
            )
        if stored.status == RUN_COMPLETED:  # read again for the summary; nothing is written
            tally = Tally(redactor, labels, score, None)
            for t in _trials(reader, sources, run_id_of, skipped, combine):
                tally.add(t, skipped)
            tally.check(labels_file, where)
            tally.ids.skipped(skipped)
            report = store.get_report(run_id)
            return _summary(run_id, fmt, agent_id, mfp, files, tally, skipped, report, already=True)

    started = time.time()
    record = RunRecord(
        run_id=run_id,
        agent_id=agent_id,
        battery=f"import:{fmt}",
        measurement_fingerprint=mfp,
        manifest_hash=manifest_hash,
        config={"import": manifest},
        created_at=started,
    )
    with one_transaction(store):  # a refused import (a full disk too) leaves nothing
        store.start_run(record)
        done = store.completed_trial_keys(run_id) if stored is not None else frozenset()

        def store_trial(
            t: ImportedTrial, key: str, scenario: int, td: dict[str, Any], labelled: bool
        ) -> None:
            if key not in done:
                outcome = td["outcome"] if labelled else OUTCOME_SKIPPED
                _store_trial(store, run_id, fmt, t, key, scenario, td, outcome)

        tally = Tally(redactor, labels, score, store_trial)
        for t in _trials(reader, sources, run_id_of, skipped, combine):
            tally.add(t, skipped)
        tally.check(labels_file, where)
        tally.ids.skipped(skipped)
        run_info = {
            "run_id": run_id,
            "agent_id": agent_id,
            "battery": f"import:{fmt}",
            "seed": None,
            "trials": tally.k_max,
            "methodology": METHODOLOGY_B,
            "fingerprints": {"battery_spec": None, "plan": None, "measurement": mfp},
            "manifest_hash": manifest_hash,
            "manifest": manifest,
            "started_at": started,
            "ended_at": time.time(),
        }
        inferred = _inferred(tally)
        source = _source_section(
            fmt, files, bool(tally.labelled), manifest["labels"], skipped, tally.derivation,
            inferred, tally.stored_changes,
        )  # fmt: skip
        report = _report(store, run_info, tally, source)
        _store_run_metrics(store, run_id, report)
        store.finish_run(run_id, RUN_COMPLETED, report)
    return _summary(run_id, fmt, agent_id, mfp, files, tally, skipped, report, already=False)
