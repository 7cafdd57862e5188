"""The CrewAI versions this adapter supports, in one place, and the check made at instrument time.

The adapter relies on CrewAI's interception hooks (``crewai.hooks``), on ``BaseLLM``'s call
signature and on a few internals (listed in adapters/crewai/README.md, each with a named contract
test). Those can change in any release, so the supported range is pinned here (the ``[crewai]``
extra in pyproject.toml says the same) and checked before anything is patched.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Final

__all__ = [
    "DISTRIBUTION",
    "SUPPORTED",
    "UnsupportedVersionError",
    "check_supported",
    "installed_version",
    "version_in_range",
]

SUPPORTED: Final = ">=1.15,<2"
"""Supported versions of the ``crewai`` distribution (the pyproject extra says the same)."""

DISTRIBUTION: Final = "crewai"

_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([0-9][0-9A-Za-z.\-+]*)\s*$")
_RELEASE = re.compile(r"^(\d+(?:\.\d+)*)")


class UnsupportedVersionError(RuntimeError):
    """CrewAI is missing, or installed at a version this adapter was not verified against."""


def _release(version: str) -> tuple[int, ...]:
    """The numeric release part of a version, padded to three places ("1.15rc1" -> (1, 15, 0))."""
    match = _RELEASE.match(version.strip())
    if match is None:
        raise ValueError(f"not a version number: {version!r}")
    parts = tuple(int(p) for p in match.group(1).split("."))
    return parts + (0,) * max(0, 3 - len(parts))


def _is_prerelease(version: str) -> bool:
    match = _RELEASE.match(version.strip())
    return match is not None and match.end() < len(version.strip())


def version_in_range(version: str, spec: str = SUPPORTED) -> bool:
    """Whether ``version`` satisfies every comma-separated clause of ``spec`` (">=1.15,<2").

    Compares release numbers only; a pre-release of the lower bound ("1.15.0rc1") is outside
    ``>=1.15``, as pip would say.
    """
    release = _release(version)
    for clause in spec.split(","):
        match = _CLAUSE.match(clause)
        if match is None:
            raise ValueError(f"cannot read version clause {clause!r} of {spec!r}")
        op, bound = match.group(1), _release(match.group(2))
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


def installed_version() -> str | None:
    """The installed version of crewai, or None when it is not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def check_supported(version: str | None = None) -> str:
    """Raise ``UnsupportedVersionError`` unless the installed crewai is in ``SUPPORTED``.

    Returns the version found, for manifests. ``version`` overrides what is installed (tests).
    """
    found = installed_version() if version is None else version
    if found is None:
        raise UnsupportedVersionError(
            f"hbeval_crewai needs crewai {SUPPORTED}, which is not installed; "
            "install it with: pip install 'hbeval[crewai]'"
        )
    if not version_in_range(found):
        raise UnsupportedVersionError(
            f"hbeval_crewai supports crewai {SUPPORTED}, but found crewai {found}. The adapter "
            "relies on CrewAI's hooks and a few internals that may have changed; install a "
            "supported version (pip install 'hbeval[crewai]'), or pass check_version=False to "
            "try anyway at your own risk."
        )
    return found
