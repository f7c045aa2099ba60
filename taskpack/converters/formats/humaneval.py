"""HumanEval (openai/human-eval): `task_id, prompt, canonical_solution, test, entry_point`.

The function stub is the prompt; `test` (which defines `check(candidate)`) becomes the task file
`test.py` under a unit-tests reward with the entry point; `canonical_solution` (a function body
only) is kept as the reference solution.
"""

from __future__ import annotations

from typing import Any

from taskpack.converters._columnar.fieldmap import FieldMap, Flat, IdOf
from taskpack.converters._columnar.kinds import Text, Values
from taskpack.converters._format import Format
from taskpack.model import Task

TEST_FILE = "test.py"
_MAPPED = ("test", "task_id", "prompt", "canonical_solution", "entry_point")


def _task(values: Values, split: str, row: int) -> dict[str, Any]:
    return {
        "prompt": values["prompt"],
        "solution": values["canonical_solution"],
        "reward": {
            "kind": "unit_tests",
            "entry_point": values["entry_point"],
            "test_file": TEST_FILE,
        },
        "files": [{"path": TEST_FILE, "data": values["test"].encode("utf-8"), "role": "tests"}],
        "source": {"format": "humaneval", "split": split, "row": row},
        "metadata": values.rest(*_MAPPED),
    }


FIELDS = FieldMap({name: Text() for name in _MAPPED}, id=IdOf("task_id"), mapping=Flat(_task))


def source_row(task: Task) -> dict[str, Any]:
    reward = task.reward
    assert reward is not None and reward.kind == "unit_tests"
    return {
        "task_id": task.id,
        "prompt": task.instruction,
        "canonical_solution": task.solution,
        "test": task.file(TEST_FILE).read_bytes().decode("utf-8"),
        "entry_point": reward.entry_point,
        **task.metadata,
    }


FORMAT = Format(
    name="humaneval",
    summary="HumanEval JSONL: function stub, canonical body, check(candidate) tests.",
    read=FIELDS.read,
    read_columns=FIELDS.read_columns,
    default_split="test",  # a benchmark: its one split is `test`, as the catalog names it
)
