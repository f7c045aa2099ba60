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
from taskpack.converters._source import Record, iter_table_rows, map_rows
from taskpack.converters._swe_rules import TEST_LISTS, to_task
from taskpack.converters._swe_rules import source_row as source_row  # the format's own face
from taskpack.nesting import too_deep


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
        if not {*_TEXT, *TEST_LISTS} <= set(names):
            raise NotColumnar(f"columns {names}")
        own_names(names)
        if template is None:
            row: dict[str, Any] = {n: json_slot(n) for n in names}
            row |= {n: slot(n) for n in _TEXT}
            row |= {key: json.dumps([json_slot(f"#{key}")]) for key in TEST_LISTS}
            template = Template(to_task(row, split, ROW))
        columns = dict(zip(_TEXT, text_columns(table, _TEXT), strict=True))
        for key in TEST_LISTS:
            columns[f"#{key}"] = _test_names(text_columns(table, [key])[0])
        others = [n for n in names if n not in _TEXT and n not in TEST_LISTS]
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


FORMAT = Format(
    name="swebench",
    summary="SWE-bench instances (Lite, Verified, full): problem statement, patches, test lists.",
    read=read,
    read_columns=read_columns,
)
