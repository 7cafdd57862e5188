"""Live HB-Eval metrics of long-running agents, exported for Prometheus.

Nothing runs on the agent's hot path: the exporter reads each tracked agent's ``Monitor`` (and
the new tool events of its recorder, for latencies) when Prometheus scrapes, so an agent that is
never scraped pays nothing. Series (all labelled by ``agent``; never by tool or argument):

* ``hbeval_live_metric{agent, metric}``: PEI, FRR, IRS and TI of the current run. An undefined
  metric has no sample here; ``hbeval_metric_undefined{agent, metric, reason}`` is 1 instead.
  An undefined metric is never exported as 0.
* ``hbeval_steps_total``, ``hbeval_faults_total`` (steps that met a fault),
  ``hbeval_breaches_total`` (steps below a floor), ``hbeval_halts_total`` (runs Safe-Halted).
* ``hbeval_tool_latency_seconds``: histogram of tool-call latencies (``tool_end`` and
  ``tool_error`` events that carry one).
* ``hbeval_live_agents_dropped_total``: ``track`` calls refused because ``max_agents`` distinct
  agent ids were already exported (labels stay bounded).
* ``hbeval_live_source_failures_total{agent}``: scrapes at which an agent's source raised. Its
  samples are left out of those scrapes; every other agent is still served (HTTP 200).

Label values are made safe for the text format: a lone surrogate in an agent id or a reason
becomes U+FFFD.

``prometheus-client`` (extra ``[prometheus]``) is imported only when metrics are collected or
served.
"""

from __future__ import annotations

import logging
import threading
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from hbeval_core.vocab import FRR, IRS, PEI, TI

__all__ = [
    "DEFAULT_LATENCY_BUCKETS",
    "DEFAULT_MAX_AGENTS",
    "LIVE_GAUGE_METRICS",
    "LiveMetrics",
    "serve_metrics",
]

log = logging.getLogger("hbeval.live")

LIVE_GAUGE_METRICS: Final = (PEI, FRR, IRS, TI)
"""The metrics exported per agent; CSI needs several runs and is never live."""

DEFAULT_MAX_AGENTS: Final = 100
"""Most distinct agent ids one exporter labels series with."""

DEFAULT_LATENCY_BUCKETS: Final = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
"""Upper bounds (seconds) of the tool-latency histogram, before +Inf."""

_MAX_AGENT_ID = 128
_LATENCY_KINDS = frozenset({"tool_end", "tool_error"})
_COUNTS = ("steps", "faulted_steps", "breaches", "halts")


def _label(text: str) -> str:
    """A label value Prometheus's text format can carry: each lone surrogate (which UTF-8
    cannot encode) becomes U+FFFD."""
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def _missing_client() -> ImportError:
    return ImportError(
        "live metrics need prometheus-client: pip install -e '.[prometheus]' from a clone "
        "(or pip install 'hbeval[prometheus]' once published)"
    )


def _monitor_of(source: Any) -> Any:
    """The ``Monitor`` behind a source: a Monitor, or a recorder/handler with ``.monitor``."""
    monitor = getattr(source, "monitor", source)
    if not callable(getattr(monitor, "snapshot", None)):
        raise TypeError(
            "source must be an hbeval Monitor or a recorder with a .monitor (the handler "
            f"instrument() returns, a CrewAI or AutoGen recorder); got {type(source).__name__}"
        )
    return monitor


@dataclass
class _Agent:
    """What one agent id exports: its live source, and the totals of the sources it retired."""

    source: Any
    monitor: Any
    retired: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    events_read: int = 0
    bucket_counts: list[int] = field(default_factory=list)
    latency_sum: float = 0.0
    latency_count: int = 0


class LiveMetrics:
    """A Prometheus collector of the live metrics of the agents it tracks.

    ``track(source, agent_id)`` exports a Monitor (or the recorder ``instrument()`` returns)
    under an agent id. Register it with any ``CollectorRegistry`` (``serve_metrics`` does), or
    call :meth:`collect` directly. Thread-safe.
    """

    def __init__(
        self,
        *,
        max_agents: int = DEFAULT_MAX_AGENTS,
        latency_buckets: Sequence[float] = DEFAULT_LATENCY_BUCKETS,
    ) -> None:
        if isinstance(max_agents, bool) or not isinstance(max_agents, int) or max_agents < 1:
            raise ValueError(f"max_agents must be a positive integer, got {max_agents!r}")
        bounds = [float(b) for b in latency_buckets]
        if not bounds or bounds != sorted(set(bounds)) or bounds[0] <= 0:
            raise ValueError(
                "latency_buckets must be increasing positive seconds, e.g. (0.01, 0.1, 1.0)"
            )
        self.max_agents = max_agents
        self.latency_buckets = tuple(bounds)
        self._agents: dict[str, _Agent] = {}
        self._dropped = 0
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()
        self.server: Any = None
        """The HTTP server when started by :func:`serve_metrics`, else None."""
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ tracking
    def track(self, source: Any, agent_id: str = "default") -> bool:
        """Export ``source``'s live metrics as ``agent_id``; True when it is exported.

        ``source`` is a ``Monitor`` or anything with one as ``.monitor`` (the handler of
        ``hbeval_langgraph.instrument()``, a CrewAI or AutoGen recorder); with an ``events``
        list its tool latencies are exported too. Tracking a new source under an agent id
        already tracked makes it that agent's current run: the gauges follow it, and the
        counters keep the previous source's totals. A new agent id beyond ``max_agents`` is
        not exported (False, a warning, and ``hbeval_live_agents_dropped_total`` counts it).
        """
        if not isinstance(agent_id, str) or not agent_id.strip() or len(agent_id) > _MAX_AGENT_ID:
            raise ValueError(
                f"agent_id must be a non-empty string of at most {_MAX_AGENT_ID} characters, "
                f"got {agent_id!r}"
            )
        monitor = _monitor_of(source)
        with self._lock:
            agent = self._agents.get(agent_id)
            if agent is None:
                if len(self._agents) >= self.max_agents:
                    self._dropped += 1
                    if self._dropped == 1:
                        log.warning(
                            "hbeval live metrics: already exporting %d agent ids (max_agents); "
                            "agent %r and any further new ids are not exported",
                            self.max_agents,
                            agent_id,
                        )
                    return False
                self._agents[agent_id] = _Agent(
                    source, monitor, bucket_counts=[0] * (len(self.latency_buckets) + 1)
                )
                return True
            if agent.source is not source:
                self._read_latencies(agent)
                counts = self._counts(agent.monitor.snapshot())
                for name in _COUNTS:
                    agent.retired[name] += counts[name]
                agent.source, agent.monitor, agent.events_read = source, monitor, 0
            return True

    def untrack(self, agent_id: str) -> None:
        """Stop exporting an agent id (its series disappear from the next scrape)."""
        with self._lock:
            self._agents.pop(agent_id, None)

    @property
    def agent_ids(self) -> list[str]:
        """The agent ids exported, in the order they were first tracked."""
        with self._lock:
            return list(self._agents)

    @staticmethod
    def _counts(snap: Mapping[str, Any]) -> dict[str, int]:
        return {
            "steps": int(snap["steps"]),
            "faulted_steps": int(snap["faulted_steps"]),
            "breaches": int(snap["breaches"]),
            "halts": 1 if snap["halted"] else 0,
        }

    def _read_latencies(self, agent: _Agent) -> None:
        """Fold the source's tool events recorded since the last read into the histogram."""
        events = getattr(agent.source, "events", None)
        if not isinstance(events, Sequence) or isinstance(events, (str, bytes)):
            return
        if len(events) < agent.events_read:  # the recorder's list was replaced
            agent.events_read = 0
        new = events[agent.events_read :]
        agent.events_read += len(new)
        bounds = self.latency_buckets
        for ev in new:
            if getattr(ev, "kind", None) not in _LATENCY_KINDS:
                continue
            ms = getattr(ev, "latency_ms", None)
            if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not ms >= 0:
                continue
            seconds = ms / 1000.0
            agent.bucket_counts[bisect_left(bounds, seconds)] += 1
            agent.latency_sum += seconds
            agent.latency_count += 1

    # ------------------------------------------------------------------ collecting
    def describe(self) -> list[Any]:
        """No fixed descriptions: the registry then never collects at registration time."""
        return []

    def collect(self) -> Iterator[Any]:
        """Metric families for one scrape (the ``prometheus_client`` collector protocol)."""
        try:
            from prometheus_client.core import (
                CounterMetricFamily,
                GaugeMetricFamily,
                HistogramMetricFamily,
            )
        except ImportError:
            raise _missing_client() from None

        value = GaugeMetricFamily(
            "hbeval_live_metric",
            "Live HB-Eval metric of the agent's current run (no sample when undefined).",
            labels=["agent", "metric"],
        )
        undefined = GaugeMetricFamily(
            "hbeval_metric_undefined",
            "1 when the metric is undefined, with the reason; such a metric has no value.",
            labels=["agent", "metric", "reason"],
        )
        counters = {
            "steps": CounterMetricFamily(
                "hbeval_steps", "Steps (tool outcomes) recorded.", labels=["agent"]
            ),
            "faulted_steps": CounterMetricFamily(
                "hbeval_faults", "Steps that met a fault (error or injected).", labels=["agent"]
            ),
            "breaches": CounterMetricFamily(
                "hbeval_breaches", "Steps on which a metric was below its floor.", labels=["agent"]
            ),
            "halts": CounterMetricFamily(
                "hbeval_halts", "Runs the monitor brought to a Safe Halt.", labels=["agent"]
            ),
        }
        latency = HistogramMetricFamily(
            "hbeval_tool_latency_seconds", "Tool-call latency.", labels=["agent"]
        )
        dropped = CounterMetricFamily(
            "hbeval_live_agents_dropped",
            "track() calls refused because max_agents agent ids were already exported.",
        )
        failures = CounterMetricFamily(
            "hbeval_live_source_failures",
            "Scrapes at which the agent's source raised; its samples were left out of them.",
            labels=["agent"],
        )
        with self._lock:
            for agent_id, agent in self._agents.items():
                label = _label(agent_id)
                try:
                    samples = self._samples(agent)
                except Exception as exc:  # one broken source never takes the others down
                    self._failures[agent_id] = self._failures.get(agent_id, 0) + 1
                    if self._failures[agent_id] == 1:
                        log.warning(
                            "hbeval live metrics: the source of agent %r raised %s: %s; its "
                            "samples are left out while it fails",
                            label,
                            type(exc).__name__,
                            exc,
                        )
                else:
                    for metric, v, reason in samples["gauges"]:
                        if v is None:
                            undefined.add_metric([label, metric, _label(reason)], 1.0)
                        else:
                            value.add_metric([label, metric], v)
                    for name, family in counters.items():
                        family.add_metric([label], samples["counts"][name])
                    latency.add_metric([label], samples["buckets"], agent.latency_sum)
                if agent_id in self._failures:
                    failures.add_metric([label], float(self._failures[agent_id]))
            dropped.add_metric([], float(self._dropped))
        yield value
        yield undefined
        yield from counters.values()
        yield latency
        yield dropped
        yield failures

    def _samples(self, agent: _Agent) -> dict[str, Any]:
        """One agent's samples, all read before any is added (a source that raises adds none)."""
        snap = agent.monitor.snapshot()
        gauges: list[tuple[str, float | None, str]] = []
        for metric in LIVE_GAUGE_METRICS:
            v = snap["metrics"].get(metric)
            if v is None:
                gauges.append((metric, None, str(snap["undefined"].get(metric, "not_measured"))))
            else:
                gauges.append((metric, float(v), ""))
        counts = self._counts(snap)
        totals = {name: float(counts[name] + agent.retired[name]) for name in _COUNTS}
        self._read_latencies(agent)
        cumulative, buckets = 0, []
        for bound, n in zip(
            (*self.latency_buckets, float("inf")), agent.bucket_counts, strict=True
        ):
            cumulative += n
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        return {"gauges": gauges, "counts": totals, "buckets": buckets}

    # ------------------------------------------------------------------ serving
    @property
    def port(self) -> int | None:
        """The port :func:`serve_metrics` bound (useful with port 0), else None."""
        return None if self.server is None else int(self.server.server_port)

    def close(self) -> None:
        """Stop the HTTP server started by :func:`serve_metrics`. Idempotent."""
        server, self.server = self.server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LiveMetrics:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_metrics(
    port: int = 9464,
    source: Any = None,
    *,
    agent_id: str = "default",
    addr: str = "127.0.0.1",
    max_agents: int = DEFAULT_MAX_AGENTS,
    registry: Any = None,
) -> LiveMetrics:
    """Serve live metrics at ``http://127.0.0.1:PORT/metrics`` from a background thread.

    ``source`` (a Monitor or a recorder with ``.monitor``) is tracked as ``agent_id`` right
    away; more agents with :meth:`LiveMetrics.track`. ``port`` 0 picks a free port (see
    ``.port``). Binds 127.0.0.1 unless ``addr`` says otherwise. ``registry`` is a
    ``prometheus_client.CollectorRegistry`` (a new one by default, so the process's other
    metrics are not mixed in). Stop with ``.close()``.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer from 0 to 65535, got {port!r}")
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError:
        raise _missing_client() from None
    live = LiveMetrics(max_agents=max_agents)
    if source is not None:
        live.track(source, agent_id)
    target = registry if registry is not None else CollectorRegistry()
    target.register(live)
    live.server, live._thread = start_http_server(port, addr=addr, registry=target)
    return live
