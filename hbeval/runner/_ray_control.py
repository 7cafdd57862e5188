"""The run's shared rate limiter on a Ray cluster: one named actor that every worker consults.

The driver starts the actor (``start_limiter``) on its own node before it submits a trial, and
stops it at the end. Each worker reaches it by name through a :class:`RayLimiter`, which has the
``RunLimiter`` methods of the local ``RateLimiter``: ``reserve`` (a slot for one model call),
``pause_left`` and ``hit`` (a 429 pauses every worker). The actor keeps the only clock that
matters (its node's monotonic clock) and answers in seconds to wait, so the nodes' clocks
need not agree. A worker waits on its own side; the actor never blocks.
"""

from __future__ import annotations

from typing import Any

from hbeval_core.contract import RateLimiter, RateLimitTooLong

__all__ = ["LimiterActor", "RayLimiter", "start_limiter"]


class LimiterActor:
    """The body of the limiter actor: a ``RateLimiter`` behind Ray method calls."""

    def __init__(self, rpm: float | None, max_pause: float) -> None:
        self.limiter = RateLimiter(rpm, max_pause=max_pause)

    def reserve(self) -> float:
        return self.limiter.reserve()

    def pause_left(self) -> float:
        return self.limiter.pause_left()

    def hit(self, delay: float) -> tuple[float, float | None]:
        """``(pause left, None)``, or ``(asked, cap)`` when the pause asked is over the cap."""
        try:
            return self.limiter.hit(delay), None
        except RateLimitTooLong as exc:
            return exc.asked, exc.cap

    def stats(self) -> dict[str, Any]:
        return self.limiter.stats()


class RayLimiter:
    """A worker's handle on the run's limiter actor, found by name on first use (picklable)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._actor: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.name = state["name"]
        self._actor = None

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        if self._actor is None:
            self._actor = ray.get_actor(self.name)
        return ray.get(getattr(self._actor, method).remote(*args))

    def reserve(self) -> float:
        """Seconds to wait before this model call (the run's pause, then its rate)."""
        return float(self._call("reserve"))

    def pause_left(self) -> float:
        """Seconds the run's pause still lasts."""
        return float(self._call("pause_left"))

    def hit(self, delay: float) -> float:
        """A 429 asked for ``delay`` seconds: pause every worker (raises over the cap)."""
        left, cap = self._call("hit", delay)
        if cap is not None:
            raise RateLimitTooLong(left, cap)
        return float(left)


def start_limiter(ray: Any, name: str, rpm: float | None, max_pause: float) -> Any:
    """Start the run's limiter actor as ``name``, pinned to this (the driver's) node."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node = ray.get_runtime_context().get_node_id()
    actor_class = ray.remote(num_cpus=0, max_restarts=0)(LimiterActor)
    actor = actor_class.options(
        name=name,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
    ).remote(rpm, max_pause)
    ray.get(actor.pause_left.remote())  # started before any trial consults it
    return actor
