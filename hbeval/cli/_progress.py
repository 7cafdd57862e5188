"""Progress of a battery run on stderr: rich's progress display on a terminal, plain lines
otherwise.

The display is live only when both stdout and stderr are terminals; when either is redirected
(a log, a pipe, a test) each run writes a plain line at every tenth of its trials and at the
end, so logs stay readable and diffable. Both receive ``runner.run.ProgressUpdate`` (run_id,
done, total, failed, resumed).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, Any

__all__ = ["BatteryProgress", "LiveProgress", "demo_progress", "is_live"]


def is_live() -> bool:
    """True when stdout and stderr are both terminals (the progress display may redraw)."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def _counts(update: Any) -> str:
    resumed = f" ({update.resumed} resumed)" if update.resumed else ""
    return f"{update.failed} not passed{resumed}"


class LiveProgress:
    """rich's progress display with one bar per run, on stderr (or ``console``).

    ``update(key, label, update)`` draws run ``key``; the display starts on the first update
    and ``close()`` ends it (call it in a ``finally``: an interrupted run leaves no live
    display behind).
    """

    def __init__(self, console: Any = None) -> None:
        self._console = console
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def update(self, key: str, label: str, update: Any) -> None:
        if self._progress is None:
            self._start()
        progress = self._progress
        fields = {"counts": _counts(update)}
        if key not in self._tasks:
            self._tasks[key] = progress.add_task(
                label, total=update.total, completed=update.done, **fields
            )
        else:
            progress.update(self._tasks[key], total=update.total, completed=update.done, **fields)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = self._console if self._console is not None else Console(stderr=True)
        self._progress = Progress(
            TextColumn("[hbeval] {task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("trials"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[counts]}", markup=False),
            console=console,
        )
        self._progress.start()

    def close(self) -> None:
        """End the display (its last state stays on screen)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class BatteryProgress:
    """The ``progress`` callback of ``hbeval battery run``.

    ``live`` None picks the display for the streams (``is_live()``); ``stream`` is where plain
    lines go (stderr by default); ``console`` is the rich console of the live display.
    ``run_id`` is the run's id once the first update arrived (for the resume hint).
    """

    def __init__(
        self, *, live: bool | None = None, stream: IO[str] | None = None, console: Any = None
    ) -> None:
        self.live = is_live() if live is None else live
        self.stream = stream
        self.run_id: str | None = None
        self._display = LiveProgress(console) if self.live else None
        self._last_tenth = -1

    def __call__(self, update: Any) -> None:
        self.run_id = update.run_id
        if self._display is not None:
            self._display.update(update.run_id, f"run {update.run_id}", update)
            if update.done >= update.total:
                self._display.close()
            return
        tenth = (10 * update.done) // max(update.total, 1)
        if tenth != self._last_tenth or update.done >= update.total:
            self._last_tenth = tenth
            stream = self.stream if self.stream is not None else sys.stderr
            stream.write(
                f"[hbeval] run {update.run_id}: {update.done}/{update.total} trials, "
                f"{_counts(update)}\n"
            )

    def close(self) -> None:
        """End the live display, if any (idempotent)."""
        if self._display is not None:
            self._display.close()


class _DemoLive:
    """The demo's live display: one bar per agent."""

    def __init__(self, console: Any = None) -> None:
        self.display = LiveProgress(console)

    def __call__(self, name: str, update: Any) -> None:
        self.display.update(name, name, update)

    def close(self) -> None:
        self.display.close()


def demo_progress(*, live: bool | None = None, console: Any = None) -> Callable[[str, Any], None]:
    """The ``run_demo(progress=...)`` callback: a live bar per agent on a terminal, else the
    plain per-agent lines of ``report.terminal.demo_progress``. Has ``close()`` when live."""
    if is_live() if live is None else live:
        return _DemoLive(console)
    from ..report.terminal import demo_progress as plain

    return plain()
