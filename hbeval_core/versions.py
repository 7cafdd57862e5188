"""Version ranges of the frameworks adapters support, checked without importing packaging.

Each adapter pins its supported range in one place (its ``_version.py``, mirrored by its
pyproject extra) and checks it at instrument time through these helpers.
"""

from __future__ import annotations

import functools
import re
from importlib import metadata
from typing import Final

__all__ = ["UnsupportedVersionError", "installed_versions", "release_tuple", "version_in_range"]

_CLAUSE: Final = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([0-9][0-9A-Za-z.\-+]*)\s*$")
_RELEASE: Final = re.compile(r"^(\d+(?:\.\d+)*)")


class UnsupportedVersionError(RuntimeError):
    """A framework is missing, or installed at a version its adapter was not verified against."""


def release_tuple(version: str) -> tuple[int, ...]:
    """The numeric release part of a version, padded to three places ("1.15rc1" -> (1, 15, 0))."""
    match = _RELEASE.match(version.strip())
    if match is None:
        raise ValueError(f"not a version number: {version!r}")
    parts = tuple(int(p) for p in match.group(1).split("."))
    return parts + (0,) * max(0, 3 - len(parts))


def _is_prerelease(version: str) -> bool:
    match = _RELEASE.match(version.strip())
    return match is not None and match.end() < len(version.strip())


def version_in_range(version: str, spec: str) -> bool:
    """Whether ``version`` satisfies every comma-separated clause of ``spec`` (">=1.15,<2").

    Compares release numbers only; a pre-release of the lower bound ("1.15.0rc1") is outside
    ``>=1.15``, as pip would say.
    """
    release = release_tuple(version)
    for clause in spec.split(","):
        match = _CLAUSE.match(clause)
        if match is None:
            raise ValueError(f"cannot read version clause {clause!r} of {spec!r}")
        op, bound = match.group(1), release_tuple(match.group(2))
        ok = {
            ">=": release >= bound,
            "<=": release <= bound,
            ">": release > bound,
            "<": release < bound,
            "==": release == bound,
            "!=": release != bound,
        }[op]
        if op == ">=" and release == bound and _is_prerelease(version):
            ok = False
        if not ok:
            return False
    return True


@functools.lru_cache(maxsize=8)
def _lookup_versions(distributions: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    # Reading package metadata costs milliseconds: once per process is enough.
    found: list[tuple[str, str | None]] = []
    for dist in distributions:
        try:
            found.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            found.append((dist, None))
    return tuple(found)


def installed_versions(distributions: tuple[str, ...]) -> dict[str, str | None]:
    """The installed version of each distribution (None when it is not installed), read once."""
    return dict(_lookup_versions(tuple(distributions)))
