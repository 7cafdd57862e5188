"""JSONL reading and writing of events, with a version header and line-numbered errors.

A file starts with a header line ``{"format": "hb-events/1"}``; each following line is one event.
A file without a header is read as hb-events/1. A header naming a newer version is refused.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..vocab import EVENTS_FORMAT

if TYPE_CHECKING:
    from ._base import EventBase

_FORMAT_RE = re.compile(r"^hb-events/(\d+)$")
_CURRENT_MAJOR = int(EVENTS_FORMAT.rsplit("/", 1)[1])


class EventFormatError(ValueError):
    """A line of an events file could not be read. Names the line and the field."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        self.line = line
        self.field = field
        where = f"line {line}: " if line is not None else ""
        super().__init__(where + message)


def _reject_constant(name: str) -> Any:
    raise ValueError(
        f"{name} is not allowed (NaN and infinities are rejected; write null for unknown)"
    )


def _check_header(obj: dict[str, Any], line: int) -> None:
    fmt = obj.get("format")
    m = _FORMAT_RE.match(fmt) if isinstance(fmt, str) else None
    if m is None:
        raise EventFormatError(
            f"header has format {fmt!r}; expected {EVENTS_FORMAT!r}", line=line, field="format"
        )
    major = int(m.group(1))
    if major > _CURRENT_MAJOR:
        raise EventFormatError(
            f"file is {fmt}, written by a newer hbeval; this hbeval reads {EVENTS_FORMAT}. "
            "Upgrade hbeval to read it.",
            line=line,
            field="format",
        )


def _field_of(exc: Exception) -> tuple[str | None, str]:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            errs = errors()
        except Exception:  # pragma: no cover - defensive
            errs = []
        if errs:
            first = errs[0]
            loc = [str(p) for p in first.get("loc", ())]
            # The discriminated union puts the kind tag first in the location; drop it.
            if len(loc) > 1 and loc[0] in _KINDS:
                loc = loc[1:]
            field = ".".join(loc) or None
            return field, f"{first.get('msg', str(exc))}" + (f" (field {field!r})" if field else "")
    return None, str(exc)


_KINDS: frozenset[str] = frozenset()


def iter_event_lines(lines: Iterable[str | bytes]) -> Iterator[EventBase]:
    """Validate events from an iterable of JSONL lines; blank lines are skipped.

    Fast path: pydantic-core parses and validates each line in one pass. A line that fails it
    (a header, bad input) or that may hold a NaN or an infinity (which the fast parser would
    accept inside free-form fields) takes the slow path, which gives the precise error.
    """
    return _validated(lines, None)


def _validated(lines: Iterable[str | bytes] | None, path: str | Path | None) -> Iterator[EventBase]:
    """The one loop behind ``iter_event_lines`` and ``read_events`` (which passes ``path``).

    A path is opened here, lazily, so reading a file is one generator, not two stacked ones:
    at a few microseconds per event the extra hand-off is measurable.
    """
    from ._union import event_adapter

    adapter = event_adapter()
    validate_json = adapter.validator.validate_json  # skip the TypeAdapter wrapper: hot path
    validate = adapter.validate_python
    fh = open(path, "rb") if path is not None else None  # closed in the finally below
    try:
        source: Iterable[str | bytes] = fh if fh is not None else lines  # type: ignore[assignment]
        for lineno, raw in enumerate(source, start=1):
            if raw.__class__ is not bytes and isinstance(raw, str):
                raw = raw.encode("utf-8")
            # find() rather than `in`: the same scan without taking a buffer of the argument.
            if raw.find(b"NaN") < 0 and raw.find(b"Infinity") < 0:
                try:
                    yield validate_json(raw)
                    continue
                except ValueError:
                    pass
            if not raw.strip():
                continue
            event = _slow_line(raw, lineno, validate)
            if event is not None:
                yield event
    finally:
        if fh is not None:
            fh.close()


def _loads_on_a_fresh_stack(raw: bytes) -> Any:
    """``json.loads`` on a new thread, whose stack holds nothing else.

    How deep the JSON reader goes depends on how deep the caller's stack already is: a line
    nested close to the limit would be read from one caller and refused from another (the CLI,
    a test, the score loop's fallback). Retried here, the limit is the same from every caller,
    and it is the highest any caller has, so a line any reader took is never refused here.
    """
    out: list[Any] = []
    failed: list[BaseException] = []

    def read() -> None:
        try:
            out.append(json.loads(raw, parse_constant=_reject_constant))
        except BaseException as exc:  # handed to the caller's thread below
            failed.append(exc)

    thread = threading.Thread(target=read, name="hbeval-deep-json", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0].with_traceback(None)
    return out[0]


def _slow_line(raw: bytes, lineno: int, validate: Any) -> EventBase | None:
    """Parse one line with the stdlib and report exactly what is wrong with it."""
    global _KINDS
    if not _KINDS:
        from ..vocab import EVENT_KINDS

        _KINDS = frozenset(EVENT_KINDS)
    try:
        try:
            obj = json.loads(raw, parse_constant=_reject_constant)
        except RecursionError:
            obj = _loads_on_a_fresh_stack(raw)
    except ValueError as exc:
        raise EventFormatError(f"not valid JSON: {exc}", line=lineno) from None
    except RecursionError:
        raise EventFormatError(
            "nested too deeply to read (more levels than the JSON reader allows)", line=lineno
        ) from None
    if not isinstance(obj, dict):
        raise EventFormatError("each line must be a JSON object", line=lineno)
    if "format" in obj and "kind" not in obj:
        _check_header(obj, lineno)
        return None
    if "kind" not in obj:
        raise EventFormatError("missing field 'kind'", line=lineno, field="kind")
    try:
        return validate(obj)  # type: ignore[no-any-return]
    except Exception as exc:
        field, msg = _field_of(exc)
        kind = obj.get("kind")
        if not isinstance(kind, str) or kind not in _KINDS:  # a list or dict is no kind either
            field = "kind"
            msg = (
                f"unknown event kind {obj.get('kind')!r}; known kinds: {', '.join(sorted(_KINDS))}"
            )
        raise EventFormatError(msg, line=lineno, field=field) from None


def read_events(source: str | Path | IO[str] | IO[bytes]) -> Iterator[EventBase]:
    """Stream events from a JSONL path or open text file, checking the format version."""
    if isinstance(source, (str, Path)):
        return _validated(None, source)
    return _validated(source, None)


def dump_event(ev: EventBase) -> str:
    """One event as a compact JSON line: ``kind`` first, defaults left out, NaN refused."""
    # Python mode, then the stdlib encoder with allow_nan=False: pydantic's JSON mode would turn a
    # NaN inside a free-form field into null, silently hiding a value.
    body = ev.model_dump(exclude_defaults=True)
    body.pop("kind", None)
    return json.dumps(
        {"kind": ev.kind, **body},  # type: ignore[attr-defined]
        separators=(",", ":"),
        allow_nan=False,
        default=str,
        ensure_ascii=False,
    )


def write_events(target: str | Path | IO[str], events: Iterable[EventBase]) -> int:
    """Write a header line and one event per line; returns the number of events written."""
    header = json.dumps({"format": EVENTS_FORMAT}, separators=(",", ":"))

    def _emit(fh: IO[str]) -> int:
        fh.write(header + "\n")
        n = 0
        for ev in events:
            fh.write(dump_event(ev) + "\n")
            n += 1
        return n

    if isinstance(target, (str, Path)):
        with open(target, "w", encoding="utf-8") as fh:
            return _emit(fh)
    return _emit(target)
