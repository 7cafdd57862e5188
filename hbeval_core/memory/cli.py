"""Moved to ``hbeval_core.cli``: ``hbeval memory`` keeps importing (and running with
``python -m hbeval_core.memory.cli``) from here."""

from __future__ import annotations

from ..cli._memory import main, memory_app, open_memory

__all__ = ["main", "memory_app", "open_memory"]

if __name__ == "__main__":
    main()
