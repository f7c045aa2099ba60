"""What a SWE-bench instance row means as a task, and back; and what marks a Multi-SWE-bench
task: the rules the swebench reader keeps, and that the formats and the harness carrying such
tasks (SkyRL's SWE rows, the folder exports' eval scripts) borrow, so that no format imports
another.
"""

from __future__ import annotations

import json
from typing import Any

from taskpack.base.nesting import parse_json
from taskpack.converters._sources.records import RowError, need
from taskpack.model import Task

TEST_PATCH = "test.patch"
TEST_LISTS = {"FAIL_TO_PASS": "fail_to_pass", "PASS_TO_PASS": "pass_to_pass"}
_MAPPED = {
    "instance_id",
    "problem_statement",
    "repo",
    "base_commit",
    "environment_setup_commit",
    "test_patch",
    "patch",
    *TEST_LISTS,
}


def test_list(row: dict[str, Any], key: str) -> tuple[list[str], bool]:
    """The list of test names, and whether the raw value must be kept to rebuild it exactly."""
    raw = row.get(key, "[]")
    value = raw
    if isinstance(raw, str):
        try:
            value = parse_json(raw)
        except ValueError as e:
            raise RowError(f"field {key!r}: not a JSON list ({e})") from None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise RowError(f"field {key!r}: expected a list of test names")
    return value, not isinstance(raw, str) or json.dumps(value) != raw


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    """The task of one SWE-bench instance record (also inside other formats' rows)."""
    metadata = {k: v for k, v in row.items() if k not in _MAPPED}
    reward: dict[str, Any] = {"kind": "swe_tests", "test_patch": TEST_PATCH}
    for key, field in TEST_LISTS.items():
        reward[field], keep_raw = test_list(row, key)
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


def is_multi_swebench(metadata: dict[str, Any]) -> bool:
    """Whether a swe_tests task's metadata is a Multi-SWE-bench row's (its harness grades it)."""
    return all(k in metadata for k in ("org", "repo", "number", "base")) and all(
        isinstance(metadata.get(k), dict) for k in ("f2p_tests", "p2p_tests")
    )
