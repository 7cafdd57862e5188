"""An import trial by trial: each trial is read, labelled, redacted, keyed, scored and stored,
then its events are let go.

What an import keeps across trials is small and fixed per trial: its report entry (the trial
dict the report is built from), its tool names (consistency), its tool-error events (the
recorded-error messages), a digest of its events, the ids a labels file may name, and counts.
The events of one trial (or of the traces a reader still holds open) are the only part of a
recording in memory at a time. One ``IdRedactor`` and one ``Redactor`` serve the whole import,
so the same secret is replaced by the same text in every trial.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from hbeval_core.vocab import OUTCOME_SKIPPED, REPLAN, TOOL_ERROR

from ._common import ImportedTrial, ImportRefused, Skipped, count_derivations
from ._ids import IdRedactor

__all__ = ["Tally", "read_all"]

_READ_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError)


def read_all(
    reader: Callable[..., Iterable[ImportedTrial]],
    sources: Iterable[Any],
    run_id_of: Callable[[str, int], str],
    skipped: list[Skipped],
    unreadable: Callable[[str, BaseException], ImportRefused],
) -> Iterator[ImportedTrial]:
    """Every trial of ``sources`` in turn; a reader's unchecked type error names its file."""
    for src in sources:
        try:
            it = iter(reader(src.path, src.data, run_id_of, skipped))
        except ImportRefused:
            raise
        except _READ_ERRORS as exc:
            raise unreadable(src.path, exc) from None
        while True:
            try:
                t = next(it)
            except StopIteration:
                break
            except ImportRefused:
                raise
            except _READ_ERRORS as exc:
                raise unreadable(src.path, exc) from None
            yield t


class Tally:
    """What an import keeps of its trials once each is stored (see the module's note)."""

    def __init__(
        self,
        redactor: Any,
        labels: Mapping[str, bool] | None,
        score: Callable[[ImportedTrial, str, int], dict[str, Any]],
        store_trial: Callable[[ImportedTrial, str, int, dict[str, Any], bool], None] | None,
    ) -> None:
        self.redactor = redactor
        self.ids = IdRedactor(redactor)
        self.labels = dict(labels or {})
        self._score = score
        self._store_trial = store_trial
        self.scenario_of: dict[str, int] = {}
        self.taken: set[tuple[str, int]] = set()
        self.per_task: Counter[str] = Counter()
        self.trial_dicts: list[dict[str, Any]] = []
        self.names: dict[str, list[str]] = {}
        self.errors: dict[str, list[Any]] = {}
        self.digests: list[tuple[str, str]] = []
        self.source_ids: set[str] = set()
        self.task_ids: set[str] = set()
        self.labelled: bool | None = None
        self.unlabelled = 0
        self.first_unlabelled: str | None = None
        self.derivation: dict[str, dict[str, int]] = {"outcome": {}, "link": {}}
        self.replans = 0
        self.stored_changes = {"redacted": 0, "capped": 0, "replaced": 0}
        self.tool_calls = self.tool_errors = self.model_calls = 0
        self.mixed = False
        self.trials = 0

    # ----------------------------------------------------------------- one trial
    def add(self, t: ImportedTrial, skipped: list[Skipped]) -> None:
        from ..scoring._csi_runs import trial_events_digest

        """Take one trial as read: skip it if it holds no call, else keep its part and store it."""
        if not (t.model_calls or t.tool_calls):  # a prompt nobody answered
            skipped.append(
                Skipped(t.source_file, "runs with no model or tool call", "nothing to score")
            )
            return
        self._label(t)
        self.ids.trial(t)  # labels are matched: ids may change now
        key, scenario = self._key(t)
        for name, counts in count_derivations(t.events).items():
            for basis, n in counts.items():
                self.derivation[name][basis] = self.derivation[name].get(basis, 0) + n
        self.replans += _inferred_replans(t.events)
        self.tool_calls += t.tool_calls
        self.tool_errors += t.tool_errors
        self.model_calls += t.model_calls
        self._storable(t)
        td = self._score(t, key, scenario)
        self.trial_dicts.append(td)
        self.names[key] = [str(getattr(e, "tool", "")) for e in t.events if e.kind == "tool_start"]  # type: ignore[attr-defined]
        errors = [e for e in t.events if getattr(e, "kind", None) == TOOL_ERROR]
        if errors:
            self.errors[key] = errors
        self.digests.append((key, trial_events_digest(t.events)))
        self.trials += 1
        if self._store_trial is not None and not self.mixed:
            self._store_trial(t, key, scenario, td, bool(self.labelled))
        t.events = []  # the trial is stored: its events are let go

    def _label(self, t: ImportedTrial) -> None:
        self.source_ids.add(t.source_id)
        self.task_ids.add(t.task_id)
        if t.source_id in self.labels:
            t.label = self.labels[t.source_id]
        elif t.task_id in self.labels:
            t.label = self.labels[t.task_id]
        flag = t.label is not None
        if not flag:
            self.unlabelled += 1
            self.first_unlabelled = self.first_unlabelled or t.source_id
        if self.labelled is None:
            self.labelled = flag
        elif flag != self.labelled:
            self.mixed = True  # refused at the end, once every run is counted

    def _key(self, t: ImportedTrial) -> tuple[str, int]:
        """Tasks numbered in order of first appearance; repeated (task, trial) pairs move on."""
        from ..store import make_trial_key

        scenario = self.scenario_of.setdefault(t.task_id, len(self.scenario_of))
        while (t.task_id, t.trial_index) in self.taken:
            t.trial_index += 1
        self.taken.add((t.task_id, t.trial_index))
        self.per_task[t.task_id] += 1
        return make_trial_key(scenario, t.trial_index), scenario

    def _storable(self, t: ImportedTrial) -> None:
        """The trial's events (and final text) as the store will hold them (the runner's
        treatment: secrets redacted, tool results capped, unstorable values replaced)."""
        from ..store import REDACTED, storable_events, storable_text
        from ..store._sanitise import change_kind

        t.events, notes = storable_events(t.events, redactor=self.redactor)
        for note in notes:
            self.stored_changes[change_kind(note)] += 1
        if isinstance(t.response_text, str):
            text = self.redactor.redact_text(storable_text(t.response_text))[0]
            if text != t.response_text:
                self.stored_changes["redacted" if REDACTED in text else "replaced"] += 1
                t.response_text = text

    # ----------------------------------------------------------------- the end
    def check(self, labels_file: str | None, where: str) -> None:
        """Refuse what only the whole import shows: labels for unknown runs, no run at all,
        runs with and without a success label."""
        if self.labels:
            known = self.source_ids | self.task_ids
            unknown = sorted(k for k in self.labels if k not in known)
            if unknown:
                sample = ", ".join(sorted(self.source_ids)[:3])
                raise ImportRefused(
                    labels_file or "labels",
                    f"no imported run has id {unknown[0]!r} ({len(unknown)} unknown id(s)); "
                    f"ids look like {sample}",
                    field=unknown[0],
                )
        if not self.trials:
            raise ImportRefused(where, "no recorded agent run found in the file(s)")
        if self.mixed:
            raise ImportRefused(
                labels_file or where.split(", ")[0],
                f"{self.unlabelled} run(s) have no success label while others do "
                f"(e.g. {self.first_unlabelled}); label every run or none",
            )

    @property
    def k_max(self) -> int:
        """The most trials of one task."""
        return max(self.per_task.values(), default=1)

    def outcome(self, td: Mapping[str, Any]) -> str:
        """The stored outcome of a trial dict (skipped when the import carries no label)."""
        return str(td["outcome"]) if self.labelled else OUTCOME_SKIPPED


def _inferred_replans(events: list[Any]) -> int:
    """Re-plans PEI counts that were inferred, in a trial that records no ``replan`` event
    (``live.derive``: a failed call, a model call after it, then a different call)."""
    from hbeval_core.live.derive import derive_steps

    if any(getattr(e, "kind", None) == REPLAN for e in events):
        return 0
    return sum(1 for step in derive_steps(events) if step.replanned)
