"""Which adapter runs a target, and whether the target is a factory or a shared agent.

Adapters are found through the ``hbeval.adapters`` entry points: each names an ``AdapterInfo``
(``hbeval_core.contract``) saying its kind, the framework's module prefixes and where the adapter
is. An adapter is imported only when a target's class comes from its framework's modules
(checked by ``__module__`` prefix on the class and its bases) or its kind is asked for, so
detection never imports a framework, and this module names no adapter. ``register_adapter``
adds a kind at run time (a detector and a factory). The plain-callable adapter is the fallback
for anything callable.

Target kinds (``--target-kind``):

* ``factory`` -- a callable with no required arguments that returns an agent; each trial gets a
  fresh agent, so trials are isolated and may run concurrently.
* ``agent`` -- the agent itself, shared by every trial, which therefore run serially and are
  marked "not isolated".
* an adapter kind (``plain``, ``langgraph``, ...) -- choose the adapter; factory-or-agent is
  still detected.

Detection: a callable whose signature has no required positional parameter is a factory
(a class with a no-argument constructor counts); anything else is an agent.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

from hbeval_core.contract import ENTRY_POINT_GROUP, Adapter, AdapterInfo

__all__ = [
    "KIND_AGENT",
    "KIND_FACTORY",
    "LAZY_ADAPTERS",
    "MODULE_PREFIXES",
    "AdapterEntry",
    "ResolvedTarget",
    "TargetKindError",
    "adapter_kinds",
    "detect_adapter",
    "detect_target_kind",
    "discovered_adapters",
    "get_adapter",
    "register_adapter",
    "resolve_target",
]

KIND_FACTORY: Final = "factory"
KIND_AGENT: Final = "agent"
PLAIN: Final = "plain"

log = logging.getLogger("hbeval.runner")


_HINT: Final = (
    f"adapters are found through the {ENTRY_POINT_GROUP!r} entry points; if hbeval was "
    "installed before they existed, reinstall it (pip install -e . or scripts/setup-venv.sh)"
)


@lru_cache(maxsize=1)
def discovered_adapters() -> dict[str, AdapterInfo]:
    """Every adapter announced under the ``hbeval.adapters`` entry points, by kind.

    Loading an entry imports only the small module holding its ``AdapterInfo``, never the
    framework. An entry that fails to load is logged and left out.
    """
    from importlib.metadata import entry_points

    found: dict[str, AdapterInfo] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            info = ep.load()
        except Exception as exc:  # a broken third-party entry must not hide the others
            log.warning("adapter entry point %r could not be loaded: %r", ep.name, exc)
            continue
        if not isinstance(info, AdapterInfo):
            log.warning(
                "adapter entry point %r names a %s, not an AdapterInfo; ignored",
                ep.name,
                type(info).__name__,
            )
            continue
        found[info.kind] = info
    if PLAIN not in found:
        # The plain adapter's entry is missing: the installed metadata predates it.
        log.warning("no %r entry point for the plain adapter; %s", ENTRY_POINT_GROUP, _HINT)
    return found


def _framework_adapters() -> dict[str, AdapterInfo]:
    return {k: v for k, v in discovered_adapters().items() if k != PLAIN}


if TYPE_CHECKING:
    LAZY_ADAPTERS: dict[str, str]
    """Framework adapters known from the entry points: kind -> "module:attr"."""
    MODULE_PREFIXES: dict[str, tuple[str, ...]]
    """Module prefixes of each framework adapter's classes (matched on the class and its bases)."""


def __getattr__(name: str) -> Any:
    # LAZY_ADAPTERS and MODULE_PREFIXES stay importable; they are read from the entry points.
    if name == "LAZY_ADAPTERS":
        return {k: v.adapter for k, v in _framework_adapters().items()}
    if name == "MODULE_PREFIXES":
        return {k: v.module_prefixes for k, v in _framework_adapters().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TargetKindError(ValueError):
    """The target kind or adapter could not be decided; says which flag fixes it."""


Detector = Callable[[Any], bool]
AdapterFactory = Callable[[], Adapter]


@dataclass(frozen=True)
class AdapterEntry:
    """A registered adapter: its kind, how to recognise its targets, and how to make one."""

    kind: str
    detector: Detector
    factory: AdapterFactory


def _plain_factory() -> Adapter:
    # The plain adapter is a plugin like the others (hbeval_plain, always installed): the
    # runner finds it through its entry point and names no adapter module itself.
    info = discovered_adapters().get(PLAIN)
    if info is None:
        raise TargetKindError(f"the plain adapter is not installed: {_HINT}")
    return _load(PLAIN, info)


_REGISTRY: dict[str, AdapterEntry] = {}
_FALLBACK = AdapterEntry(PLAIN, callable, _plain_factory)


def register_adapter(kind: str, detector: Detector, factory: AdapterFactory) -> None:
    """Register (or replace) the adapter for ``kind``.

    ``detector(obj)`` says whether ``obj`` (the agent, or what a factory returned) belongs to
    this adapter; it must not import anything heavy. ``factory()`` returns an ``Adapter``.
    Registered adapters are tried newest first, before the lazily known ones and the plain
    fallback.
    """
    if not isinstance(kind, str) or not kind or kind in (KIND_FACTORY, KIND_AGENT):
        raise ValueError(
            f"adapter kind must be a non-empty name other than {KIND_FACTORY!r}/{KIND_AGENT!r} "
            f"(got {kind!r})"
        )
    _REGISTRY.pop(kind, None)
    _REGISTRY[kind] = AdapterEntry(kind, detector, factory)


def adapter_kinds() -> list[str]:
    """Every adapter kind known: registered, lazily known and ``plain``."""
    return sorted({*_REGISTRY, *_framework_adapters(), PLAIN})


def _module_names(obj: Any) -> list[str]:
    cls = obj if isinstance(obj, type) else type(obj)
    names = [getattr(c, "__module__", "") or "" for c in getattr(cls, "__mro__", (cls,))]
    return [n for n in names if n != "builtins"]


def _looks_like(obj: Any, prefixes: tuple[str, ...]) -> bool:
    for name in _module_names(obj):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                return True
    return False


def detect_adapter(obj: Any) -> str:
    """The adapter kind for ``obj``: registered detectors, then framework modules, then plain."""
    for entry in reversed(list(_REGISTRY.values())):
        try:
            if entry.detector(obj):
                return entry.kind
        except Exception:  # a detector's bug must not hide the other adapters
            continue
    for kind, info in _framework_adapters().items():
        if _looks_like(obj, info.module_prefixes):
            return kind
    if callable(obj):
        return PLAIN
    raise TargetKindError(
        f"cannot tell which adapter runs a {type(obj).__module__}.{type(obj).__qualname__}: "
        f"it is not callable and no adapter recognises it; pass --target-kind with one of "
        f"{', '.join(adapter_kinds())}"
    )


def get_adapter(kind: str) -> Adapter:
    """A new adapter of ``kind``, importing a framework adapter only now."""
    entry = _REGISTRY.get(kind)
    if entry is not None:
        return entry.factory()
    if kind == PLAIN:
        return _plain_factory()
    info = _framework_adapters().get(kind)
    if info is None:
        hint = "" if _framework_adapters() else f" ({_HINT})"
        raise TargetKindError(
            f"unknown adapter kind {kind!r}; known: {', '.join(adapter_kinds())}{hint}"
        )
    return _load(kind, info)


def _load(kind: str, info: AdapterInfo) -> Adapter:
    """A new adapter from the entry named by ``info``, importing its module only now."""
    module_name, _, attr = info.adapter.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        install = f"'hbeval[{info.extra}]'" if info.extra else f"the {kind} adapter"
        raise TargetKindError(
            f"the {kind} adapter ({module_name}) cannot be imported ({exc}); "
            f"install it with: pip install {install}"
        ) from exc
    # The adapter module may have registered a richer entry while importing.
    entry = _REGISTRY.get(kind)
    if entry is not None:
        return entry.factory()
    factory = getattr(module, attr)
    adapter: Adapter = factory()
    return adapter


def detect_target_kind(target: Any) -> str:
    """``"factory"`` when ``target`` is callable with no required positional argument, else ``"agent"``."""
    if not callable(target):
        return KIND_AGENT
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return KIND_AGENT
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [
        p
        for p in sig.parameters.values()
        if p.kind in kinds and p.default is inspect.Parameter.empty
    ]
    return KIND_FACTORY if not required else KIND_AGENT


@dataclass
class ResolvedTarget:
    """A target ready to run: its adapter, and how each trial gets an agent.

    ``agent()`` returns a fresh agent per call for a factory (the first call hands over the
    agent built for detection, so the factory is never called once too often) and the shared
    agent otherwise.
    """

    target: Any
    kind: str
    """``factory`` or ``agent``."""
    adapter_kind: str
    adapter: Adapter
    _probe: Any = None
    _probe_used: bool = False

    @property
    def isolated(self) -> bool:
        """Whether each trial gets its own agent."""
        return self.kind == KIND_FACTORY

    def agent(self, task: Any = None) -> Any:
        """The agent for the next trial (raises whatever the factory raises).

        An adapter with ``factory_kwargs(factory, task) -> dict`` may ask the factory for
        keyword arguments a task needs (LangGraph: a checkpointer for a task that resumes
        interrupts); the factory is then called with them.
        """
        if self.kind != KIND_FACTORY:
            return self.target
        hook = getattr(self.adapter, "factory_kwargs", None)
        extra = dict(hook(self.target, task) or {}) if task is not None and callable(hook) else {}
        if not self._probe_used:
            self._probe_used = True
            probe, self._probe = self._probe, None
            if probe is not None and not extra:
                return probe
        return self.target(**extra)


_RUNNER_CALLS: Final = ("instrument", "uninstrument", "fault_hook", "run_trial")
"""The adapter methods every run calls."""


def resolve_target(
    target: Any, *, target_kind: str | None = None, adapter: Adapter | str | None = None
) -> ResolvedTarget:
    """Decide factory-or-agent and the adapter for ``target`` (``target_kind`` overrides).

    For a factory the adapter is detected on the agent it returns, so the factory is called
    once here; that agent serves the first trial. ``adapter`` may be an adapter kind's name
    (``"langgraph"``), as ``--target-kind`` takes it.
    """
    if isinstance(adapter, str):
        adapter = get_adapter(adapter)  # an unknown name is refused, naming the known ones
    elif adapter is not None:
        missing = [m for m in _RUNNER_CALLS if not callable(getattr(adapter, m, None))]
        if missing:
            raise TargetKindError(
                f"adapter must be an hbeval adapter, an adapter kind ({', '.join(adapter_kinds())}) "
                f"or None to detect it from the target; got a {type(adapter).__name__} without "
                f"{', '.join(missing)}"
            )
    kinds = {KIND_FACTORY, KIND_AGENT}
    adapter_kind: str | None = None
    if target_kind is not None and target_kind not in kinds:
        if target_kind not in adapter_kinds():
            raise TargetKindError(
                f"--target-kind must be {KIND_FACTORY}, {KIND_AGENT} or an adapter kind "
                f"({', '.join(adapter_kinds())}); got {target_kind!r}"
            )
        adapter_kind = target_kind
        target_kind = None
    kind = target_kind or detect_target_kind(target)
    if kind == KIND_FACTORY and not callable(target):
        raise TargetKindError(
            f"--target-kind factory needs a callable target; got a {type(target).__name__}"
        )
    probe = None
    sample = target
    if kind == KIND_FACTORY:
        try:
            probe = target()
        except Exception:
            # A factory that cannot build an agent is an infrastructure failure of each trial
            # (recorded and retried there), not a reason to crash the run here.
            probe = None
        else:
            sample = probe
        if sample is probe and (not callable(probe) and adapter_kind is None and adapter is None):
            # A plain agent with only optional arguments looks like a factory; say how to fix it.
            try:
                detected = detect_adapter(probe)
            except TargetKindError:
                detected = None
            if detected is None:
                raise TargetKindError(
                    f"the target was taken for a factory (it needs no arguments) but calling "
                    f"it returned {type(probe).__name__}, not an agent; if it is the agent "
                    f"itself, pass --target-kind {KIND_AGENT}"
                )
    if adapter is not None:
        name = getattr(adapter, "name", None)
        return ResolvedTarget(target, kind, str(name or "custom"), adapter, probe)
    if adapter_kind is None:
        adapter_kind = detect_adapter(sample)
    return ResolvedTarget(target, kind, adapter_kind, get_adapter(adapter_kind), probe)
