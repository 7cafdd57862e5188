"""Fixtures shared by several test modules."""

from __future__ import annotations

import signal

from .postgres_server import postgres_admin_url, postgres_url

__all__ = ["postgres_admin_url", "postgres_url"]

# A test run started in the background by a non-interactive shell (`cmd &`) inherits SIGINT
# ignored, and Python then installs no handler of its own. The tests that press Ctrl-C
# (signal.raise_signal) need the handler an interactive run or CI has; hbeval itself rightly
# leaves an ignored SIGINT ignored.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
