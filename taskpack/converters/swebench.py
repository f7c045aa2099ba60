"""SWE-bench (Lite, Verified, full) as JSONL, JSON or Parquet.

instance_id -> id; problem_statement -> prompt (verbatim, `\\r\\n` and all); FAIL_TO_PASS and
PASS_TO_PASS (JSON-encoded strings upstream) -> real lists in a swe_tests reward; repo,
base_commit, environment_setup_commit -> environment; test_patch -> the task file `test.patch`;
the gold patch -> solution, never the prompt. Every other field stays in metadata verbatim
(`version` is the string "0.20", never a float). A test list whose upstream text would not be
reproduced exactly by `json.dumps` is also kept verbatim in metadata, so rebuilding is exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows, need
from taskpack.model import Task

TEST_PATCH = "test.patch"
_TEST_LISTS = {"FAIL_TO_PASS": "fail_to_pass", "PASS_TO_PASS": "pass_to_pass"}
_MAPPED = {
    "instance_id",
    "problem_statement",
    "repo",
    "base_commit",
    "environment_setup_commit",
    "test_patch",
    "patch",
    *_TEST_LISTS,
}


def _test_list(row: dict[str, Any], key: str) -> tuple[list[str], bool]:
    """The list of test names, and whether the raw value must be kept to rebuild it exactly."""
    raw = row.get(key, "[]")
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as e:
            raise RowError(f"field {key!r}: not a JSON list ({e.msg})") from None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise RowError(f"field {key!r}: expected a list of test names")
    return value, not isinstance(raw, str) or json.dumps(value) != raw


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    """The task of one SWE-bench instance record (also inside other formats' rows)."""
    metadata = {k: v for k, v in row.items() if k not in _MAPPED}
    reward: dict[str, Any] = {"kind": "swe_tests", "test_patch": TEST_PATCH}
    for key, field in _TEST_LISTS.items():
        reward[field], keep_raw = _test_list(row, key)
        if keep_raw and key in row:
            metadata[key] = row[key]
    setup_commit = row.get("environment_setup_commit")
    return {
        "id": need(row, "instance_id"),
        "prompt": need(row, "problem_statement"),
        "solution": need(row, "patch"),
        "reward": reward,
        "files": [
            {
                "path": TEST_PATCH,
                "role": "tests",
                "data": need(row, "test_patch").encode("utf-8"),
            }
        ],
        "environment": {
            "repo": need(row, "repo"),
            "commit": need(row, "base_commit"),
            "setup_commit": setup_commit,
        },
        "source": {"format": "swebench", "split": split, "row": ordinal},
        "metadata": metadata,
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), lambda row, n: to_task(row, split, n))


def source_row(task: Task) -> dict[str, Any]:
    reward, env = task.reward, task.environment
    assert reward is not None and reward.kind == "swe_tests" and env is not None
    row: dict[str, Any] = {
        "repo": env.repo,
        "instance_id": task.id,
        "base_commit": env.commit,
        "patch": task.solution,
        "test_patch": task.file(TEST_PATCH).read_bytes().decode("utf-8"),
        "problem_statement": task.instruction,
        "FAIL_TO_PASS": json.dumps(reward.fail_to_pass),
        "PASS_TO_PASS": json.dumps(reward.pass_to_pass),
    }
    if env.setup_commit is not None:
        row["environment_setup_commit"] = env.setup_commit
    row.update(task.metadata)
    return row


FORMAT = Format(
    name="swebench",
    summary="SWE-bench instances (Lite, Verified, full): problem statement, patches, test lists.",
    read=read,
)
