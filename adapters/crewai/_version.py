"""The CrewAI versions this adapter supports, in one place, and the check made at instrument time.

The adapter relies on CrewAI's interception hooks (``crewai.hooks``), on ``BaseLLM``'s call
signature and on a few internals (listed in adapters/crewai/README.md, each with a named contract
test). Those can change in any release, so the supported range is pinned here (the ``[crewai]``
extra in pyproject.toml says the same) and checked before anything is patched.
"""

from __future__ import annotations

from importlib import metadata
from typing import Final

from hbeval_core.versions import UnsupportedVersionError
from hbeval_core.versions import version_in_range as _in_range

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


def version_in_range(version: str, spec: str = SUPPORTED) -> bool:
    """Whether ``version`` satisfies ``spec`` (default: this adapter's supported range)."""
    return _in_range(version, spec)


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
