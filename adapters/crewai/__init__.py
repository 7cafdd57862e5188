"""hbeval for CrewAI: capture an existing crew, run it under a fault battery, attach a memory.

Run a crew you already have under the battery, with no edit to it::

    from hbeval_crewai import FaultRun

    report = FaultRun(crew, tasks=tasks, battery="hbeval", trials=3, seed=42).run()

or from the command line: ``hbeval battery run my_crew.py:crew``. Capture without faults:
``instrument()`` / ``uninstrument()`` for the whole process, ``capture()`` for a block.

Importing this package is cheap: CrewAI loads only when one of these names is first used. Call
``offline_environment()`` before importing CrewAI to keep it offline and out of the home folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hbeval_core._lazy import lazy_exports

from ._env import OFFLINE_ENV, offline_environment
from ._version import SUPPORTED, UnsupportedVersionError, check_supported

# name -> module that defines it; resolved on first attribute access.
_EXPORTS: dict[str, str] = {
    "CrewAIAdapter": "hbeval_crewai._adapter",
    "episode_of": "hbeval_crewai._adapter",
    "is_crewai_target": "hbeval_crewai._adapter",
    "resolve_crew": "hbeval_crewai._adapter",
    "CrewAIRecorder": "hbeval_crewai._recorder",
    "RecordingLLM": "hbeval_crewai._llm",
    "capture": "hbeval_crewai._hooks",
    "current_recorder": "hbeval_crewai._hooks",
    "instrument": "hbeval_crewai._hooks",
    "is_instrumented": "hbeval_crewai._hooks",
    "uninstrument": "hbeval_crewai._hooks",
    "FaultRun": "hbeval_crewai._faultrun",
    "Memory": "hbeval_crewai._memory",
    "ListMemory": "hbeval_crewai._memory",
}

__all__ = [
    "OFFLINE_ENV",
    "SUPPORTED",
    "CrewAIAdapter",
    "CrewAIRecorder",
    "FaultRun",
    "ListMemory",
    "Memory",
    "RecordingLLM",
    "UnsupportedVersionError",
    "capture",
    "check_supported",
    "current_recorder",
    "episode_of",
    "instrument",
    "is_crewai_target",
    "is_instrumented",
    "offline_environment",
    "resolve_crew",
    "uninstrument",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__, None)


if TYPE_CHECKING:
    from ._adapter import CrewAIAdapter, episode_of, is_crewai_target, resolve_crew
    from ._faultrun import FaultRun
    from ._hooks import capture, current_recorder, instrument, is_instrumented, uninstrument
    from ._llm import RecordingLLM
    from ._memory import ListMemory, Memory
    from ._recorder import CrewAIRecorder
