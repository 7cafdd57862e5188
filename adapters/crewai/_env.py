"""Run CrewAI offline and clean: telemetry off, its data folders in a temporary directory.

On a fresh machine CrewAI tries to reach its telemetry host, stalls about 5 s on a first-run
trace prompt, and writes files under the home folder (``~/.local/share/crewai``,
``~/.config/crewai``) and under ``$XDG_DATA_HOME``. Call ``offline_environment()`` **before**
``import crewai`` (some of its paths are computed at import time) in examples, fixtures and CI.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Final

__all__ = ["OFFLINE_ENV", "offline_environment"]

OFFLINE_ENV: Final[dict[str, str]] = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
}
"""Environment that keeps CrewAI from reaching the network or prompting on a first run."""


def offline_environment(base: str | Path | None = None, *, home: bool = True) -> Path:
    """Set CrewAI's telemetry switches and point its data folders at ``base`` (a new temp dir).

    Sets ``XDG_DATA_HOME``, ``XDG_CONFIG_HOME``, ``CREWAI_STORAGE_DIR`` and, with ``home=True``,
    ``HOME`` (CrewAI writes a key under ``~/.local/share`` whatever XDG says). Returns the folder.
    Affects this process and its children; call it before ``import crewai``.
    """
    root = Path(base) if base is not None else Path(tempfile.mkdtemp(prefix="hbeval-crewai-"))
    root.mkdir(parents=True, exist_ok=True)
    os.environ.update(OFFLINE_ENV)
    for var, sub in (("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config")):
        folder = root / sub
        folder.mkdir(exist_ok=True)
        os.environ[var] = str(folder)
    os.environ["CREWAI_STORAGE_DIR"] = "hbeval-crewai"
    if home:
        folder = root / "home"
        folder.mkdir(exist_ok=True)
        os.environ["HOME"] = str(folder)
    return root
