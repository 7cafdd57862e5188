"""``Instrumentor``: process-wide capture for one adapter, installed at most once.

``instrument()`` checks the framework's version (once per process), builds or takes the
recorder, installs the adapter's hook and returns the recorder; a second call returns the one
already installed. ``uninstrument()`` undoes exactly what was installed; a second call does
nothing. An adapter supplies only how its hook goes in and comes out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Instrumentor"]

R = TypeVar("R")


class Instrumentor(Generic[R]):
    """Idempotent install and removal of one adapter's process-wide capture.

    Args:
        check_supported: Raises ``UnsupportedVersionError`` when the installed framework is
            outside the adapter's ``SUPPORTED`` range.
        install: Puts ``recorder``'s hook in; returns what ``uninstall`` needs to take it out.
        uninstall: Takes the hook out again, given the recorder and what ``install`` returned.
        check_once: Check the version once per process (a framework whose lookup is not
            cached); False checks at every ``instrument()`` that installs.
    """

    def __init__(
        self,
        check_supported: Callable[[], Any],
        install: Callable[[R], Any],
        uninstall: Callable[[R, Any], None],
        *,
        check_once: bool = True,
    ) -> None:
        self._check = check_supported
        self._install = install
        self._uninstall = uninstall
        self._lock = threading.Lock()
        self._installed: tuple[R, Any] | None = None
        self._checked = False
        self._check_once = check_once

    def ensure_supported(self, check_version: bool = True) -> None:
        """Check the framework's version once per process (a clear error when unsupported)."""
        if self._checked or not check_version:
            return
        self._check()
        self._checked = self._check_once

    @property
    def active(self) -> R | None:
        """The recorder ``instrument()`` installed, if it is in effect."""
        installed = self._installed
        return installed[0] if installed is not None else None

    def is_instrumented(self) -> bool:
        """Whether ``instrument()`` is in effect."""
        return self._installed is not None

    def instrument(self, make: Callable[[], R], *, check_version: bool = True) -> R:
        """Install capture with the recorder ``make()`` builds; idempotent (returns the one in effect)."""
        with self._lock:
            if self._installed is not None:
                return self._installed[0]
            self.ensure_supported(check_version)
            recorder = make()
            self._installed = (recorder, self._install(recorder))
            return recorder

    def uninstrument(self) -> None:
        """Remove what ``instrument()`` installed. Idempotent."""
        with self._lock:
            if self._installed is None:
                return
            recorder, state = self._installed
            self._installed = None
        self._uninstall(recorder, state)
