"""Finding 7 of the second adversarial pass: a built-in redaction pattern was quadratic.

``authorization`` read ``\\s*["']?\\s*``: two quantifiers over the same characters with only an
optional one between them, so a long run of spaces was split every way before the match failed
(1.25 s per value at 8k spaces). Every built-in pattern is now linear by construction, which
this test checks on the parsed patterns themselves, not on timings:

1. no repeat inside an unbounded repeat (no nested quantifiers);
2. within a sequence, an unbounded repeat never follows another over overlapping characters
   unless a required item between them matches nothing the first one can (so where one stops
   and the next starts is decided by one character).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from hbeval.store import _redact

try:
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

MAXREPEAT = sre_constants.MAXREPEAT
PROBE = frozenset(chr(c) for c in range(0, 256)) | {"é", "\u2028", "中"}
"""The characters a pattern element is tried on to learn which it matches."""

ZERO_WIDTH = {"AT", "ASSERT", "ASSERT_NOT"}


def _chars(op: Any, av: Any, flags: int) -> frozenset[str]:
    """Which probe characters one single-character element matches."""
    name = str(op)
    if name in ("LITERAL", "NOT_LITERAL"):
        text = re.escape(chr(av))
        pattern = text if name == "LITERAL" else f"[^{text}]"
    elif name == "ANY":
        pattern = "."
    else:
        pattern = None
    if pattern is not None:
        compiled = re.compile(pattern, flags)
        return frozenset(c for c in PROBE if compiled.fullmatch(c))
    if name == "IN":
        return _set_chars(av, flags)
    if name == "CATEGORY":
        return _set_chars([(op, av)], flags)
    raise AssertionError(f"not a single-character element: {name}")


def _set_chars(items: Any, flags: int) -> frozenset[str]:
    out = set()
    negate = any(str(op) == "NEGATE" for op, _ in items)
    for c in PROBE:
        hit = False
        for op, av in items:
            name = str(op)
            cases = {c, c.lower(), c.upper()} if flags & re.I else {c}
            codes = {ord(x) for x in cases if len(x) == 1}
            if name == "LITERAL":
                hit |= av in codes
            elif name == "RANGE":
                lo, hi = av
                hit |= any(lo <= code <= hi for code in codes)
            elif name == "CATEGORY":
                cat = str(av)
                probe = {
                    "CATEGORY_DIGIT": r"\d",
                    "CATEGORY_NOT_DIGIT": r"\D",
                    "CATEGORY_SPACE": r"\s",
                    "CATEGORY_NOT_SPACE": r"\S",
                    "CATEGORY_WORD": r"\w",
                    "CATEGORY_NOT_WORD": r"\W",
                }[cat]
                hit |= re.fullmatch(probe, c) is not None
        if hit != negate:
            out.add(c)
    return frozenset(out)


def _first(seq: Any, flags: int) -> frozenset[str]:
    """Characters a sequence's first character can be (up to its first required element)."""
    out: set[str] = set()
    for op, av in seq:
        name = str(op)
        if name in ZERO_WIDTH:
            continue
        chars, required = _element(op, av, flags)
        out |= chars
        if required:
            break
    return frozenset(out)


def _element(op: Any, av: Any, flags: int) -> tuple[frozenset[str], bool]:
    """(characters the element can start with, whether it must match at least one)."""
    name = str(op)
    if name == "SUBPATTERN":
        group_flags = flags | (av[1] or 0)
        return _first(av[3], group_flags), _required(av[3])
    if name == "BRANCH":
        chars: set[str] = set()
        for branch in av[1]:
            chars |= _first(branch, flags)
        return frozenset(chars), all(_required(b) for b in av[1])
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, _, body = av
        return _first(body, flags), low > 0 and _required(body)
    if name == "GROUPREF":
        return PROBE, True
    return _chars(op, av, flags), True


def _required(seq: Any) -> bool:
    return any(str(op) not in ZERO_WIDTH and _element(op, av, 0)[1] for op, av in seq)


def _has_repeat(seq: Any) -> bool:
    for op, av in seq:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _low, high, body = av
            if high > 1 or _has_repeat(body):
                return True
        elif name == "SUBPATTERN" and _has_repeat(av[3]):
            return True
        elif name == "BRANCH" and any(_has_repeat(b) for b in av[1]):
            return True
        elif name in ("ASSERT", "ASSERT_NOT") and _has_repeat(av[1]):
            return True
    return False


def ambiguities(seq: Any, flags: int = 0, where: str = "") -> list[str]:
    """Every place ``seq`` breaks rule 1 or 2 (module docstring)."""
    found: list[str] = []
    pending: list[frozenset[str]] = []  # unbounded repeats not yet closed by a separator
    for i, (op, av) in enumerate(seq):
        name = str(op)
        at = f"{where}[{i}]"
        if name in ZERO_WIDTH:
            if name != "AT":
                found += ambiguities(av[1], flags, at + "(look)")
            continue
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = av
            if high == MAXREPEAT and _has_repeat(body):
                found.append(f"{at}: a repeat nested in an unbounded repeat")
            found += ambiguities(body, flags, at)
            chars = _first(body, flags)
            if high == MAXREPEAT:
                for earlier in pending:
                    if earlier & chars:
                        shown = "".join(sorted(earlier & chars))[:12]
                        found.append(f"{at}: overlaps an earlier unbounded repeat on {shown!r}")
                pending.append(_all_chars(body, flags))
                continue
            if low == 0:
                continue
        elif name == "SUBPATTERN":
            found += ambiguities(av[3], flags | (av[1] or 0), at)
        elif name == "BRANCH":
            for j, branch in enumerate(av[1]):
                found += ambiguities(branch, flags, f"{at}|{j}")
        chars, required = _element(op, av, flags)
        if required:
            pending = [p for p in pending if p & chars]
    return found


def _all_chars(seq: Any, flags: int) -> frozenset[str]:
    """Every character a repeat's body can match anywhere (what the repeat may swallow)."""
    out: set[str] = set()
    for op, av in seq:
        name = str(op)
        if name in ZERO_WIDTH:
            continue
        if name == "SUBPATTERN":
            out |= _all_chars(av[3], flags | (av[1] or 0))
        elif name == "BRANCH":
            for branch in av[1]:
                out |= _all_chars(branch, flags)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            out |= _all_chars(av[2], flags)
        else:
            out |= _element(op, av, flags)[0]
    return frozenset(out)


BUILT_IN = [
    *_redact._SHAPES,
    ("quoted_field", _redact._QUOTED_FIELD.pattern),
    ("assigned_field", _redact._ASSIGNED_FIELD.pattern),
    ("name_word", _redact._NAME_WORD.pattern),
]


@pytest.mark.parametrize(("kind", "pattern"), BUILT_IN, ids=[k for k, _ in BUILT_IN])
def test_every_built_in_pattern_is_linear_by_construction(kind: str, pattern: str) -> None:
    parsed = sre_parse.parse(pattern)
    assert ambiguities(list(parsed), parsed.state.flags) == []


@pytest.mark.parametrize(
    "pattern",
    [
        r"\bauthorization\b[\"']?\s*[:=]\s*[\"']?\s*(?:bearer)\s+",  # the quadratic one
        r"(a+)+$",
        r"(?:[a-z]+ )*x",
        r"[a-z]+a[a-z]+",
        r"\s*x?\s*",
    ],
)
def test_the_checker_finds_ambiguous_patterns(pattern: str) -> None:
    parsed = sre_parse.parse(pattern)
    assert ambiguities(list(parsed), parsed.state.flags), pattern
