"""Recordings from elsewhere become hbeval runs: tau-bench, tau2, Pi, OpenClaw, DeepSeek Harness,
Hermes Agent, OTLP/JSON.

``import_recordings(fmt, paths, store=...)`` reads every file (``fmt`` may be ``"auto"``),
turns each recorded agent run into a trial, scores it and stores one run; the rules are in
``_ingest``. Each format's reader lives in its own private module.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._common import ImportedTrial, ImportRefused, Skipped
from ._ingest import (
    IMPORTER_VERSION,
    ImportSummary,
    SourceFile,
    ingest,
    measurement_fingerprint,
    read_labels,
    read_source,
)

__all__ = [
    "FORMATS",
    "GROUP_BY",
    "IMPORTER_VERSION",
    "ImportRefused",
    "ImportSummary",
    "ImportedTrial",
    "detect_format",
    "import_recordings",
    "measurement_fingerprint",
    "read_trials",
]

# format -> the private module that reads it (``wants``, ``sniff``, ``read``)
_MODULES: dict[str, str] = {
    "tau-bench": "._tau_bench",
    "pi": "._pi",
    "dsh": "._dsh",
    "otlp-json": "._otlp",
    "tau2": "._tau2",
    "openclaw": "._openclaw",
    "hermes": "._hermes",
}
FORMATS: tuple[str, ...] = tuple(_MODULES)
"""Formats ``import`` reads (besides ``auto``)."""

_ISOLATED = {
    "tau-bench": True,
    "pi": False,
    "dsh": True,
    "otlp-json": True,
    "tau2": True,
    "openclaw": False,
    "hermes": True,
}
"""Whether a format's trials ran on a fresh agent (Pi's prompts share one session)."""


def _module(fmt: str) -> Any:
    if fmt not in _MODULES:
        raise ImportRefused(
            fmt, f"unknown format; choose one of {', '.join(FORMATS)} or auto", field="FORMAT"
        )
    return importlib.import_module(_MODULES[fmt], __name__)


def _expand(paths: Sequence[str | Path], fmt: str | None) -> list[Path]:
    """Files named, and the recording files inside folders named (sorted, for a stable order).

    Inside a folder, a named format takes the files its reader wants; ``auto`` (``fmt`` None)
    takes the files some reader wants whose first bytes some format recognises.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = []
            for f in sorted(p.rglob("*")):
                if not f.is_file():
                    continue
                if fmt is not None:
                    if _module(fmt).wants(f):
                        found.append(f)
                else:
                    name = _sniffed(f)
                    if name is not None and _module(name).wants(f):
                        found.append(f)
            if not found:
                raise ImportRefused(str(p), "no recording file found in this folder")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise ImportRefused(str(p), "no such file or folder")
    return out


def _sniffed(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError:
        return None
    return next((n for n in FORMATS if _module(n).sniff(head, str(path))), None)


def detect_format(source: SourceFile) -> str:
    """The format of one file, from its name and first bytes; refuses when none fits."""
    head = source.data[:65536]
    for name in FORMATS:
        if _module(name).sniff(head, source.path):
            return name
    raise ImportRefused(
        source.path,
        f"cannot tell the format; name it instead of auto ({', '.join(FORMATS)})",
        field="FORMAT",
    )


def _load(fmt: str, paths: Sequence[str | Path]) -> tuple[str, list[SourceFile]]:
    if fmt != "auto":
        _module(fmt)  # an unknown format is refused before any file is read
    files = _expand(paths, None if fmt == "auto" else fmt)
    sources = [read_source(f) for f in files]
    if fmt != "auto":
        return fmt, sources
    found = {s.path: detect_format(s) for s in sources}
    kinds = sorted(set(found.values()))
    if len(kinds) > 1:
        sample = ", ".join(f"{p} is {k}" for p, k in list(found.items())[:4])
        raise ImportRefused(
            "auto", f"the files are in different formats ({sample}); import each format apart"
        )
    return kinds[0], sources


GROUP_BY = ("trace", "session")
"""How OTLP spans become trials: one per trace (default) or one per session/conversation id."""


def _reader(fmt: str, group_by: str) -> tuple[Any, Any, dict[str, str] | None]:
    """The format's reader, its combiner and the options that change its trials."""
    module = _module(fmt)
    if group_by not in GROUP_BY:
        raise ImportRefused(group_by, f"choose one of {', '.join(GROUP_BY)}", field="--group-by")
    if group_by == "trace":
        return module.read, getattr(module, "combine", None), None
    if fmt != "otlp-json":
        raise ImportRefused(fmt, "only otlp-json recordings group by session", field="--group-by")
    return (
        functools.partial(module.read, group_by=group_by),
        module.combine_sessions,
        {"group_by": group_by},
    )


def read_trials(
    fmt: str, paths: Sequence[str | Path], run_id: str = "import", *, group_by: str = "trace"
) -> list[ImportedTrial]:
    """The trials a recording holds, without scoring or storing them (for tests and tools)."""
    fmt, sources = _load(fmt, paths)
    reader, combine, _ = _reader(fmt, group_by)
    skipped: list[Skipped] = []
    trials: list[ImportedTrial] = []
    for s in sources:
        trials.extend(reader(s.path, s.data, lambda t, i: f"{run_id}/{t}/t{i}", skipped))
    return combine(trials, skipped) if combine is not None else trials


def import_recordings(
    fmt: str,
    paths: Sequence[str | Path],
    *,
    store: Any,
    run_id: str | None = None,
    agent_id: str | None = None,
    labels: str | Path | Mapping[str, bool] | None = None,
    group_by: str = "trace",
    redact: Sequence[str] = (),
) -> ImportSummary:
    """Import recordings in ``fmt`` (or ``"auto"``) from ``paths`` into ``store`` as one run.

    ``labels`` is a labels file (or a mapping) of source ids or task ids to outcomes. Raises
    :class:`ImportRefused` naming file, line and field for anything it cannot read; then
    nothing was stored. ``group_by="session"`` (OTLP only) makes one trial per session.
    ``redact`` adds rules to the built-in secret shapes, as ``battery run --redact`` does (a
    regex, or ``name:FIELD``); given rules are part of the run's manifest.
    """
    from ..store import parse_redact_rules

    try:
        parse_redact_rules(redact)
    except ValueError as exc:
        raise ImportRefused("--redact", str(exc), field="--redact") from None
    fmt, sources = _load(fmt, paths)
    reader, combine, options = _reader(fmt, group_by)
    label_map: Mapping[str, bool] | None = None
    labels_file = labels_sha = None
    if isinstance(labels, Mapping):
        label_map, labels_file = labels, "labels"
    elif labels is not None:
        label_map, labels_sha = read_labels(Path(labels))
        labels_file = str(labels)
    return ingest(
        fmt,
        reader,
        sources,
        store=store,
        run_id=run_id,
        agent_id=agent_id,
        labels=label_map,
        labels_file=labels_file,
        labels_sha256=labels_sha,
        isolated=_ISOLATED[fmt],
        combine=combine,
        options=options,
        redact=tuple(redact),
    )
