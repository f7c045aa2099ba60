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


def entry_point(tests: list[Any], code: str) -> str | None:
    """The function the tests call: the first called name that the reference code defines;
    without one, the first called name that is not a builtin."""
    import ast
    import builtins

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    defined = {node.name for node in tree.body if isinstance(node, kinds)}
    called: list[str] = []
    for test in tests:
        try:
            calls = [n for n in ast.walk(ast.parse(str(test))) if isinstance(n, ast.Call)]
        except (SyntaxError, ValueError):
            continue
        calls.sort(key=lambda n: (n.lineno, n.col_offset))
        called += [c.func.id for c in calls if isinstance(c.func, ast.Name)]
    own = [name for name in called if name in defined]
    others = [name for name in called if not hasattr(builtins, name)]
    return next(iter(own or others), None)


def test_file(imports: Any, setup: Any, tests: list[Any]) -> str:
    """test.py: the tests' imports, their setup code, then each test, a line each."""
    lines = [*(imports if isinstance(imports, list) else []), setup or "", *tests]
    return "".join(f"{line}\n" for line in lines if line)


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), _converter(split))


def _converter(split: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        tests = need(row, "test_list", list)
        text = row.get("text", row.get("prompt"))
        if not isinstance(text, str):
            raise RowError("field 'text': missing or not text")
        found = entry_point(tests, need(row, "code"))
        if found is None:
            raise RowError("field 'test_list': no call of a function to find the entry point")
        test_code = test_file(row.get("test_imports"), row.get("test_setup_code"), tests)
        return {
            "id": f"mbpp-{need(row, 'task_id', int)}",
            **_task(
                split,
                ordinal,
                f"{text}{_TESTS_FOLLOW}" + "\n".join(tests),
                need(row, "code"),
                found,
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
        test_code, entry_points = _tests(table, tests, code)
        columns = {
            "code": code,
            "#prompt": pc.binary_join_element_wise(
                text, pc.binary_join(tests, "\n"), _TESTS_FOLLOW
            ),
            "#entry_point": entry_points,
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


def _tests(table: pa.Table, tests: pa.Array, code: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Each row's test file text and entry point, by the row path's own rules (MBPP sets hold
    hundreds of rows: a loop over them costs nothing)."""
    if not pa.types.is_list(tests.type) or not pa.types.is_string(tests.type.value_type):
        raise NotColumnar("a test_list that is not a list of text")
    refuse(pc.fill_null(pc.less(pc.list_value_length(tests), 1), True), "an empty test_list")
    if tests.flatten().null_count:
        raise NotColumnar("a test that is not text")
    extra = {}
    for name in ("test_imports", "test_setup_code"):
        if name in table.schema.names:
            column = table.column(name).combine_chunks()
            wanted = pa.types.is_string if name == "test_setup_code" else _text_list
            if not (wanted(column.type) or pa.types.is_null(column.type)):
                raise NotColumnar(f"a {name} of another type")
            extra[name] = column.to_pylist()
    rows = table.num_rows
    imports, setups = (extra.get(n, [None] * rows) for n in ("test_imports", "test_setup_code"))
    listed, codes = tests.to_pylist(), code.to_pylist()
    found = pa.array(
        [entry_point(t or [], c or "") for t, c in zip(listed, codes, strict=True)], pa.string()
    )
    refuse(pc.is_null(found), "tests that call no function")
    files = [test_file(i, s, t or []) for i, s, t in zip(imports, setups, listed, strict=True)]
    return pa.array(files, pa.string()), found


def _text_list(kind: pa.DataType) -> bool:
    return bool(pa.types.is_list(kind) and pa.types.is_string(kind.value_type))


def source_row(task: Task) -> dict[str, Any]:
    return {**task.metadata, "code": task.solution}


FORMAT = Format(
    name="mbpp",
    summary="MBPP JSONL: problem text, reference code, assert tests.",
    read=read,
    read_columns=read_columns,
)
