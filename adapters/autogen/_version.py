"""The AutoGen versions this adapter supports, in one place, and the check made at instrument time.

The adapter touches private attributes of ``AssistantAgent`` (``_workbench``, ``_model_client``,
``_memory``) and relies on a few internal behaviours (see tests/adapters/autogen/test_autogen_contract.py). Those
can change in any release, so the supported range is pinned here (and mirrored by the
``[autogen]`` extra in pyproject.toml), checked before anything is patched, and every private
attribute and behaviour has a contract test.
"""

from __future__ import annotations

from typing import Final

from hbeval_core.versions import UnsupportedVersionError
from hbeval_core.versions import installed_versions as _installed_versions
from hbeval_core.versions import version_in_range as _in_range

__all__ = [
    "CHECKED_DISTRIBUTIONS",
    "SUPPORTED",
    "UnsupportedVersionError",
    "check_supported",
    "installed_versions",
    "version_in_range",
]

SUPPORTED: Final = ">=0.7.5,<0.8"
"""Supported versions of autogen-agentchat and autogen-core (the pyproject extra says the same)."""

CHECKED_DISTRIBUTIONS: Final = ("autogen-agentchat", "autogen-core")
"""Distributions whose installed version must fall in ``SUPPORTED``."""


def version_in_range(version: str, spec: str = SUPPORTED) -> bool:
    """Whether ``version`` satisfies ``spec`` (default: this adapter's supported range)."""
    return _in_range(version, spec)


def installed_versions() -> dict[str, str | None]:
    """The installed version of each checked distribution (None when it is not installed)."""
    return _installed_versions(CHECKED_DISTRIBUTIONS)


def check_supported(versions: dict[str, str | None] | None = None) -> dict[str, str]:
    """Raise ``UnsupportedVersionError`` unless every checked distribution is in ``SUPPORTED``.

    Returns the versions found, for manifests. ``versions`` overrides what is installed (tests).
    """
    found = installed_versions() if versions is None else versions
    missing = [d for d, v in found.items() if v is None]
    if missing:
        raise UnsupportedVersionError(
            f"hbeval_autogen needs {', '.join(missing)} {SUPPORTED}, which is not installed; "
            "install it with: pip install 'hbeval[autogen]'"
        )
    bad = {d: v for d, v in found.items() if v is not None and not version_in_range(v)}
    if bad:
        listed = ", ".join(f"{d} {v}" for d, v in bad.items())
        raise UnsupportedVersionError(
            f"hbeval_autogen supports autogen-agentchat and autogen-core {SUPPORTED}, "
            f"but found {listed}. The adapter relies on private attributes that may have "
            f"changed; install a supported version (pip install 'hbeval[autogen]'), or pass "
            f"check_version=False to try anyway at your own risk."
        )
    return {d: v for d, v in found.items() if v is not None}
