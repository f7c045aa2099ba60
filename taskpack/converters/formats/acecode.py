"""AceCode (TIGER-Lab/AceCode-87K and its V2): `id`, `source`, `question`, `test_cases` (V2:
`tests`), a list of Python assert statements, and `inferences`, model completions each with the
share of the tests it passed (`pass_rate`).

The question is the prompt; the tests become `test.py`, an assert a line, under a unit-tests
reward whose entry point is the function the asserts call (the first called name the reference
defines, else the first that is not a builtin). AceCode ships no canonical solution: the
reference is the first inference that passed every test (`pass_rate` 1), its code read as
taskpack reads a reply (the fenced block defining the entry point); a row without one has no
reference. Every field but the question and tests stays in metadata, inferences included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._sources.records import Record, RowError, map_rows, need
from taskpack.converters._sources.tables import iter_table_rows
from taskpack.converters._unit_tests import entry_point
from taskpack.rewards.grader import extract_code

TEST_FILE = "test.py"
_MAPPED = ("id", "question", "test_cases", "tests")


def _reference(inferences: Any, entry: str | None) -> str | None:
    """The code of the first inference that passed every test, if any."""
    for done in inferences if isinstance(inferences, list) else []:
        if isinstance(done, dict) and done.get("pass_rate") == 1 and done.get("completion"):
            return extract_code(str(done["completion"]), entry)
    return None


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    question = need(row, "question")
    tests = row.get("test_cases", row.get("tests"))
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise RowError("field 'test_cases' (or 'tests'): expected a list of assert statements")
    first = _reference(row.get("inferences"), None)
    entry = entry_point(tests, first or "")
    if entry is None:
        raise RowError("field 'test_cases': no call of a function to find the entry point")
    task_id = row.get("id")
    return {
        "id": str(task_id) if task_id not in (None, "") else f"{split}-{ordinal:05d}",
        "prompt": question,
        "solution": _reference(row.get("inferences"), entry),
        "reward": {"kind": "unit_tests", "entry_point": entry, "test_file": TEST_FILE},
        "files": [
            {"path": TEST_FILE, "role": "tests", "data": "".join(f"{t}\n" for t in tests).encode()}
        ],
        "source": {"format": "acecode", "split": split, "row": ordinal},
        "metadata": {k: v for k, v in row.items() if k not in _MAPPED},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), lambda row, n: to_task(row, split, n))


FORMAT = Format(
    name="acecode",
    summary="AceCode rows: question, assert tests, model inferences with their pass rates.",
    read=read,
)
