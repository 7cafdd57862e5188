"""``python -m hbeval.cli``: the same as the ``hbeval`` command."""

from __future__ import annotations

from ._app import main

if __name__ == "__main__":
    main()
