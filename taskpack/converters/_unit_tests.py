"""What the formats whose reward is Python unit tests share (MBPP, KodCode, AceCode): which
function the tests call, and test files written so that taskpack's grader runs them with the
code under test in a child process (`grader.unit_test_score`)."""

from __future__ import annotations

import ast
from typing import Any


def defined(code: str) -> list[str]:
    """The names of the functions and classes `code` defines at its top level, in order."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in tree.body if isinstance(node, kinds)]


def entry_point(tests: list[Any], code: str) -> str | None:
    """The function the tests call: the first called name that the reference code defines;
    without one, the first called name that is not a builtin."""
    import builtins

    own = set(defined(code))
    called: list[str] = []
    for test in tests:
        try:
            calls = [n for n in ast.walk(ast.parse(str(test))) if isinstance(n, ast.Call)]
        except (SyntaxError, ValueError):
            continue
        calls.sort(key=lambda n: (n.lineno, n.col_offset))
        called += [c.func.id for c in calls if isinstance(c.func, ast.Name)]
    mine = [name for name in called if name in own]
    others = [name for name in called if not hasattr(builtins, name)]
    return next(iter(mine or others), None)
