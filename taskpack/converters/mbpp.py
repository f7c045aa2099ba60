"""MBPP (google-research mbpp.jsonl, or its sanitized/HF variants): `task_id, text, code,
test_list, test_setup_code, challenge_test_list`.

The prompt is the problem text followed by its tests, the form the MBPP paper prompts with;
`code` is the reference solution; the tests (after `test_setup_code`) become `test.py` under a
unit-tests reward whose entry point is the function the first test calls. Every source field
except `code` stays in metadata (task_id keeps its integer type), so rows rebuild exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.converters._columnar import (
    ROW,
    Batch,
    NotColumnar,
    Parsed,
    Template,
    json_columns,
    json_slot,
    mapped,
    own_names,
    refuse,
    row_numbers,
    slot,
    table_chunks,
    task_ids,
    text_columns,
)
from taskpack.converters._format import Format, Options
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows, need
from taskpack.model import Task

TEST_FILE = "test.py"
_TESTS_FOLLOW = "\nYour code should pass these tests:\n\n"
_CALL = re.compile(r"assert\s+\(?\s*(?:not\s+)?(?:math\.isclose\()?\s*([A-Za-z_]\w*)\s*\(")


def _task(
    split: str,
    row: int,
    prompt: str,
    code: str,
    entry_point: str,
    test_code: str,
    metadata: dict[str, Any],
) -> dict[str, Any]:
    """Task fields from a row's values: the row path's mapping, also the columnar template's."""
    return {
        "prompt": prompt,
        "solution": code,
        "reward": {"kind": "unit_tests", "entry_point": entry_point, "test_file": TEST_FILE},
        "files": [{"path": TEST_FILE, "data": test_code.encode("utf-8"), "role": "tests"}],
        "source": {"format": "mbpp", "split": split, "row": row},
        "metadata": metadata,
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), _converter(split))


def _converter(split: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
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
            **_task(
                split,
                ordinal,
                f"{text}{_TESTS_FOLLOW}" + "\n".join(tests),
                need(row, "code"),
                match.group(1),
                test_code,
                {k: v for k, v in row.items() if k != "code"},
            ),
        }

    return convert


def read_columns(uri: str, split: str, options: Options) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`): rows with `task_id` (a whole number),
    `code` and `text` or `prompt` (text), `test_list` (a list of text), and further fields of
    text, whole numbers, booleans or lists of text; first tests in plain ASCII."""
    template: Template | None = None
    names: list[str] | None = None

    def batch(table: pa.Table, first: int, parsed: Parsed) -> Batch:
        nonlocal template, names
        if template is None:
            names = table.schema.names
            needed = {"task_id", "code", "test_list"}
            if not needed <= set(names) or not {"text", "prompt"} & set(names):
                raise NotColumnar(f"columns {names}")
            own_names(names)
            template = Template(
                _task(
                    split,
                    ROW,
                    slot("#prompt"),
                    slot("code"),
                    slot("#entry_point"),
                    slot("#test_code"),
                    {n: json_slot(n) for n in names if n != "code"},
                )
            )
        if names is None or table.schema.names != names:
            raise NotColumnar("fields that change between rows")
        text_name = "text" if "text" in names else "prompt"
        code, text = text_columns(table, ["code", text_name])
        task_id = table.column("task_id").combine_chunks()
        if not pa.types.is_integer(task_id.type):
            raise NotColumnar("a task_id that is not a whole number")
        refuse(pc.is_null(task_id), "no task_id")
        tests = table.column("test_list").combine_chunks()
        test_code, entry_point = _tests(table, tests)
        columns = {
            "code": code,
            "#prompt": pc.binary_join_element_wise(
                text, pc.binary_join(tests, "\n"), _TESTS_FOLLOW
            ),
            "#entry_point": entry_point,
            "#test_code": test_code,
        }
        values, hashed = json_columns(table, [n for n in names if n != "code"], parsed)
        columns |= values
        ids = pc.binary_join_element_wise("mbpp-", pc.cast(task_id, pa.string()), "")
        return template.fill(task_ids(ids), columns, row_numbers(first, table.num_rows), hashed)

    convert = _converter(split)
    yield from mapped(
        table_chunks(uri, keyed=True), batch, lambda rows, n: map_rows(rows, convert, n)
    )


# The entry-point pattern for RE2, on text Python's `_CALL` reads alike: with no form feed,
# vertical tab or \x1c-\x1f, `\s` is these four characters; on ASCII, `\w` is this class.
_CALL_RE2 = (
    r"assert[ \t\n\r]+\(?[ \t\n\r]*(?:not[ \t\n\r]+)?(?:math\.isclose\()?[ \t\n\r]*"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t\n\r]*\("
)


def _tests(table: pa.Table, tests: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Each row's test file text and entry point, as `read` makes them."""
    if not pa.types.is_list(tests.type) or not pa.types.is_string(tests.type.value_type):
        raise NotColumnar("a test_list that is not a list of text")
    refuse(pc.fill_null(pc.less(pc.list_value_length(tests), 1), True), "an empty test_list")
    items = tests.flatten()
    if items.null_count:
        raise NotColumnar("a test that is not text")
    head = pc.list_element(tests, 0)
    plain = pc.match_substring_regex(head, r"^[\t\n\r -~]*$")
    refuse(pc.invert(plain), "a first test that is not plain ASCII")
    found = pc.extract_regex(head, _CALL_RE2)
    refuse(pc.is_null(found), "a first test without `assert f(...)`")
    # Each non-empty test and the setup code (when there is some), each with its newline.
    lines = pc.if_else(pc.equal(items, ""), "", pc.binary_join_element_wise(items, "\n", ""))
    offsets = pc.subtract(tests.offsets, tests.offsets[0])
    body = pc.binary_join(pa.ListArray.from_arrays(offsets, lines), "")
    setup: pa.Array | str = ""
    if "test_setup_code" in table.schema.names:
        code = table.column("test_setup_code").combine_chunks()
        if not pa.types.is_string(code.type):
            raise NotColumnar("a test_setup_code that is not text")
        code = pc.fill_null(code, "")
        setup = pc.if_else(pc.equal(code, ""), "", pc.binary_join_element_wise(code, "\n", ""))
    return pc.binary_join_element_wise(setup, body, ""), pc.struct_field(found, "name")


def source_row(task: Task) -> dict[str, Any]:
    return {**task.metadata, "code": task.solution}


FORMAT = Format(
    name="mbpp",
    summary="MBPP JSONL: problem text, reference code, assert tests.",
    read=read,
    read_columns=read_columns,
)
