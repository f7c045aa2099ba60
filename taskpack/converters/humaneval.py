"""HumanEval (openai/human-eval): `task_id, prompt, canonical_solution, test, entry_point`.

The function stub is the prompt; `test` (which defines `check(candidate)`) becomes the task file
`test.py` under a unit-tests reward with the entry point; `canonical_solution` (a function body
only) is kept as the reference solution.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from taskpack.converters._columnar import (
    ROW,
    Batch,
    Template,
    mapped,
    row_numbers,
    slot,
    strings,
    table_chunks,
    task_ids,
)
from taskpack.converters._format import Format, Options
from taskpack.converters._source import Record, iter_table_rows, map_rows, need
from taskpack.model import Task

TEST_FILE = "test.py"
_MAPPED = ("task_id", "prompt", "canonical_solution", "test", "entry_point")


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    test = need(row, "test")
    return {
        "id": need(row, "task_id"),
        "prompt": need(row, "prompt"),
        "solution": need(row, "canonical_solution"),
        "reward": {
            "kind": "unit_tests",
            "entry_point": need(row, "entry_point"),
            "test_file": TEST_FILE,
        },
        "files": [{"path": TEST_FILE, "data": test.encode("utf-8"), "role": "tests"}],
        "source": {"format": "humaneval", "split": split, "row": ordinal},
        "metadata": {k: v for k, v in row.items() if k not in _MAPPED},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return _rows(iter_table_rows(uri), split)


def _rows(records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
    return map_rows(records, lambda row, n: to_task(row, split, n), first)


def read_columns(uri: str, split: str, options: Options) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`): rows of exactly the five fields, text."""
    template = Template(to_task({k: slot(k) for k in _MAPPED}, split, ROW))

    def batch(table: pa.Table, first: int, _: object) -> Batch:
        columns = dict(zip(_MAPPED, strings(table, *_MAPPED), strict=True))
        rows = row_numbers(first, table.num_rows)
        return template.fill(task_ids(columns["task_id"]), columns, rows)

    yield from mapped(table_chunks(uri), batch, lambda rows, n: _rows(rows, split, n))


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
    read=read,
    read_columns=read_columns,
    default_split="test",  # a benchmark: its one split is `test`, as the catalog names it
)
