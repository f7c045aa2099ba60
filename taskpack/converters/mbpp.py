"""MBPP (google-research mbpp.jsonl, or its sanitized/HF variants): `task_id, text, code,
test_list, test_setup_code, challenge_test_list`.

The prompt is the problem text followed by its tests, the form the MBPP paper prompts with;
`code` is the reference solution; the tests (after `test_setup_code`) become `test.py` under a
unit-tests reward whose entry point is the function the first test calls. Every source field
except `code` stays in metadata (task_id keeps its integer type), so rows rebuild exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows, need
from taskpack.model import Task

TEST_FILE = "test.py"
_CALL = re.compile(r"assert\s+\(?\s*(?:not\s+)?(?:math\.isclose\()?\s*([A-Za-z_]\w*)\s*\(")


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        tests = need(row, "test_list", list)
        text = row.get("text", row.get("prompt"))
        if not isinstance(text, str):
            raise RowError("field 'text': missing or not text")
        match = _CALL.search(tests[0]) if tests else None
        if match is None:
            raise RowError("field 'test_list': no `assert f(...)` test to find the entry point")
        setup = row.get("test_setup_code") or ""
        test_code = "".join(f"{line}\n" for line in [setup, *tests] if line)
        return {
            "id": f"mbpp-{need(row, 'task_id', int)}",
            "prompt": f"{text}\nYour code should pass these tests:\n\n" + "\n".join(tests),
            "solution": need(row, "code"),
            "reward": {"kind": "unit_tests", "entry_point": match.group(1), "test_file": TEST_FILE},
            "files": [{"path": TEST_FILE, "data": test_code.encode("utf-8"), "role": "tests"}],
            "source": {"format": "mbpp", "split": split, "row": ordinal},
            "metadata": {k: v for k, v in row.items() if k != "code"},
        }

    return map_rows(iter_table_rows(uri), convert)


def source_row(task: Task) -> dict[str, Any]:
    return {**task.metadata, "code": task.solution}


FORMAT = Format(
    name="mbpp", summary="MBPP JSONL: problem text, reference code, assert tests.", read=read
)
