"""House rules over the shipped code (``hbeval_core/``, ``hbeval/`` and ``adapters/``): no file over 800 lines,
and no function over 80 lines unless a ``# Long because: ...`` comment says why.

The comment may stand on the lines just above the ``def`` (or its decorators), on the ``def``
line, or at the top of the body (after the docstring). A function's length counts from its
first decorator to its last line, signature and docstring included.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("hbeval_core", "hbeval", "adapters")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80
REASON = re.compile(r"#\s*long because:", re.IGNORECASE)


def shipped_files() -> list[Path]:
    return sorted(p for folder in CHECKED for p in (ROOT / folder).rglob("*.py"))


def _comment_block_above(lines: list[str], first: int) -> Iterator[str]:
    """The comment lines directly above line ``first`` (1-based), nearest first."""
    i = first - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        yield lines[i]
        i -= 1


def _explained(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    if any(REASON.search(line) for line in _comment_block_above(lines, first)):
        return True
    body = node.body
    has_doc = (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
    # From the def line to the first statement after the docstring (comments in between).
    start = node.lineno - 1
    end = (body[1].lineno - 1) if has_doc and len(body) > 1 else body[0].lineno - 1
    if has_doc and len(body) == 1:
        end = body[0].end_lineno or end
    return any(REASON.search(line) for line in lines[start : max(end, start + 1)])


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int, int]]:
    """``(name, line, length)`` of each function longer than ``limit`` lines with no reason."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = (node.end_lineno or node.lineno) - first + 1
            if length > limit and not _explained(node, lines):
                found.append((node.name, node.lineno, length))
    return found


def test_no_file_is_over_800_lines() -> None:
    over = {}
    for path in shipped_files():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_FILE_LINES:
            over[str(path.relative_to(ROOT))] = n
    assert not over, f"files over {MAX_FILE_LINES} lines (split them): {over}"


def test_no_long_function_without_a_reason() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line} {name} ({length} lines)"
        for path in shipped_files()
        for name, line, length in long_functions(path.read_text(encoding="utf-8"))
    ]
    assert not found, (
        f"functions over {MAX_FUNCTION_LINES} lines: split them, or say why in a "
        "'# Long because: ...' comment\n" + "\n".join(found)
    )


def _function(n_body: int, comment_above: str = "", comment_in_body: str = "") -> str:
    above = f"{comment_above}\n" if comment_above else ""
    inside = f"    {comment_in_body}\n" if comment_in_body else ""
    body = "".join(f"    x{i} = {i}\n" for i in range(n_body))
    return f'{above}@decorate\ndef f() -> None:\n    """Doc."""\n{inside}{body}'


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        (_function(77), False),  # decorator + def + docstring + 77 = 80 lines
        (_function(78), True),
        (_function(78, comment_above="# Long because: one table, read top to bottom."), False),
        (_function(78, comment_in_body="# long because: the signature is the CLI."), False),
        (_function(78, comment_above="# a comment that gives no reason"), True),
        (_function(78, comment_in_body="# because it is"), True),
    ],
)
def test_the_checker_counts_and_reads_reasons(source: str, flagged: bool) -> None:
    assert bool(long_functions(source)) is flagged


def test_the_checker_sees_methods_and_nested_functions() -> None:
    method = "class C:\n" + "\n".join("    " + line for line in _function(90).splitlines())
    assert [name for name, _, _ in long_functions(method)] == ["f"]
    nested = "def outer() -> None:\n" + "\n".join(
        "    " + line for line in _function(90).splitlines()
    )
    assert {name for name, _, _ in long_functions(nested)} == {"outer", "f"}
