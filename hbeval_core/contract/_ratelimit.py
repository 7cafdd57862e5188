"""Rate limits of the model behind an agent: recognising a 429, and one limiter per run.

``rate_limit_delay(exc_or_response)`` reads the shapes a model client raises when the provider
answers HTTP 429 (Too Many Requests): an exception or response with ``status_code == 429``
(openai, anthropic, litellm, httpx's ``Response``), one whose ``.response`` has that status
(httpx's ``HTTPStatusError``, requests' ``HTTPError``), and a framework's wrapper that keeps the
provider's error as ``__cause__`` or ``__context__`` (LangChain, CrewAI, AutoGen). It returns the
seconds the provider asked to wait (``Retry-After`` in seconds or as an HTTP date, or
``retry-after-ms``), ``DEFAULT_RETRY_AFTER`` for a 429 that names no wait, and None for anything
that is not a rate limit. A 429 that hbeval planted (its response carries
``PLANTED_FAULT_HEADER``, as every error ``hbeval proxy openai`` plants does) is a fault for the
agent to handle, never a pause of the run: None.

``RateLimiter`` is shared by every trial of a run. When any trial sees a 429 the whole run
pauses: no trial starts a model call until the wait the provider asked for has passed (``hit``).
With ``rpm`` it is also a token bucket: model calls are spaced ``60 / rpm`` seconds apart across
the run (``reserve``). One pause is capped (``max_pause``): a provider asking for longer raises
``RateLimitTooLong``, which names the cap. The limiter only says how long to wait; the waiting
is the caller's (``TrialContext.wait_for_model``), so a wait is never counted as the trial's
time. A Ray run shares one limiter through a named actor with the same methods.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any, Final, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_RETRY_AFTER",
    "MAX_PAUSE",
    "PLANTED_FAULT_HEADER",
    "RateLimitTooLong",
    "RateLimiter",
    "RunLimiter",
    "note_rate_limit",
    "rate_limit_delay",
]

DEFAULT_RETRY_AFTER: Final = 1.0
"""Seconds to pause after a 429 that names no wait."""
MAX_PAUSE: Final = 120.0
"""The longest single pause a run takes for a 429 (seconds)."""
_STATUS_TOO_MANY: Final = 429
PLANTED_FAULT_HEADER: Final = "x-hbeval-fault"
"""Header on an error answer hbeval planted (its value: the fault's mode)."""
_MAX_CHAIN: Final = 16
"""How deep ``rate_limit_delay`` follows ``__cause__`` / ``__context__``."""


class RateLimitTooLong(RuntimeError):
    """The model's provider asked for a pause longer than the run's cap on one pause."""

    def __init__(self, asked: float, cap: float) -> None:
        self.asked = asked
        self.cap = cap
        super().__init__(
            f"the model's rate limit (HTTP 429) asked for a pause of {asked:g} s, over the cap "
            f"of {cap:g} s on one pause (max_pause); the run stops here: completed trials are "
            "kept, and running the same command again once the quota is back resumes it"
        )


def _header(headers: Any, name: str) -> str | None:
    """Header ``name`` of any mapping-like headers object, case-insensitively."""
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    if callable(getter):
        try:
            value = getter(name)
        except Exception:
            value = None
        if value is not None:
            return str(value)
    items = getattr(headers, "items", None)
    if callable(items):
        try:
            for key, value in items():
                if str(key).lower() == name:
                    return str(value)
        except Exception:
            return None
    return None


def _seconds(value: str | None, scale: float = 1.0) -> float | None:
    """A header's wait in seconds: a number (times ``scale``) or an HTTP date; None if unreadable."""
    if value is None:
        return None
    text = value.strip()
    try:
        number = float(text) * scale
    except ValueError:
        number = None
    if number is not None:
        return number if math.isfinite(number) and number >= 0 else None
    if scale != 1.0:
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _status(obj: Any) -> Any:
    for name in ("status_code", "status"):
        value = getattr(obj, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _retry_after(obj: Any) -> float | None:
    """The wait a 429 ``obj`` (or its response) names, if any."""
    for holder in (obj, getattr(obj, "response", None)):
        headers = getattr(holder, "headers", None)
        if headers is None:
            continue
        ms = _seconds(_header(headers, "retry-after-ms"), scale=0.001)
        if ms is not None:
            return ms
        seconds = _seconds(_header(headers, "retry-after"))
        if seconds is not None:
            return seconds
    return None


def _planted(obj: Any) -> bool:
    """The 429 ``obj`` (or its response) carries ``PLANTED_FAULT_HEADER``: hbeval planted it."""
    return any(
        _header(getattr(holder, "headers", None), PLANTED_FAULT_HEADER) is not None
        for holder in (obj, getattr(obj, "response", None))
    )


def _is_429(obj: Any) -> bool:
    if _status(obj) == _STATUS_TOO_MANY:
        return True
    response = getattr(obj, "response", None)
    if response is not None and _status(response) == _STATUS_TOO_MANY:
        return True
    # A client's rate-limit class that carries no status (some wrappers drop it).
    return isinstance(obj, BaseException) and type(obj).__name__ == "RateLimitError"


def rate_limit_delay(exc_or_response: Any) -> float | None:
    """Seconds to wait when ``exc_or_response`` is an HTTP 429 (or wraps one); None otherwise."""
    seen: set[int] = set()
    obj = exc_or_response
    for _ in range(_MAX_CHAIN):
        if obj is None or id(obj) in seen:
            return None
        seen.add(id(obj))
        try:
            if _is_429(obj):
                if _planted(obj):
                    return None
                wait = _retry_after(obj)
                return DEFAULT_RETRY_AFTER if wait is None else wait
        except Exception:  # an odd object must never break the trial's bookkeeping
            return None
        if not isinstance(obj, BaseException):
            return None
        obj = obj.__cause__ if obj.__cause__ is not None else obj.__context__
    return None


@runtime_checkable
class RunLimiter(Protocol):
    """What a trial asks of the run's limiter (local, or a Ray actor's proxy)."""

    def reserve(self) -> float:
        """Take a slot for one model call; returns the seconds to wait before making it."""

    def pause_left(self) -> float:
        """Seconds the run's current pause still lasts (0 when not paused)."""

    def hit(self, delay: float) -> float:
        """Record a 429 asking for ``delay`` seconds; pauses the run; returns the pause left."""


class RateLimiter:
    """The run's limiter in this process: a lock, the pause's end and the token bucket.

    ``now`` is the monotonic clock it reads (a seam for tests of its arithmetic).
    """

    def __init__(
        self,
        rpm: float | None = None,
        *,
        max_pause: float = MAX_PAUSE,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if rpm is not None and (
            isinstance(rpm, bool)
            or not isinstance(rpm, (int, float))
            or not math.isfinite(rpm)
            or rpm <= 0
        ):
            raise ValueError(f"rate_limit must be model calls per minute > 0 (got {rpm!r})")
        if isinstance(max_pause, bool) or not isinstance(max_pause, (int, float)) or max_pause <= 0:
            raise ValueError(f"max_pause must be seconds > 0 (got {max_pause!r})")
        self.rpm = None if rpm is None else float(rpm)
        self.max_pause = float(max_pause)
        self._now = now
        self._lock = threading.Lock()
        self._interval = 0.0 if rpm is None else 60.0 / float(rpm)
        self._next_slot = -math.inf
        self._pause_until = -math.inf
        self.hits = 0
        """429s seen by any trial of the run."""
        self.paused_seconds = 0.0
        """Seconds the run spent paused (overlapping pauses counted once)."""

    def reserve(self) -> float:
        """Take the next model-call slot; the seconds to wait (the pause, then the bucket)."""
        with self._lock:
            now = self._now()
            start = max(now, self._pause_until, self._next_slot)
            if self._interval:
                self._next_slot = start + self._interval
            return start - now

    def pause_left(self) -> float:
        """Seconds the current pause still lasts."""
        with self._lock:
            return max(0.0, self._pause_until - self._now())

    def hit(self, delay: float) -> float:
        """A 429 asked for ``delay`` seconds: pause the run that long (raises over the cap)."""
        if not math.isfinite(delay) or delay < 0:
            delay = DEFAULT_RETRY_AFTER
        with self._lock:
            self.hits += 1
            if delay > self.max_pause:
                raise RateLimitTooLong(delay, self.max_pause)
            now = self._now()
            until = now + delay
            if until > self._pause_until:
                self.paused_seconds += until - max(now, self._pause_until)
                self._pause_until = until
            return max(0.0, self._pause_until - now)

    def stats(self) -> dict[str, Any]:
        """``{"rpm", "hits", "paused_seconds"}`` for the report's ``run.rate_limit``."""
        with self._lock:
            return {
                "rpm": self.rpm,
                "hits": self.hits,
                "paused_seconds": round(self.paused_seconds, 3),
            }


def limiter_stats_used(stats: Mapping[str, Any]) -> bool:
    """Whether limiter ``stats`` belong in the report (an rpm set, or a 429 seen)."""
    return stats.get("rpm") is not None or bool(stats.get("hits"))


def note_rate_limit(ctx: Any, exc: BaseException) -> None:
    """If the agent's exception ``exc`` is a 429, tell the trial (``TrialContext``) so the runner
    pauses the run and runs the attempt again; adapters call it where the agent's error lands."""
    if ctx is None:
        return
    delay = rate_limit_delay(exc)
    if delay is not None:
        ctx.rate_limited = delay
