"""The tool boundary every adapter shares: who injects a call, and where it is reported.

A battery trial publishes its ``FaultInjector`` on the ``TrialContext``. Framework hooks
(LangChain's ``BaseTool`` run path, AutoGen's tools and workbenches, CrewAI's tool hooks) and the
``faultable`` decorator all consult it at the moment a tool runs, so faults reach a tool however
the agent calls it: through a prebuilt tool node, from its own node function, or by hand.

Two rules keep that exact:

* **Once per call.** Boundaries nest (a ToolNode wrapper runs ``BaseTool.run``, a workbench runs
  ``FunctionTool.run_json``, a ``faultable`` function may be called inside a LangChain tool). The
  outermost boundary that injects marks the call with ``faulted_call()``; every boundary inside
  it sees ``inside_faulted_call()`` and lets the call through untouched.
* **Reported where the trace is.** A boundary that runs a call itself reports it as one
  ``CallReport`` (start, the fault's receipt, the end) to the reporter the adapter published for
  the trial with ``reporting_to``, so the receipt lands in the same trace as the agent's model
  calls. A reporter with a ``start`` method is told of the call before the tool runs
  (``report_start``), so a call that never returns still shows in the trace.

Outside a battery trial (or on a nominal scenario, whose trial has no injector) nothing changes.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, overload

from ..events import FaultInjected
from .ledger import declare_irreversible
from .runtime import FaultInjector, InjectedCrash

__all__ = [
    "BOUNDARY_SCOPE",
    "CallReport",
    "CallReporter",
    "ToolCallError",
    "acall_through",
    "active_injector",
    "call_through",
    "current_reporter",
    "enter_faulted_call",
    "exit_faulted_call",
    "faultable",
    "faulted_call",
    "inside_faulted_call",
    "next_call_id",
    "report_start",
    "reporting_to",
    "set_process_scope",
]

F = TypeVar("F", bound=Callable[..., Any])


class ToolCallError(Exception):
    """A tool call failed inside a trial: an injected fault or the tool's own exception.

    ``str(err)`` is the error text the agent should read. ``injected`` tells whether hbeval
    caused it; a real exception is chained as ``__cause__``.
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str,
        call_id: str,
        error_type: str | None = None,
        injected: bool = False,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.call_id = call_id
        self.error_type = error_type
        self.injected = injected
        self.http_status = http_status


@dataclass
class CallReport:
    """One whole tool call a boundary ran, for the trial's trace.

    Becomes ``tool_start``, the ``fault_injected`` receipt (when ``fault`` is set) and then
    ``tool_error`` (``error`` set: the call raised out of the tool) or ``tool_end``.
    """

    call_id: str
    tool: str
    args: dict[str, Any]
    fault: FaultInjected | None = None
    result: Any = None
    status: str = "ok"
    """"ok", or "error" when the agent receives an error result."""
    error: str | None = None
    error_type: str | None = None
    latency_ms: float | None = None
    synthetic: bool = False
    """True when the real tool never ran (an error mode answered for it)."""
    attrs: dict[str, Any] = field(default_factory=dict)
    opened: Any = None
    """What the reporter's ``start`` returned for this call (None: its start is not recorded
    yet, so the report records the whole call)."""


class CallReporter(Protocol):
    """Where a boundary reports the calls it ran (the adapter's recorder for the trial).

    A reporter may also have ``start(report) -> opened``: the boundary then calls it before the
    tool runs, with the call's ids, arguments, ``synthetic`` and the fault's receipt when it is
    known in advance (``report_start``); the final report carries what ``start`` returned as
    ``opened``, and the reporter records the rest of the call (the receipt unless ``start``
    had it, then the end).
    """

    def __call__(self, report: CallReport) -> None: ...


def report_start(reporter: CallReporter | None, report: CallReport) -> Any:
    """Record the start of ``report``'s call with ``reporter``, if it records starts.

    Returns what the reporter's ``start`` returned (pass it on as the final report's
    ``opened``), or None when there is no reporter or it records whole calls only.
    """
    start = getattr(reporter, "start", None)
    return None if start is None else start(report)


class _Start:
    """``FaultInjector.run_call``'s ``before_call`` for a boundary: reports the call's start."""

    __slots__ = ("args", "call_id", "name", "opened", "reporter")

    def __init__(
        self, reporter: CallReporter, name: str, call_id: str, args: dict[str, Any]
    ) -> None:
        self.reporter, self.name, self.call_id, self.args = reporter, name, call_id, args
        self.opened: Any = None

    def __call__(self, synthetic: bool, fault: FaultInjected | None) -> None:
        self.opened = report_start(
            self.reporter,
            CallReport(
                call_id=self.call_id,
                tool=self.name,
                args=self.args,
                fault=fault,
                synthetic=synthetic,
            ),
        )


def _start_of(
    reporter: CallReporter | None, name: str, call_id: str, args: dict[str, Any]
) -> _Start | None:
    """The ``before_call`` reporting this call's start, or None when nothing records starts."""
    if reporter is None or getattr(reporter, "start", None) is None:
        return None
    return _Start(reporter, name, call_id, args)


_GUARD: ContextVar[bool] = ContextVar("hbeval_faulted_call", default=False)
_REPORTER: ContextVar[CallReporter | None] = ContextVar("hbeval_call_reporter", default=None)


def inside_faulted_call() -> bool:
    """Whether an outer boundary already runs this call under the injector."""
    return _GUARD.get()


@contextmanager
def faulted_call() -> Iterator[None]:
    """Mark the block as one call under injection: boundaries inside it pass through."""
    token = _GUARD.set(True)
    try:
        yield
    finally:
        _GUARD.reset(token)


def enter_faulted_call() -> Token[bool]:
    """Start a call under injection that a framework opens and closes in two hooks.

    Boundaries inside it pass through until ``exit_faulted_call`` gets the returned token
    (the ``faulted_call()`` block, split for pre/post tool hooks).
    """
    return _GUARD.set(True)


def exit_faulted_call(token: Token[bool]) -> None:
    """End the call ``enter_faulted_call`` started (a hook in another context just clears it)."""
    try:
        _GUARD.reset(token)
    except ValueError:
        # The post hook ran in a copy of the context the pre hook set the flag in.
        _GUARD.set(False)


@contextmanager
def reporting_to(reporter: CallReporter | None) -> Iterator[None]:
    """Publish ``reporter`` as where boundaries report calls in this context, for the block."""
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def current_reporter() -> CallReporter | None:
    """The reporter published for the trial running in this context, if any."""
    return _REPORTER.get()


def active_injector(preferred: FaultInjector | None = None) -> FaultInjector | None:
    """The injector a boundary should consult now, or None to run the call untouched.

    ``preferred`` (an adapter's own) wins; otherwise the current battery trial's. None when
    an outer boundary already handles the call, or when the injector has nothing to inject.
    """
    if _GUARD.get():
        return None
    injector = preferred
    if injector is None:
        from ..contract import current_trial

        trial = current_trial()
        injector = trial.injector if trial is not None else None
    if injector is None or not injector.enabled or injector.plan is None:
        return None
    return injector


_counters: weakref.WeakKeyDictionary[FaultInjector, Iterator[int]] = weakref.WeakKeyDictionary()
_counter_lock = threading.Lock()


def next_call_id(injector: FaultInjector, tool: str) -> str:
    """A call id unique within ``injector``'s trial and stable across reruns: ``<tool>#<n>``."""
    with _counter_lock:
        counter = _counters.get(injector)
        if counter is None:
            counter = _counters[injector] = itertools.count(1)
        return f"{tool}#{next(counter)}"


BOUNDARY_SCOPE: ContextVar[Any] = ContextVar("hbeval_boundary_scope", default=None)
"""A recorder that takes every boundary call in this context (``call_tool`` / ``acall_tool``).

The plain adapter's trial scope sets it, so ``faultable`` tools are traced and injected by the
trial itself; None elsewhere, where a boundary meets the active injector directly.
"""

_PROCESS_SCOPE: list[Any] = [None]
"""A recorder for boundary calls outside any trial or scope (``set_process_scope``)."""


def set_process_scope(scope: Any) -> Any:
    """Record boundary calls made outside every trial and scope into ``scope`` (None: stop).

    Returns the scope it replaces. The plain adapter's ``instrument()`` uses it; a trial, a
    scope or an active injector always takes precedence.
    """
    previous = _PROCESS_SCOPE[0]
    _PROCESS_SCOPE[0] = scope
    return previous


def _check_boundary() -> None:
    """Budgets and timeouts of the battery run apply at every tool boundary."""
    from ..contract import current_trial

    trial = current_trial()
    if trial is not None:
        trial.check_tool_boundary()


def _receipt(injector: FaultInjector, call_id: str, before: int) -> FaultInjected | None:
    mine = [e for e in list(injector.events) if e.call_id == call_id]
    return mine[-1] if len(mine) > before else None


def _outcome_result(
    reporter: CallReporter | None,
    name: str,
    call_id: str,
    args: dict[str, Any],
    outcome: Any,
    latency: float,
    start: _Start | None,
) -> Any:
    """Report a finished call and hand back what the caller receives (or raise its error)."""
    failed = outcome.error is not None
    if reporter is not None:
        reporter(
            CallReport(
                call_id=call_id,
                tool=name,
                args=args,
                fault=outcome.fault,
                result=outcome.error if failed else outcome.result,
                status="error" if failed else "ok",
                latency_ms=latency,
                synthetic=not outcome.called_real,
                opened=start.opened if start is not None else None,
            )
        )
    if failed:
        raise ToolCallError(
            outcome.error,
            tool=name,
            call_id=call_id,
            error_type=outcome.error_type,
            injected=outcome.fault is not None,
            http_status=outcome.http_status,
        )
    return outcome.result


def _raised(
    reporter: CallReporter | None,
    name: str,
    call_id: str,
    args: dict[str, Any],
    injector: FaultInjector,
    before: int,
    exc: BaseException,
    latency: float,
    start: _Start | None,
) -> None:
    if reporter is None:
        return
    fault = exc.fault if isinstance(exc, InjectedCrash) else _receipt(injector, call_id, before)
    reporter(
        CallReport(
            call_id=call_id,
            tool=name,
            args=args,
            fault=fault,
            error=f"{type(exc).__name__}: {exc}",
            error_type=type(exc).__name__,
            latency_ms=latency,
            synthetic=isinstance(exc, InjectedCrash),
            opened=start.opened if start is not None else None,
        )
    )


def call_through(
    injector: FaultInjector,
    name: str,
    arguments: dict[str, Any],
    call_id: str,
    real: Callable[[], Any],
    reporter: CallReporter | None,
) -> Any:
    """Run one call under ``injector`` as a tool boundary, and report it to ``reporter``.

    Returns the (possibly spoiled) result; an error mode raises ``ToolCallError`` with the text
    the agent should read; the tool's own exceptions and ``InjectedCrash`` propagate. Boundaries
    inside ``real`` pass the call through.
    """
    before = _count(injector, call_id)
    start = _start_of(reporter, name, call_id, arguments)
    t0 = time.perf_counter()
    try:
        with faulted_call():
            outcome = injector.run_call(name, arguments, call_id, real, before_call=start)
    except Exception as exc:
        _raised(reporter, name, call_id, arguments, injector, before, exc, _since(t0), start)
        raise
    return _outcome_result(reporter, name, call_id, arguments, outcome, _since(t0), start)


async def acall_through(
    injector: FaultInjector,
    name: str,
    arguments: dict[str, Any],
    call_id: str,
    real: Callable[[], Awaitable[Any]],
    reporter: CallReporter | None,
) -> Any:
    """Async twin of ``call_through``."""
    before = _count(injector, call_id)
    start = _start_of(reporter, name, call_id, arguments)
    t0 = time.perf_counter()
    try:
        with faulted_call():
            outcome = await injector.arun_call(name, arguments, call_id, real, before_call=start)
    except Exception as exc:
        _raised(reporter, name, call_id, arguments, injector, before, exc, _since(t0), start)
        raise
    return _outcome_result(reporter, name, call_id, arguments, outcome, _since(t0), start)


def _since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def _count(injector: FaultInjector, call_id: str) -> int:
    return sum(1 for e in list(injector.events) if e.call_id == call_id)


def _argument_reader(func: Any) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """How a call's arguments are recorded: by parameter name (``self``/``cls`` left out), or
    as ``{"args": [...], **kwargs}`` when they do not bind to the signature."""
    try:
        sig: inspect.Signature | None = inspect.signature(func)
    except (TypeError, ValueError):
        sig = None
    params = list(sig.parameters.values()) if sig is not None else []
    skip_first = bool(params) and params[0].name in ("self", "cls")

    def arguments_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if sig is None or not args or (skip_first and len(args) == 1):
            return dict(kwargs)
        try:
            bound = sig.bind_partial(*args, **kwargs).arguments
        except TypeError:
            return {"args": list(args), **kwargs}
        if skip_first:
            bound.pop(params[0].name, None)
        return dict(bound)

    return arguments_of


@overload
def faultable(fn: F, /) -> F: ...
@overload
def faultable(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    irreversible: bool = False,
    idempotency_key: str | None = None,
) -> Callable[[F], F]: ...
def faultable(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    irreversible: bool = False,
    idempotency_key: str | None = None,
) -> F | Callable[[F], F]:
    """Make any function (sync or async) a tool boundary the battery can fault.

    Use as ``@faultable`` or ``@faultable(name="lookup_order")`` on tools a framework never
    sees, or wrap one by hand: ``lookup = faultable(client.lookup, name="lookup_order")``.

    Outside a battery trial, on a nominal scenario, or inside a call another boundary already
    injects into, the function is simply called. Inside a faulted trial each call meets the
    trial's fault plan: an error mode (timeout, 5xx, connection refused, intermittent, lost
    result) raises ``ToolCallError`` whose text is what the agent should read; a mode that
    spoils a result returns the spoiled result; ``crash`` raises ``InjectedCrash``. The call and
    its receipt are recorded in the trial's trace by the adapter running the trial (with a plain
    agent, exactly as ``hbeval_plain.tool`` does).

    ``irreversible=True`` marks the tool as one whose effect a retry cannot take back (a refund,
    a payment): scoring counts its executions per trial and a second execution of the same
    effect as a duplicate side effect (``hbeval_core.faults.ledger``). ``idempotency_key``
    names the argument that alone identifies one effect; it must be one of the function's
    parameters.
    """
    if idempotency_key is not None and not irreversible:
        raise ValueError(
            "faultable: idempotency_key applies to irreversible tools; pass irreversible=True "
            f"with idempotency_key={idempotency_key!r}"
        )

    def decorate(func: F) -> F:
        tool_name = name or getattr(func, "__name__", None) or type(func).__name__
        if irreversible:
            _check_key_parameter(func, tool_name, idempotency_key)
            declare_irreversible(tool_name, idempotency_key=idempotency_key)
        if inspect.iscoroutinefunction(func):
            return _async_boundary(func, tool_name)  # type: ignore[return-value]
        return _sync_boundary(func, tool_name)  # type: ignore[return-value]

    if fn is not None:
        return decorate(fn)
    return decorate


def _check_key_parameter(func: Any, tool_name: str, key: str | None) -> None:
    """An idempotency key must be an argument the tool takes (unless it takes ``**kwargs``)."""
    if key is None:
        return
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return
    if key in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    raise ValueError(
        f"faultable: idempotency_key {key!r} is not a parameter of tool {tool_name!r} "
        f"(its parameters: {', '.join(params) or 'none'}); name the argument that carries the key"
    )


def _route() -> tuple[Any, FaultInjector | None]:
    """Who takes a boundary call: a recording scope, the active injector, or nobody (None, None).

    A scope set for this context (a plain agent's trial) comes first; the process-wide one
    (``set_process_scope``) only when no trial injects here.
    """
    scope = BOUNDARY_SCOPE.get()
    if scope is not None:
        return scope, None
    injector = active_injector()
    if injector is None:
        return _PROCESS_SCOPE[0], None
    return None, injector


def _sync_boundary(func: Callable[..., Any], tool_name: str) -> Callable[..., Any]:
    arguments_of = _argument_reader(func)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _GUARD.get():
            return func(*args, **kwargs)
        scope, injector = _route()
        if scope is not None:
            # A plain agent's trial: traced and injected as ``@tool`` does, faults or not.
            return scope.call_tool(tool_name, func, args, kwargs, arguments_of(args, kwargs))
        if injector is None:
            return func(*args, **kwargs)
        _check_boundary()
        return call_through(
            injector,
            tool_name,
            arguments_of(args, kwargs),
            next_call_id(injector, tool_name),
            lambda: func(*args, **kwargs),
            _REPORTER.get(),
        )

    wrapper.hbeval_tool_name = tool_name  # type: ignore[attr-defined]
    return wrapper


def _async_boundary(func: Callable[..., Any], tool_name: str) -> Callable[..., Any]:
    arguments_of = _argument_reader(func)

    @functools.wraps(func)
    async def awrapper(*args: Any, **kwargs: Any) -> Any:
        if _GUARD.get():
            return await func(*args, **kwargs)
        scope, injector = _route()
        if scope is not None:
            return await scope.acall_tool(tool_name, func, args, kwargs, arguments_of(args, kwargs))
        if injector is None:
            return await func(*args, **kwargs)
        _check_boundary()

        async def real() -> Any:
            return await func(*args, **kwargs)

        return await acall_through(
            injector,
            tool_name,
            arguments_of(args, kwargs),
            next_call_id(injector, tool_name),
            real,
            _REPORTER.get(),
        )

    awrapper.hbeval_tool_name = tool_name  # type: ignore[attr-defined]
    return awrapper
