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

import pyarrow as pa

from taskpack.converters._columnar import (
    ROW,
    Batch,
    NotColumnar,
    Parsed,
    Template,
    json_columns,
    json_items,
    json_slot,
    json_values,
    mapped,
    own_names,
    row_numbers,
    slot,
    table_chunks,
    task_ids,
    text_columns,
)
from taskpack.converters._format import Format, Options
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows, need
from taskpack.model import Task
from taskpack.nesting import parse_json, too_deep

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
    return _rows(iter_table_rows(uri), split)


def _rows(records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
    return map_rows(records, lambda row, n: to_task(row, split, n), first)


_TEXT = ("instance_id", "problem_statement", "patch", "test_patch", "repo", "base_commit")


def read_columns(uri: str, split: str, options: Options) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`): rows whose mapped fields are text, whose
    test lists are JSON text as `json.dumps` writes it (then nothing is kept raw) of plain-ASCII
    test names, and whose other fields are text, whole numbers, booleans or lists of text."""
    template: Template | None = None
    names: list[str] | None = None

    def batch(table: pa.Table, first: int, parsed: Parsed) -> Batch:
        nonlocal template, names
        if names not in (None, table.schema.names):
            raise NotColumnar("fields that change between rows")
        names = table.schema.names
        if not {*_TEXT, *_TEST_LISTS} <= set(names):
            raise NotColumnar(f"columns {names}")
        own_names(names)
        if template is None:
            row: dict[str, Any] = {n: json_slot(n) for n in names}
            row |= {n: slot(n) for n in _TEXT}
            row |= {key: json.dumps([json_slot(f"#{key}")]) for key in _TEST_LISTS}
            template = Template(to_task(row, split, ROW))
        columns = dict(zip(_TEXT, text_columns(table, _TEXT), strict=True))
        for key in _TEST_LISTS:
            columns[f"#{key}"] = _test_names(text_columns(table, [key])[0])
        others = [n for n in names if n not in _TEXT and n not in _TEST_LISTS]
        values, hashed = json_columns(table, others, parsed)
        columns |= values
        ids = task_ids(columns["instance_id"])
        return template.fill(ids, columns, row_numbers(first, table.num_rows), hashed)

    yield from mapped(table_chunks(uri, keyed=True), batch, lambda rows, n: _rows(rows, split, n))


def _test_names(raw: pa.Array) -> pa.Array:
    """The test names in each JSON list, as JSON strings joined by commas, where the list's
    text is exactly `json.dumps` of plain-ASCII names (as upstream writes it)."""
    import io

    import pyarrow.compute as pc
    import pyarrow.json as pj

    if pc.any(pc.match_substring(raw, "\n")).as_py():
        raise NotColumnar("a test list over several lines")
    lines = pc.binary_join_element_wise('{"t":', raw, "}", "")
    one = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
    text = pc.binary_join(one, "\n")[0].as_buffer()
    if too_deep(text.to_pybytes(), lines=True) is not None:  # Arrow's parser would crash
        raise NotColumnar("a test list nested too deeply")
    try:
        parsed = pj.read_json(io.BytesIO(text))
    except pa.ArrowInvalid as e:
        raise NotColumnar(str(e)) from None
    if parsed.num_rows != len(raw) or not pa.types.is_list(parsed.schema.field("t").type):
        raise NotColumnar("a test list that is not a JSON list")
    names = parsed.column("t").combine_chunks()
    if names.null_count:
        raise NotColumnar("a null test list")
    item = names.type.value_type
    if not (pa.types.is_string(item) or pa.types.is_null(item)) or names.flatten().null_count:
        raise NotColumnar("a test list of something other than text")
    if not pc.all(pc.equal(json_values(names, spaced=True), raw)).as_py():
        raise NotColumnar("a test list that json.dumps would write otherwise")
    items = names.flatten()
    if len(items) and not pc.all(pc.string_is_ascii(items)).as_py():
        raise NotColumnar("a test name that is not plain ASCII")
    return json_items(names)


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
    read_columns=read_columns,
)
