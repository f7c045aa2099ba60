"""MBPP (google-research mbpp.jsonl, or its sanitized/HF variants): `task_id, text, code,
test_list, test_setup_code, challenge_test_list`.

The prompt is the problem text (`text`, or the sanitized set's `prompt`) followed by its tests,
the form the MBPP paper prompts with; `code` is the reference solution; the tests (after the
sanitized set's `test_imports` and `test_setup_code`) become `test.py` under a unit-tests
reward whose entry point is the function the tests call: the first called name that the
reference code defines (`assert set(f(x)) == ...` calls `f`, not `set`). Every source field
except `code` stays in metadata (task_id keeps its integer type), so rows rebuild exactly.
"""

from __future__ import annotations

from typing import Any

from taskpack.converters._columnar.fieldmap import FieldMap, Flat, IdOf
from taskpack.converters._columnar.kinds import FirstText, PerRow, Text, TextList, Values, Whole
from taskpack.converters._format import Format
from taskpack.converters._unit_tests import entry_point
from taskpack.model import Task

TEST_FILE = "test.py"
_TESTS_FOLLOW = "\nYour code should pass these tests:\n\n"


def _task(values: Values, split: str, row: int) -> dict[str, Any]:
    test_code = values["#test_code"]
    return {
        "prompt": values["#prompt"],
        "solution": values["code"],
        "reward": {
            "kind": "unit_tests",
            "entry_point": values["#entry_point"],
            "test_file": TEST_FILE,
        },
        "files": [{"path": TEST_FILE, "data": test_code.encode("utf-8"), "role": "tests"}],
        "source": {"format": "mbpp", "split": split, "row": row},
        "metadata": values.rest("code"),
    }


def test_file(imports: Any, setup: Any, tests: list[Any]) -> str:
    """test.py: the tests' imports, their setup code, then each test, a line each."""
    lines = [*(imports if isinstance(imports, list) else []), setup or "", *tests]
    return "".join(f"{line}\n" for line in lines if line)


def _prompt(text: str, tests: list[str]) -> str:
    """The problem text, then its tests, as the MBPP paper prompts."""
    return f"{text}{_TESTS_FOLLOW}" + "\n".join(tests)


FIELDS = FieldMap(
    {
        "test_list": TextList(least=1),
        "#text": FirstText(("text", "prompt")),
        "code": Text(),
        "#entry_point": PerRow(
            entry_point,
            ("test_list", "code"),
            "field 'test_list': no call of a function to find the entry point",
        ),
        "#test_code": PerRow(test_file, ("test_imports", "test_setup_code", "test_list")),
        "#prompt": PerRow(_prompt, ("#text", "test_list")),
        "task_id": Whole(),
    },
    id=IdOf("task_id", "mbpp-"),
    mapping=Flat(_task),
    rest=True,
    keyed=True,
)


def source_row(task: Task) -> dict[str, Any]:
    return {**task.metadata, "code": task.solution}


FORMAT = Format(
    name="mbpp",
    summary="MBPP JSONL: problem text, reference code, assert tests.",
    read=FIELDS.read,
    read_columns=FIELDS.read_columns,
)
