"""Trajectory checks: did the agent make the expected tool calls, and did it break the rules?"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from ..vocab import NO_EXPECTED_CALLS, NO_STEPS
from ._registry import metric
from ._validate import check_count


class ToolCallLike(Protocol):
    """Anything with a ``tool`` name and ``args`` (contract.ExpectedCall, a tool_start event)."""

    @property
    def tool(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any] | None: ...


Call = Union[  # noqa: UP007
    ToolCallLike, tuple[str, Union[Mapping[str, Any], None]], Mapping[str, Any], str  # noqa: UP007
]
"""A tool call: an object with .tool/.args, a (tool, args) pair, a {"tool", "args"} mapping, or a
bare tool name (args None)."""

ArgsKey = tuple[str, Union[Mapping[str, Any], None]]  # noqa: UP007

ARGS_MODES = ("exact", "subset", "ignore")
"""How arguments are compared: equal, expected keys present with equal values, or not at all."""


def _as_call(item: object, where: str) -> ArgsKey:
    if isinstance(item, str):
        tool: object = item
        args: object = None
    elif isinstance(item, (tuple, list)):
        if len(item) != 2:
            raise ValueError(f"{where} must be a (tool, args) pair, got {item!r}")
        tool, args = item
    elif isinstance(item, Mapping):
        # A call as stored JSON: {"tool": ..., "args": {...}} ("name" also accepted).
        tool = item.get("tool") or item.get("name")
        args = item.get("args")
    elif hasattr(item, "tool") or hasattr(item, "name"):
        # tool_start events and ExpectedCall say .tool; a model's ToolCall says .name.
        tool = getattr(item, "tool", None) or getattr(item, "name", None)
        args = getattr(item, "args", None)
    else:
        raise ValueError(f"{where} is not a tool call: {item!r}")
    if not isinstance(tool, str) or not tool:
        raise ValueError(f"{where} has no tool name: {item!r}")
    if args is not None and not isinstance(args, Mapping):
        raise ValueError(f"{where} args must be a mapping or None, got {args!r}")
    return tool, args


def _calls(items: Sequence[Call], name: str) -> list[ArgsKey]:
    return [_as_call(item, f"{name}[{i}]") for i, item in enumerate(items)]


def _matches(expected: ArgsKey, actual: ArgsKey, mode: str) -> bool:
    if expected[0] != actual[0]:
        return False
    wanted = expected[1]
    # Expected args None means "any arguments" (ExpectedCall's default).
    if mode == "ignore" or wanted is None:
        return True
    got = actual[1] or {}
    if mode == "exact":
        return dict(got) == dict(wanted)
    return all(key in got and got[key] == value for key, value in wanted.items())


def _max_matching(expected: list[ArgsKey], actual: list[ArgsKey], mode: str) -> int:
    """Largest one-to-one pairing of expected with actual calls (augmenting paths, BFS)."""
    # Matching is a relation (wildcards, subsets), not equality, so multiset containment is a
    # bipartite matching problem rather than a Counter comparison.
    adjacent = [[j for j, a in enumerate(actual) if _matches(e, a, mode)] for e in expected]
    owner = [-1] * len(actual)  # actual index -> expected index
    partner = [-1] * len(expected)  # expected index -> actual index
    size = 0
    for start in range(len(expected)):
        came_from: dict[int, int] = {}
        queue = [start]
        free = -1
        while queue and free < 0:
            u = queue.pop(0)
            for j in adjacent[u]:
                if j in came_from:
                    continue
                came_from[j] = u
                if owner[j] < 0:
                    free = j
                    break
                queue.append(owner[j])
        if free < 0:
            continue
        j = free
        while j >= 0:
            u = came_from[j]
            previous = partner[u]
            owner[j], partner[u] = u, j
            j = previous
        size += 1
    return size


def _is_subsequence(expected: list[ArgsKey], actual: list[ArgsKey], mode: str) -> bool:
    # Greedy earliest match is optimal for subsequence tests under any per-pair predicate.
    position = 0
    for e in expected:
        while position < len(actual) and not _matches(e, actual[position], mode):
            position += 1
        if position == len(actual):
            return False
        position += 1
    return True


@dataclass(frozen=True)
class TrajectoryMatch:
    """How the actual tool calls compare with the expected ones.

    ``exact``: same calls in the same order; ``in_order``: expected is a subsequence of actual;
    ``any_order``: every expected call happened (multiset containment); ``same_calls``: the same
    multiset; ``no_extras``: every actual call was expected. ``precision`` = matched / actual
    (None without actual calls), ``recall`` = matched / expected (None without expected calls).
    """

    exact: bool
    in_order: bool
    any_order: bool
    same_calls: bool
    no_extras: bool
    precision: float | None
    recall: float | None
    matched: int
    expected_n: int
    actual_n: int
    args_mode: str
    undefined: Mapping[str, str] = field(default_factory=dict)


@metric("trajectory_match")
def trajectory_match(
    expected: Sequence[Call], actual: Sequence[Call], args_mode: str = "exact"
) -> TrajectoryMatch:
    """Compare an agent's tool calls with a task's expected calls, several ways at once.

    Calls are objects with ``.tool``/``.args``, (tool, args) pairs, {"tool", "args"} mappings or
    bare tool names. An expected call whose args are None matches any arguments. ``args_mode``:
    "exact" (equal args), "subset" (the expected keys are present with equal values) or "ignore"
    (tool names only).
    """
    if args_mode not in ARGS_MODES:
        raise ValueError(f"args_mode must be one of {ARGS_MODES}, got {args_mode!r}")
    want = _calls(expected, "expected")
    got = _calls(actual, "actual")
    matched = _max_matching(want, got, args_mode)
    undefined: dict[str, str] = {}
    if not got:
        undefined["precision"] = NO_STEPS
    if not want:
        undefined["recall"] = NO_EXPECTED_CALLS
    return TrajectoryMatch(
        exact=len(want) == len(got)
        and all(_matches(e, a, args_mode) for e, a in zip(want, got, strict=True)),
        in_order=_is_subsequence(want, got, args_mode),
        any_order=matched == len(want),
        same_calls=matched == len(want) == len(got),
        no_extras=matched == len(got),
        precision=matched / len(got) if got else None,
        recall=matched / len(want) if want else None,
        matched=matched,
        expected_n=len(want),
        actual_n=len(got),
        args_mode=args_mode,
        undefined=undefined,
    )


# Rule names: the keys of RuleViolations.counts.
RULE_FORBIDDEN_TOOL = "forbidden_tool"
RULE_REQUIRED_TOOL = "required_tool"
RULE_ORDER = "order"
RULE_CALL_BUDGET = "call_budget"
RULE_ARGUMENT_SCHEMA = "argument_schema"
RULES = (
    RULE_FORBIDDEN_TOOL,
    RULE_REQUIRED_TOOL,
    RULE_ORDER,
    RULE_CALL_BUDGET,
    RULE_ARGUMENT_SCHEMA,
)

ArgSchema = Union[  # noqa: UP007
    Mapping[str, Union[type, tuple[type, ...]]],  # noqa: UP007
    Callable[[Mapping[str, Any]], bool],
]
"""Either required argument names mapped to a type (or tuple of types), or a validator callable
returning True when the arguments are acceptable. Extra arguments are allowed. bool does not pass
for int or float, and an int passes for float (JSON numbers)."""


@dataclass(frozen=True)
class Violation:
    """One broken rule: which rule, which tool, at which call index (None when no call)."""

    rule: str
    tool: str
    index: int | None
    detail: str


@dataclass(frozen=True)
class RuleViolations:
    """Violation counts per rule (every rule listed, 0 when kept) and one detail per violation."""

    counts: Mapping[str, int]
    details: tuple[Violation, ...]

    @property
    def total(self) -> int:
        """All violations together."""
        return sum(self.counts.values())

    @property
    def violated(self) -> bool:
        """True when any rule was broken."""
        return self.total > 0


def _type_ok(value: object, expected: type | tuple[type, ...]) -> bool:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    if float in kinds and isinstance(value, int):
        return True
    return isinstance(value, kinds)


def _schema_problem(schema: ArgSchema, args: Mapping[str, Any]) -> str | None:
    if callable(schema):
        return None if schema(args) else "arguments rejected by the validator"
    for key, kind in schema.items():
        if key not in args:
            return f"missing argument {key!r}"
        if not _type_ok(args[key], kind):
            names = kind.__name__ if isinstance(kind, type) else "|".join(k.__name__ for k in kind)
            return f"argument {key!r} should be {names}, got {type(args[key]).__name__}"
    return None


@metric("rule_violations")
def rule_violations(
    calls: Sequence[Call],
    *,
    forbidden: Sequence[str] = (),
    required: Sequence[str] = (),
    order: Sequence[tuple[str, str]] = (),
    call_budget: int | None = None,
    arg_schemas: Mapping[str, ArgSchema] | None = None,
) -> RuleViolations:
    """Count how a trajectory broke a task's tool rules, rule by rule.

    - forbidden_tool: one per call of a forbidden tool;
    - required_tool: one per required tool never called;
    - order: one per pair (a, b) where b was called with no earlier call of a;
    - call_budget: one per call beyond the budget;
    - argument_schema: one per call whose arguments fail its tool's schema (see ``ArgSchema``).
    """
    trajectory = _calls(calls, "calls")
    budget = None if call_budget is None else check_count("call_budget", call_budget)
    pairs = [tuple(pair) for pair in order]
    for pair in pairs:
        if len(pair) != 2 or not all(isinstance(t, str) for t in pair):
            raise ValueError(f"order entries must be (before, after) tool pairs, got {pair!r}")
    found: list[Violation] = []

    banned = set(forbidden)
    for i, (tool, _) in enumerate(trajectory):
        if tool in banned:
            found.append(Violation(RULE_FORBIDDEN_TOOL, tool, i, f"forbidden tool {tool!r} called"))

    called = {tool for tool, _ in trajectory}
    for tool in dict.fromkeys(required):
        if tool not in called:
            found.append(
                Violation(RULE_REQUIRED_TOOL, tool, None, f"required tool {tool!r} never called")
            )

    tools = [tool for tool, _ in trajectory]
    for before, after in pairs:
        if after not in tools:
            continue
        first_after = tools.index(after)
        if before not in tools[:first_after]:
            found.append(
                Violation(RULE_ORDER, after, first_after, f"{after!r} called before any {before!r}")
            )

    if budget is not None:
        for i in range(budget, len(trajectory)):
            found.append(
                Violation(
                    RULE_CALL_BUDGET, trajectory[i][0], i, f"call {i + 1} exceeds budget {budget}"
                )
            )

    for i, (tool, args) in enumerate(trajectory):
        schema = (arg_schemas or {}).get(tool)
        if schema is None:
            continue
        problem = _schema_problem(schema, args or {})
        if problem is not None:
            found.append(Violation(RULE_ARGUMENT_SCHEMA, tool, i, problem))

    counts = dict.fromkeys(RULES, 0)
    for violation in found:
        counts[violation.rule] += 1
    return RuleViolations(counts, tuple(found))
