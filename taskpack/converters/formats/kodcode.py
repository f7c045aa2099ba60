"""KodCode (KodCode-AI/kodcode's pipeline output, and the KodCode-V1 datasets): `question_id`,
`question`, `solution`, `test_code` (the datasets call it `test`), `test_info`, and GPT pass
statistics. The tests are pytest functions over a module named `solution` (`from solution
import f`).

The question is the prompt, followed where `test_info` names the functions by the line
KodCode's RL sets add ("Note that the output function should be f."); `solution` is the
reference. The tests become `test.py` under a unit-tests reward whose entry point is the first
function `test_info` names (else the first the tests import, else the first the solution
defines): their `from solution import ...` lines are dropped (taskpack's grader hands the tests
the candidate's functions, run in a child process), `import pytest` becomes the small part of
pytest the tests use (`raises`, `approx`), and a `check` runs every test function in order. Every
other field stays in metadata.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._sources.records import Record, RowError, map_rows, need
from taskpack.converters._sources.tables import iter_table_rows
from taskpack.converters._unit_tests import defined

TEST_FILE = "test.py"
_MAPPED = ("question_id", "question", "solution", "test_code", "test")
_NOTE = "\n\nNote that the output function should be {names}."
# What KodCode's tests use of pytest, for a grader that has no pytest to import.
_PYTEST = """class pytest:  # taskpack: the part of pytest KodCode's tests use
    class raises:
        def __init__(self, kind, match=None):
            self.kind, self.match = kind, match

        def __enter__(self):
            return self

        def __exit__(self, kind, value, trace):
            if kind is None:
                raise AssertionError(f"DID NOT RAISE {self.kind}")
            if not issubclass(kind, self.kind):
                return False
            if self.match is not None:
                import re

                assert re.search(self.match, str(value)), f"{value!r} does not match"
            self.value = value
            return True

    @staticmethod
    def approx(expected, rel=1e-6, abs=1e-12):
        class Approx:
            def __eq__(self, got):
                import math

                return math.isclose(got, expected, rel_tol=rel, abs_tol=abs)

        return Approx()
"""
_CHECK = """

def check(candidate):  # taskpack: every test function of KodCode's file, in order
    for _name, _test in list(globals().items()):
        if _name.startswith("test") and callable(_test):
            _test()
"""


def test_file(code: str, solution: str = "") -> tuple[str, list[str]]:
    """KodCode's test code as taskpack's grader runs it (see the module's doc), and the names
    it imports from `solution`. A class the tests import from `solution` (a `TreeNode` the
    problem gives) is defined in the tests from the reference, so they can build its objects:
    the candidate's functions take them across the process boundary as the tests' own."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:
        raise RowError(f"field 'test_code': not Python ({e})") from None
    lines = code.splitlines(keepends=True)
    imported: list[str] = []
    for node in tree.body:
        replaced: str | None = None
        if isinstance(node, ast.ImportFrom) and node.module == "solution":
            imported += [alias.asname or alias.name for alias in node.names]
            replaced = "".join(
                (ast.get_source_segment(solution, c) or "") + "\n\n"
                for c in _classes(solution)
                if c.name in {alias.name for alias in node.names}
            )
        elif isinstance(node, ast.Import) and any(a.name == "solution" for a in node.names):
            replaced = ""
        elif isinstance(node, ast.Import) and [a.name for a in node.names] == ["pytest"]:
            replaced = _PYTEST
        if replaced is not None:
            end = node.end_lineno or node.lineno
            lines[node.lineno - 1 : end] = [replaced] + [""] * (end - node.lineno)
    return "".join(lines).rstrip("\n") + "\n" + _CHECK, imported


def _classes(code: str) -> list[ast.ClassDef]:
    try:
        return [n for n in ast.parse(code).body if isinstance(n, ast.ClassDef)]
    except (SyntaxError, ValueError):
        return []


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    question, solution = need(row, "question"), need(row, "solution")
    code = row.get("test_code", row.get("test"))
    if not isinstance(code, str):
        raise RowError("field 'test_code' (or 'test'): expected the tests' Python text")
    tests, imported = test_file(code, solution)
    info = row.get("test_info")
    named = [
        str(f["function_name"])
        for f in (info if isinstance(info, list) else [])
        if isinstance(f, dict) and f.get("function_name")
    ]
    entry = next(iter(named or imported or defined(solution)), None)
    if entry is None:
        raise RowError("no function to test: test_info names none, the tests import none")
    task_id = row.get("question_id")
    return {
        "id": str(task_id) if task_id not in (None, "") else f"{split}-{ordinal:05d}",
        "prompt": question + (_NOTE.format(names=", ".join(named)) if named else ""),
        "solution": solution,
        "reward": {"kind": "unit_tests", "entry_point": entry, "test_file": TEST_FILE},
        "files": [{"path": TEST_FILE, "role": "tests", "data": tests.encode("utf-8")}],
        "source": {"format": "kodcode", "split": split, "row": ordinal},
        "metadata": {k: v for k, v in row.items() if k not in _MAPPED},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), lambda row, n: to_task(row, split, n))


FORMAT = Format(
    name="kodcode",
    summary="KodCode rows: question, reference solution, pytest tests over `solution`.",
    read=read,
)
