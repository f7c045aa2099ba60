"""The columnar import path writes what the row path writes: the same stored rows, digests and
errors, on every data set in shared/data and on rows made to trip each batch check."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import taskpack
from taskpack.converters import reader
from taskpack.converters._columnar import mapped as mapping
from taskpack.converters._columnar.guards import json_columns
from taskpack.converters._columnar.template import Batch
from taskpack.converters._sources import chunk, jsonl, parquet
from taskpack.converters._sources.chunk import NotColumnar
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources

from .conftest import DATA
from .test_records import SOURCES, _id


def outcome(tmp: Path, name: str, src: Path, fmt: str, options: dict[str, Any], columnar: bool):
    """(split digest, stored table) of an import, or its error message: the same tasks, stored
    the same, however the two paths encode the Parquet (whose sizes the version digest pins)."""
    target = tmp / name
    try:
        result = import_sources(
            target, {"test": [str(src)]}, fmt, options=options, name="x", columnar=columnar
        )
    except TaskpackError as e:
        return str(e)
    table = taskpack.open(target).split("test").columns()
    return result.manifest.splits["test"].digest, table.to_pylist()


def columnar_reads(src: Path, fmt: str, options: dict[str, Any] | None = None) -> bool:
    """Whether the format's columnar reader takes the whole source (no rows for the row
    path)."""
    form = reader(fmt)
    if form.read_columns is None:
        return False
    ids = []
    try:
        for batch in form.read_columns(
            str(src), "test", form.read_options.model_validate(options or {}), None
        ):
            if not isinstance(batch, Batch):
                return False  # rows the batch checks refused, for the row path
            ids.extend(batch.table.column("id").to_pylist())
    except NotColumnar:
        return False
    return bool(ids) and len(set(ids)) == len(ids)  # else the importer falls back too


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES, ids=_id)
def test_both_paths_write_the_same_task_set(
    tmp_path: Path, source: tuple[str, Path, dict[str, Any]]
) -> None:
    fmt, src, options = source
    by_rows = outcome(tmp_path, "rows", src, fmt, options, columnar=False)
    by_columns = outcome(tmp_path, "columns", src, fmt, options, columnar=True)
    assert by_columns == by_rows
    if fmt in COLUMNAR and src.is_file():  # real files take the columnar path, no fallback
        assert columnar_reads(src, fmt, options)


COLUMNAR = {"gsm8k", "humaneval", "kaggle", "skyrl", "swebench", "verifiers"}


# An object (NeMo Gym's agent_ref), and the same with its keys the other way round.
REF = {"type": "a", "name": "b"}
FER = {"name": "b", "type": "a"}


GOOD = {"question": 'Q "quoted" \\ back\tslash \u0001 é\u2028', "answer": "x\n#### 1,234 "}
EDGES = {
    "good": [GOOD] * 3,
    "crlf": [GOOD] * 2,  # written with \r\n below
    "blank line": [GOOD, None, GOOD],
    "two objects on a line": [GOOD, "pair"],
    "extra field": [GOOD, {**GOOD, "level": 3}],
    "missing field": [GOOD, {"question": "q"}],
    "null": [GOOD, {"question": None, "answer": "#### 1"}],
    "a number": [GOOD, {"question": 5, "answer": "#### 1"}],
    "no ####": [GOOD, {"question": "q", "answer": "42"}],
    "nothing after ####": [GOOD, {"question": "q", "answer": "#### , "}],
    "unicode final": [GOOD, {"question": "q", "answer": "#### \u00a012\u3000"}],
    "control final": [GOOD, {"question": "q", "answer": "#### 12\x1c"}],
    "lone surrogate": [GOOD, '{"question": "a\\ud800", "answer": "#### 1"}'],
    "not an object": [GOOD, "[1, 2]"],
    "bom": ["\ufeff" + json.dumps(GOOD), GOOD],
    "empty": [],
    "two ####": [GOOD, {"question": "q", "answer": "a #### 1\n#### 2"}],
    "empty question": [GOOD, {"question": "", "answer": "#### 1"}],
    "not utf-8": [GOOD, b'{"question": "a\xff", "answer": "#### 1"}'],
    "trailing comma": [GOOD, '{"question": "q", "answer": "#### 1",}'],
    "raw tab in a string": [GOOD, '{"question": "a\tb", "answer": "#### 1"}'],
    "only blank lines": [None, None],
}


def _write(path: Path, rows: list[Any], newline: str) -> None:
    lines = []
    for row in rows:
        if row is None:
            lines.append(b"")
        elif row == "pair":
            lines.append((json.dumps(GOOD) + " " + json.dumps(GOOD)).encode())
        elif isinstance(row, bytes):
            lines.append(row)
        elif isinstance(row, str):
            lines.append(row.encode())
        else:
            lines.append(json.dumps(row).encode())
    path.write_bytes(newline.encode().join(lines) + newline.encode())


@pytest.mark.parametrize("case", sorted(EDGES))
def test_rows_that_trip_a_batch_check_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str
) -> None:
    src = tmp_path / "src.jsonl"
    _write(src, EDGES[case], "\r\n" if case == "crlf" else "\n")
    by_rows = outcome(tmp_path, "rows", src, "gsm8k", {}, columnar=False)
    by_columns = outcome(tmp_path, "columns", src, "gsm8k", {}, columnar=True)
    assert by_columns == by_rows
    if case in ("good", "crlf", "bom", "two ####", "empty question"):
        assert columnar_reads(src, "gsm8k") and not isinstance(by_rows, str)
    else:
        assert not columnar_reads(src, "gsm8k")


def test_a_line_over_the_limit_is_the_row_paths_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TASKPACK_MAX_LINE_BYTES", "100")
    src = tmp_path / "src.jsonl"
    _write(src, [GOOD, {"question": "x" * 200, "answer": "#### 1"}], "\n")
    by_columns = outcome(tmp_path, "columns", src, "gsm8k", {}, columnar=True)
    assert isinstance(by_columns, str) and "line longer than 100 bytes" in by_columns
    assert by_columns == outcome(tmp_path, "rows", src, "gsm8k", {}, columnar=False)


def test_a_split_spanning_batches_is_numbered_across_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src.jsonl"
    _write(src, [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(3000)], "\n")
    monkeypatch.setattr(chunk, "BLOCK", 4096)
    assert len(list(jsonl.jsonl_chunks(str(src)))) > 10
    by_columns = outcome(tmp_path, "columns", src, "gsm8k", {}, columnar=True)
    by_rows = outcome(tmp_path, "rows", src, "gsm8k", {}, columnar=False)
    assert by_columns == by_rows
    assert not isinstance(by_columns, str) and by_columns[1][2999]["id"] == "test-02999"


def same_both_ways(tmp: Path, src: Path, fmt: str, options: dict[str, Any], takes: bool) -> None:
    """Import `src` both ways: the same task set or the same error; the columnar reader takes
    the whole source exactly when `takes` (and then the source imports)."""
    by_rows = outcome(tmp, "rows", src, fmt, options, columnar=False)
    assert outcome(tmp, "columns", src, fmt, options, columnar=True) == by_rows
    assert columnar_reads(src, fmt, options) == takes
    if takes:
        assert not isinstance(by_rows, str)
    return by_rows


# Kaggle tables, as bytes: what Python's csv module and Arrow's CSV parser could read otherwise.
HEAD = b"id,question,answer,extra\n"
ROW_1 = b'1,"What, is ""it""?",42,x\n'
ROW_2 = b"2,plain \xc3\xa9,7,y\n"
CSV_EDGES: dict[str, tuple[bytes, bool]] = {  # text, whether the columnar reader takes it
    "good": (HEAD + ROW_1 + ROW_2, True),
    "crlf": ((HEAD + ROW_1 + ROW_2).replace(b"\n", b"\r\n"), True),
    "bare cr": ((HEAD + ROW_1 + ROW_2).replace(b"\n", b"\r"), True),
    "bom": (b"\xef\xbb\xbf" + HEAD + ROW_1, True),
    "no final newline": (HEAD + ROW_1 + ROW_2.rstrip(), True),
    "quoted newlines": (HEAD + b'3,"line 1\nline 2\r\nline 3",1,"a\rb"\n', True),
    "empty cells": (HEAD + b"4,,,\n", True),
    "blank line": (HEAD + ROW_1 + b"\n" + ROW_2, True),
    "whitespace line": (HEAD + ROW_1 + b"  \n" + ROW_2, False),
    "short row": (HEAD + ROW_1 + b"5,q\n", False),
    "long row": (HEAD + ROW_1 + b"5,q,1,x,more\n", False),
    "trailing delimiter": (HEAD + ROW_1 + b"5,q,1,x,\n", False),
    "header only": (HEAD, False),
    "empty file": (b"", False),
    "unterminated quote": (HEAD + ROW_1 + b'6,"abc,1,x\n', False),
    "quote in an unquoted cell": (HEAD + ROW_1 + b'6,ab"c,1,x\n', True),
    "text after a closing quote": (HEAD + ROW_1 + b'7,"ab"c,1,x\n', True),
    "not utf-8": (HEAD + ROW_1 + b"8,a\xff,1,x\n", False),
    "empty id": (HEAD + ROW_1 + b",q,1,x\n", False),
    "control character in an id": (HEAD + ROW_1 + b"\x01,q,1,x\n", False),
    "duplicate id": (HEAD + ROW_1 + ROW_1, False),
    "duplicate column": (b"id,question,id,extra\n1,q,2,x\n", False),
    "missing column": (b"id,prompt,answer\n1,q,2\n", False),
}
SIMPLE = {"id_column": "id", "prompt_column": "question", "answer_column": "answer"}


@pytest.mark.parametrize("case", sorted(CSV_EDGES))
def test_csv_rows_come_out_as_the_row_path_has_them(tmp_path: Path, case: str) -> None:
    text, takes = CSV_EDGES[case]
    src = tmp_path / "src.csv"
    src.write_bytes(text)
    same_both_ways(tmp_path, src, "kaggle", SIMPLE, takes)


def test_tsv_and_stripped_headers_come_out_as_the_row_path_has_them(tmp_path: Path) -> None:
    src = tmp_path / "src.tsv"
    src.write_bytes(b' id \t question \tanswer\textra\n1\tq, "a"\t2\tx\n2\tr\t3\ty\n')
    options = {**SIMPLE, "strip_headers": True}
    same_both_ways(tmp_path, src, "kaggle", options, True)


ANSWERS = (
    b'id,question,answer\n1,q,27.0\n2,r,025\n3,s,"1,080"\n4,t,\\frac{1}{2}\n5,u,Paris\n6,v,-3\n'
)


@pytest.mark.parametrize(
    ("case", "text", "reward", "kinds", "takes"),
    [
        ("numbers and words", ANSWERS, "auto", ["numeric_match"] * 4 + ["exact_match", "n"], False),
        ("plain numbers", b"id,question,answer\n1,q,27\n2,r,0.5\n", "auto", ["n", "n"], True),
        ("words", b"id,question,answer\n1,q,yes\n2,r,no\n", "auto", ["e", "e"], True),
        ("all as text", ANSWERS, "exact_match", ["e"] * 6, True),
        (
            "numbers asked",
            b"id,question,answer\n1,q,27.0\n2,r,1/3\n",
            "numeric_match",
            ["n"] * 2,
            False,
        ),
        ("a word as a number", ANSWERS, "numeric_match", [], False),
    ],
)
def test_answers_that_are_numbers_are_scored_as_numbers(
    tmp_path: Path, case: str, text: bytes, reward: str, kinds: list[str], takes: bool
) -> None:
    """AMC's 27.0 and AIME's 025 are numbers: the correct 27 and 25 must score."""
    src = tmp_path / "src.csv"
    src.write_bytes(text)
    same_both_ways(tmp_path, src, "kaggle", {**SIMPLE, "reward": reward}, takes)
    short = {"n": "numeric_match", "e": "exact_match"}
    if kinds:
        tasks = taskpack.open(tmp_path / "rows").split("test")
        assert [t.reward.kind for t in tasks] == [short.get(k, k) for k in kinds]


MC = b'id,prompt,A,B,C,D,E,answer\n0,Which?,a,b,c,d,e,B\n1,"Two\nlines",1,2,3,4,5,E\n'


@pytest.mark.parametrize(
    ("case", "text", "takes"),
    [
        ("good", MC, True),
        ("an answer not among the choices", MC + b"2,q,a,b,c,d,e,F\n", False),
        ("no answer column", b"id,prompt,A,B,C,D,E\n0,q,a,b,c,d,e\n", True),
        ("an empty answer", MC + b"2,q,a,b,c,d,e,\n", False),
    ],
)
def test_multiple_choice_tables_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, text: bytes, takes: bool
) -> None:
    src = tmp_path / "src.csv"
    src.write_bytes(text)
    options = {"preset": "multiple-choice"}
    same_both_ways(tmp_path, src, "kaggle", options, takes)


@pytest.mark.parametrize(
    ("case", "table", "takes"),
    [
        ("text", {"id": ["a", "b"], "question": ["q", "r"], "answer": ["1", "2"]}, True),
        ("a null", {"id": ["a", "b"], "question": ["q", None], "answer": ["1", "2"]}, False),
        ("a number", {"id": ["a", "b"], "question": ["q", "r"], "answer": [1, 2]}, False),
    ],
)
def test_parquet_tables_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, table: dict[str, list[Any]], takes: bool
) -> None:
    import pyarrow as pa

    src = tmp_path / "src.parquet"
    pq.write_table(pa.table(table), src)
    same_both_ways(tmp_path, src, "kaggle", SIMPLE, takes)


HUMANEVAL = {
    "task_id": "HumanEval/0",
    "prompt": 'def f(x):\n    """Say "hi"."""\n',
    "canonical_solution": "    return x\n",
    "test": "def check(candidate):\n    assert candidate(1) == 1\n",
    "entry_point": "f",
}


@pytest.mark.parametrize(
    ("case", "rows", "takes"),
    [
        ("good", [HUMANEVAL, {**HUMANEVAL, "task_id": "HumanEval/1"}], True),
        ("an extra field", [HUMANEVAL, {**HUMANEVAL, "task_id": "x", "level": 2}], False),
        ("a missing field", [{k: v for k, v in HUMANEVAL.items() if k != "test"}], False),
        ("an empty id", [{**HUMANEVAL, "task_id": ""}], False),
        ("an id too long", [{**HUMANEVAL, "task_id": "x" * 513}], False),
        ("a duplicate id", [HUMANEVAL, HUMANEVAL], False),
        ("a number", [{**HUMANEVAL, "entry_point": 3}], False),
        ("an empty test", [{**HUMANEVAL, "test": ""}], True),
    ],
)
def test_humaneval_rows_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, rows: list[dict[str, Any]], takes: bool
) -> None:
    import gzip

    src = tmp_path / "src.jsonl.gz"
    src.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    same_both_ways(tmp_path, src, "humaneval", {}, takes)


def test_a_template_fills_rows_as_the_row_path_writes_them() -> None:
    """Two files per row (interleaved by row), a slot inside a longer text, the row number, a
    constant solution: each filled row equals the row path's row of the same task."""
    import pyarrow as pa

    from taskpack.converters._columnar.template import ROW, Template, slot
    from taskpack.model import Task
    from taskpack.storage.rows import task_to_row

    def fields(a: str, b: str, row: int) -> dict[str, Any]:
        return {
            "prompt": f"Use {a} and {b}.\n",
            "solution": "const",
            "files": [
                {"path": "a.txt", "data": a.encode(), "role": "tests"},
                {"path": "dir/b.txt", "data": b.encode(), "mode": 0o755},
            ],
            "source": {"format": "x", "row": row},
            "metadata": {"b": b},
        }

    a_values, b_values = ["1", 'q"\n\\', "é"], ["", "x\ty", "\u2028"]
    filled = Template(fields(slot("a"), slot("b"), ROW)).fill(
        pa.array(["i0", "i1", "i2"]),
        {"a": pa.array(a_values), "b": pa.array(b_values)},
        pa.array([0, 1, 2], pa.int64()),
    )
    for n, stored in enumerate(filled.stored().to_pylist()):
        task = Task.model_validate({"id": f"i{n}", **fields(a_values[n], b_values[n], n)})
        row, digest = task_to_row(task, lambda data, sha: None)
        assert stored == {**row, "digest": digest}


def test_a_template_refuses_a_slot_it_cannot_fill() -> None:
    from taskpack.converters._columnar.template import ROW, Template

    with pytest.raises(ValueError, match="not a whole value"):
        Template({"prompt": f"row {ROW}"})


MBPP = {
    "task_id": 11,
    "text": 'Remove "code": the first and last occurrence.',
    "code": "def remove_Occ(s,ch): \r\n    return s",
    "test_list": ['assert remove_Occ("hello","l") == "heo"', "", "assert remove_Occ('a','a')"],
    "test_setup_code": "",
    "challenge_test_list": [],
}
SANITIZED = {
    "source_file": "x.py",
    "task_id": 2,
    "prompt": "Write f.",
    "code": "def f(): pass",
    "test_imports": ["import math"],
    "test_list": ["assert not math.isclose(f(), 1)"],
}


def _mbpp(**changes: Any) -> dict[str, Any]:
    return {**MBPP, "task_id": 12, **changes}


@pytest.mark.parametrize(
    ("case", "lines", "takes"),
    [
        ("good", [MBPP, _mbpp(test_setup_code="import math", challenge_test_list=["a"])], True),
        ("sanitized", [SANITIZED, {**SANITIZED, "task_id": 3}], True),
        ("a null setup", [MBPP, _mbpp(test_setup_code=None)], True),
        ("text and prompt", [{**MBPP, "prompt": "p"}], True),
        ("keys in another order", [MBPP, {"code": "c", **_mbpp()}], False),
        ("a key spaced from its colon", [MBPP, json.dumps(_mbpp()).replace('": ', '" : ')], True),
        ("a boolean task_id", [MBPP, _mbpp(task_id=True)], False),
        ("a float task_id", [MBPP, _mbpp(task_id=12.0)], False),
        ("an empty test_list", [MBPP, _mbpp(test_list=[])], False),
        ("no call", [MBPP, _mbpp(test_list=["x = 1"])], False),
        ("a builtin around the call", [MBPP, _mbpp(test_list=["assert set(f(1)) == {1}"])], True),
        ("a non-ASCII first test", [MBPP, _mbpp(test_list=["assert\u00a0f(1)"])], False),
        ("a vertical tab", [MBPP, _mbpp(test_list=["assert\x0bf(1)"])], False),
        ("not f but not_f", [MBPP, _mbpp(test_list=["assert not_f(1)"])], True),
        ("a float field", [MBPP, _mbpp(score=0.5)], False),
        (
            "a field missing",
            [MBPP, {k: v for k, v in _mbpp().items() if k != "test_setup_code"}],
            False,
        ),
        ("a duplicate id", [MBPP, MBPP], False),
    ],
)
def test_mbpp_rows_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, lines: list[Any], takes: bool
) -> None:
    src = tmp_path / "src.jsonl"
    _write(src, lines, "\n")
    same_both_ways(tmp_path, src, "mbpp", {}, takes)


def test_kaggle_json_lines_in_one_key_order_come_out_as_the_row_path_has_them(
    tmp_path: Path,
) -> None:
    rows = [{"id": "a", "question": "q", "answer": "1", "note": "x"}] * 2
    orders = {
        "one order": ([rows[0], {**rows[1], "id": "b"}], True),
        "two orders": ([rows[0], {"note": "x", "id": "b", "question": "q", "answer": "1"}], False),
    }
    for case, (lines, takes) in orders.items():
        (tmp_path / case).mkdir()
        src = tmp_path / case / "src.jsonl"
        _write(src, lines, "\n")
        # metadata keeps a line's order: the reader takes one order only
        imported = same_both_ways(tmp_path / case, src, "kaggle", SIMPLE, takes)
        assert not isinstance(imported, str)


SWE = json.loads((DATA / "swebench" / "swebench_lite_test.jsonl").open().readline())


def _swe(**changes: Any) -> dict[str, Any]:
    return {**SWE, "instance_id": "other__other-1", **changes}


@pytest.mark.parametrize(
    ("case", "lines", "takes"),
    [
        ("good", [SWE, _swe()], True),
        ("a null setup commit", [SWE, _swe(environment_setup_commit=None)], True),
        ("empty test lists", [_swe(FAIL_TO_PASS="[]", PASS_TO_PASS="[]")], True),
        ("compact test lists", [SWE, _swe(FAIL_TO_PASS='["a","b"]')], False),
        ("a test list that is no list", [SWE, _swe(FAIL_TO_PASS='"a"')], False),
        ("a test list that is no JSON", [SWE, _swe(FAIL_TO_PASS="[a")], False),
        ("a real list", [SWE, _swe(FAIL_TO_PASS=["a"])], False),
        ("a non-ASCII test name", [SWE, _swe(FAIL_TO_PASS=json.dumps(["t\u00e9"]))], False),
        ("a float version", [SWE, _swe(version=0.2)], False),
        ("a date-like text", [SWE, _swe(created_at="2020-01-01")], True),
        ("a nested field", [SWE, _swe(hints_text={"a": 1})], False),
        ("an empty patch", [SWE, _swe(patch="")], True),
    ],
)
def test_swebench_rows_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, lines: list[Any], takes: bool
) -> None:
    src = tmp_path / "src.jsonl"
    _write(src, lines, "\n")
    same_both_ways(tmp_path, src, "swebench", {}, takes)


def test_swebench_without_a_setup_commit_field_comes_out_as_the_row_path_has_it(
    tmp_path: Path,
) -> None:
    src = tmp_path / "src.jsonl"
    rows = [{k: v for k, v in r.items() if k != "environment_setup_commit"} for r in (SWE, _swe())]
    _write(src, rows, "\n")
    same_both_ways(tmp_path, src, "swebench", {}, True)


SKYRL = pq.read_table(DATA / "peers" / "skyrl" / "gsm8k" / "validation.parquet").slice(0, 3)


def _skyrl(**columns: Any) -> Any:
    """The first SkyRL rows with some columns replaced (row 1's value first, then row 0's)."""
    import pyarrow as pa

    rows = SKYRL.to_pylist()
    for name, value in columns.items():
        rows[1][name] = value
    return pa.Table.from_pylist(rows)


@pytest.mark.parametrize(
    ("case", "columns", "takes"),
    [
        ("as SkyRL writes it", {}, True),
        ("data_source skyrl", {"data_source": "skyrl"}, False),
        ("another env_class", {"env_class": "multiply"}, False),
        ("another method", {"reward_spec": {"method": "x", "ground_truth": "1"}}, False),
        ("a null ground truth", {"reward_spec": {"method": "rule", "ground_truth": None}}, False),
        ("another role", {"prompt": [{"role": "system", "content": "q"}]}, True),
        ("two messages", {"prompt": [{"role": "user", "content": "q"}] * 2}, True),
        ("a null content", {"prompt": [{"role": "user", "content": None}]}, False),
        ("an id", {"extra_info": {"split": "t", "index": 1, "answer": "a", "id": "x"}}, False),
        ("a float", {"extra_info": {"split": "t", "index": 1.5, "answer": "a"}}, False),
        ("a null field", {"extra_info": {"split": None, "index": 1, "answer": "a"}}, True),
        ("an embedded task", {"extra_info": {"split": "t", "taskpack": "{}"}}, False),
    ],
)
def test_skyrl_rows_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, columns: dict[str, Any], takes: bool
) -> None:
    src = tmp_path / "src.parquet"
    pq.write_table(_skyrl(**columns), src)
    same_both_ways(tmp_path, src, "skyrl", {}, takes)


def test_a_json_slot_in_a_text_field_is_refused_not_stored() -> None:
    """A template whose text field would hold a JSON slot's marker (verl's worked solution,
    mapped from a field of an object) is refused, not stored as that text in every row."""
    from taskpack.converters._columnar.template import Template, json_slot

    with pytest.raises(ValueError, match="not a whole value"):
        Template({"prompt": "q", "solution": json_slot("#extra_info.answer")})


def test_messages_of_content_then_role_are_columnar(tmp_path: Path) -> None:
    import pyarrow as pa

    rows = SKYRL.to_pylist()
    for row in rows:
        row["prompt"] = [{"content": m["content"], "role": m["role"]} for m in row["prompt"]]
    table = pa.Table.from_pylist(rows)
    assert table.schema.field("prompt").type.value_type.names == ["content", "role"]
    pq.write_table(table, tmp_path / "src.parquet")
    same_both_ways(tmp_path, tmp_path / "src.parquet", "skyrl", {}, True)


VERIFIERS = pq.read_table(DATA / "peers" / "verifiers" / "gsm8k" / "test.parquet").slice(0, 3)


@pytest.mark.parametrize(
    ("case", "change", "takes"),
    [
        ("as Verifiers writes it", {}, True),
        ("one question not the user message", {"question": "other"}, False),
        ("a negative example_id", {"example_id": -1}, False),
        ("a duplicate example_id", {"example_id": 0}, False),
        ("a null answer", {"answer": None}, False),
        ("another role", {"prompt": [{"role": "user", "content": "q"}]}, True),
        ("no user message", {"prompt": [{"role": "system", "content": "s"}] * 2}, False),
    ],
)
def test_verifiers_rows_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, change: dict[str, Any], takes: bool
) -> None:
    import pyarrow as pa

    rows = VERIFIERS.to_pylist()
    rows[1].update(change)
    if case == "no user message":
        for row in rows:
            row.update(change)
    src = tmp_path / "src.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    same_both_ways(tmp_path, src, "verifiers", {}, takes)


@pytest.mark.parametrize(
    ("case", "table", "takes"),
    [
        ("questions never the user message", {"question": ["a", "b"]}, True),
        ("an example_id as text", {"example_id": ["0", "1"]}, False),
        ("an info column", {"info": ["{}", "{}"]}, False),
    ],
)
def test_verifiers_tables_of_another_shape_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, table: dict[str, Any], takes: bool
) -> None:
    import pyarrow as pa

    prompt = [[{"role": "system", "content": "s"}, {"role": "user", "content": q}] for q in "xy"]
    columns = {"question": ["x", "y"], "answer": ["1", "2"], "example_id": [0, 1]}
    columns |= {"prompt": prompt, **table}
    src = tmp_path / "src.parquet"
    pq.write_table(pa.table(columns), src)
    imported = same_both_ways(tmp_path, src, "verifiers", {}, takes)
    assert not isinstance(imported, str)


@pytest.mark.parametrize(
    ("case", "table", "takes"),
    [
        ("problem and answer", {"problem": ["1+1?", "2+2?"], "answer": ["2", "4"]}, True),
        ("question and answer", {"question": ["a?", "b?"], "answer": ["x", ""]}, True),
        (
            "both, the same",
            {"problem": ["p", "q"], "question": ["p", "q"], "answer": ["1", "2"]},
            True,
        ),
        (
            "both, never the same",
            {"problem": ["p", "q"], "question": ["x", "y"], "answer": ["1", "2"]},
            True,
        ),
        (
            "both, once the same",
            {"problem": ["p", "q"], "question": ["p", "y"], "answer": ["1", "2"]},
            False,
        ),
        (
            "text ids and more",
            {"id": ["a", "b"], "problem": ["p", "q"], "answer": ["1", "2"], "level": [1, 2]},
            True,
        ),
        ("whole-number ids", {"id": [7, 8], "problem": ["p", "q"], "answer": ["1", "2"]}, False),
        (
            "an empty problem",
            {"problem": ["", "q"], "question": ["x", "y"], "answer": ["1", "2"]},
            False,
        ),
        ("a null answer", {"problem": ["p", "q"], "answer": ["1", None]}, False),
        (
            "a float column",
            {"problem": ["p", "q"], "answer": ["1", "2"], "score": [0.5, 1.0]},
            True,
        ),
        (
            "a float Python writes with an exponent",
            {"problem": ["p", "q"], "answer": ["1", "2"], "score": [0.5, 1e-5]},
            True,
        ),
        (
            "a date column",
            {"problem": ["p", "q"], "answer": ["1", "2"], "at": [date(2024, 1, 2), None]},
            False,
        ),
        (
            "a map column",
            {
                "problem": ["p"],
                "answer": ["1"],
                "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
            },
            False,
        ),
        (
            "an object column",
            {"problem": ["p", "q"], "answer": ["1", "2"], "m": [{"b": 1, "a": [REF]}, None]},
            True,
        ),
    ],
)
def test_gem_tables_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, table: dict[str, Any], takes: bool
) -> None:
    import pyarrow as pa

    src = tmp_path / "src.parquet"
    pq.write_table(pa.table(table), src)
    same_both_ways(tmp_path, src, "gem", {}, takes)


NEMO_COLUMNAR = [
    "aalcr",
    "anyswe_agent",
    "arc_agi",
    "asr_with_pc",
    "bbq",
    "biomnibench_da",
    "blackjack",
    "bunsenbench_chemistry_mcq",
    "calendar_v2",
    "code_gen",
    "competitive_coding_challenges",
    "conversational_tool_use_simulation",
    "cvdp",
    "equivalence_llm_judge",
    "ether0",
    "example_mcp_weather",
    "example_multi_turn_gymnasium",
    "example_single_tool_call",
    "finance_agent_v2",
    "format_verification",
    "gdpval",
    "google_search",
    "graphwalks",
    "grl_tetris",
    "gymnasium",
    "hotpotqa_qa",
    "imo_gradingbench",
    "indirect_prompt_injection",
    "inverse_if",
    "legal_agent_bench",
    "longmemeval",
    "math_advanced_calculations",
    "math_proof_judgement",
    "math_with_code",
    "mcqa",
    "mini_swe_agent_2",
    "multichallenge",
    "ns_tools",
    "omniscience",
    "openclaw_agent",
    "opencode_agent",
    "openenv",
    "over_refusal_detection",
    "pi_agent",
    "pinchbench",
    "prime_agent_math",
    "proof_genselect",
    "proof_verification",
    "ruler",
    "scicode",
    "speed_bench",
    "structeval",
    "swe_agents",
    "swebench",
    "swerl_llm_judge",
    "terminal_multi_harness",
    "text_to_sql",
    "ugphysics_judge",
    "verifif",
    "wmt_translation",
    "xlam_fc",
]


@pytest.mark.parametrize("name", NEMO_COLUMNAR)
def test_nemo_files_of_one_flat_shape_take_the_columnar_path(tmp_path: Path, name: str) -> None:
    """NeMo Gym files whose requests hold the same fields in every row, with messages of text
    (or one text) and a few different conversation shapes and tool lists, are read columnar,
    to the same task set; the others fall back (both paths on all 71 files above)."""
    src = DATA / "peers" / "nemo_gym" / f"{name}.jsonl"
    same_both_ways(tmp_path, src, "nemo", {}, True)


def _compact(row: dict[str, Any]) -> str:
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


FN = [{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}}]
MCP = [{"type": "mcp", "server_label": "w", "server_url": "http://127.0.0.1:9/mcp"}]
FIRST = {"content": "q", "role": "user"}
SYSTEM = {"content": "s", "role": "system"}


def _talk(*turns: str, **fields: Any) -> dict[str, Any]:
    """A conversation of user and assistant turns."""
    said = [{"role": ("user", "assistant")[k % 2], "content": t} for k, t in enumerate(turns)]
    return {"responses_create_params": {"input": said}, "expected_answer": "1", **fields}


USER = {"type": "message", "role": "user", "content": "q"}
CALL = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}


def _items(*items: dict[str, Any]) -> dict[str, Any]:
    return {"responses_create_params": {"input": list(items)}, "expected_answer": "1"}


def _tools(tools: Any, first: bool = False) -> dict[str, Any]:
    request = {"tools": tools, "input": "q"} if first else {"input": "q", "tools": tools}
    return {"responses_create_params": request, "expected_answer": "1"}


M = {"m": {"tools": 2}}


def _nemo(**fields: Any) -> dict[str, Any]:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    return {"responses_create_params": {"input": messages}, "expected_answer": "1", **fields}


@pytest.mark.parametrize(
    ("case", "lines", "takes"),
    [
        ("flat", [_nemo(), _nemo(expected_answer="2")], True),
        ("question the user message", [_nemo(question="q"), _nemo(question="q")], True),
        ("question never it", [_nemo(question="a"), _nemo(question="b")], True),
        ("question once it", [_nemo(question="q"), _nemo(question="b")], False),
        ("own ids", [_nemo(id=7), _nemo(id="x")], False),
        ("own text ids", [_nemo(id="x"), _nemo(id="y")], True),
        ("an own id the task id", [_nemo(id="test-00000"), _nemo(id="y")], False),
        ("a null answer", [_nemo(), _nemo(expected_answer=None)], False),
        ("a list answer", [_nemo(expected_answer=["a"]), _nemo(expected_answer=[])], True),
        ("a number answer", [_nemo(expected_answer=3), _nemo(expected_answer=4)], True),
        (
            "an empty user message",
            [
                _nemo(),
                {
                    "responses_create_params": {
                        "input": [
                            {"role": "system", "content": "s"},
                            {"role": "user", "content": ""},
                        ]
                    },
                    "expected_answer": "1",
                },
            ],
            False,
        ),
        (
            "a temperature",
            [
                _nemo(),
                {
                    **_nemo(),
                    "responses_create_params": {
                        "input": [{"role": "user", "content": "q"}],
                        "temperature": 0.5,
                    },
                },
            ],
            False,
        ),
        ("input as text", [{"responses_create_params": {"input": "q"}}] * 2, True),
        ("empty input", [{"responses_create_params": {"input": []}, "x": 1}] * 2, True),
        (
            "more request fields",
            [_nemo(), {**_nemo(), "responses_create_params": {"input": [], "model": "m"}}],
            False,
        ),
        (
            "request fields",
            [{"responses_create_params": {"model": "m", "input": "q", "top_p": 0.5, "n": [1]}}] * 2,
            True,
        ),
        (
            "request fields in another order",
            [
                {"responses_create_params": {"input": "q", "top_p": 0.5, "model": "m"}},
                {"responses_create_params": {"input": "q", "model": "m", "top_p": 0.5}},
            ],
            False,
        ),
        ("conversations of several lengths", [_nemo(), _talk("a", "b", "c")], True),
        ("and each its question", [_nemo(question="q"), _talk("a", "b", "c", question="c")], True),
        (
            "its question in one of them",
            [_nemo(question="q"), _talk("a", "b", "c", question="x")],
            True,
        ),
        ("an empty user message in one", [_nemo(), _talk("a", "b", "")], False),
        (
            "messages as Responses items",
            [_items(USER), _items(SYSTEM | {"type": "message"}, USER)],
            True,
        ),
        ("a message without its type", [_items(USER), _items(SYSTEM, USER)], False),
        ("a function call among them", [_items(USER), _items(CALL, USER)], False),
        ("tools", [_tools(FN), _tools(FN)], True),
        ("no tools", [_tools([]), _tools(None)], True),
        ("tools of each row", [_tools(FN), _tools([{**FN[0], "name": "g"}]), _tools(MCP)], True),
        (
            "a tool's keys in another order",
            [_tools(FN), _tools([dict(reversed(FN[0].items()))])],
            True,
        ),
        ("a tool's extra key", [_tools(FN), _tools([{**FN[0], "x": 1}])], True),
        ("a tool the row path refuses", [_tools(FN), _tools([{"type": "web_search"}])], False),
        ("a tool that is no object", [_tools(FN), _tools(["f"])], False),
        (
            "tools before input",
            [{"responses_create_params": {"tools": FN, "input": "q"}}] * 2,
            True,
        ),
        ("tools before input in one row", [_tools(FN), _tools(FN, first=True)], False),
        ("a key named tools elsewhere too", [_tools(FN) | {"m": {"tools": 1}}] * 2, True),
        ("tools elsewhere, none in a request", [_tools(FN) | M, _nemo(m={"tools": None})], False),
        (
            "a message's content before its role",
            [_nemo(), {**_nemo(), "responses_create_params": {"input": [SYSTEM, FIRST]}}],
            True,
        ),
        ("messages' contents first", [{"responses_create_params": {"input": [FIRST]}}] * 2, True),
        ("an object", [_nemo(agent_ref=REF), _nemo(agent_ref={**REF, "name": "c"})], True),
        ("objects written compactly", [_compact(_nemo(agent_ref=REF))] * 2, True),
        ("objects of either spacing", [_compact(_nemo(agent_ref=REF)), _nemo(agent_ref=REF)], True),
        ("an object's keys in another order", [_nemo(agent_ref=REF), _nemo(agent_ref=FER)], True),
        (
            "a key also an object's",
            [_nemo(agent_ref=REF, name="n"), _nemo(agent_ref=FER, name="m")],
            True,
        ),
        (
            "keys in another order",
            [_nemo(agent_ref=REF, name="n"), {"name": "m", **_nemo(agent_ref=REF)}],
            False,
        ),
        ("an object lacking a key", [_nemo(agent_ref=REF), _nemo(agent_ref={"type": "a"})], True),
        ("objects lacking keys", [_nemo(options=[{"A": "x"}, {"B": "y"}])] * 2, True),
        ("a null and a lacking key", [_nemo(m={"a": None}), _nemo(m={"b": 1})], True),
        ("an object's null", [_nemo(agent_ref={"type": "a", "name": None})] * 2, True),
        ("objects in lists in objects", [_nemo(meta={"t": [{"in": "1", "out": [1]}]})] * 2, True),
        ("floats", [_nemo(meta={"score": 0.5}, s=1.0), _nemo(meta={"score": 0.0}, s=-0.0)], True),
        ("a float answer", [_nemo(expected_answer=0.25), _nemo(expected_answer=12.0)], True),
        ("a whole number among floats", [_nemo(s=0.5), _nemo(s=5)], True),
        ("a float with an exponent", [_nemo(s=0.5), _nemo(s=1e-5)], True),
        (
            "a float written otherwise",
            [_nemo(s=0.5), json.dumps(_nemo())[:-1] + ', "s": 0.50}'],
            True,
        ),
        (
            "a float written otherwise, the same on every line",
            [json.dumps(_nemo())[:-1] + ', "s": 0.50}'] * 3,
            True,
        ),
        ("the same objects on every line", [_nemo(meta={"p": 0.5, "t": [{"a": 1}]})] * 3, True),
        (
            "the same objects but on one line",
            [_nemo(meta={"p": 0.5, "a": REF})] * 2 + [_nemo(meta={"p": 0.5, "a": FER})],
            True,
        ),
        ("an object's text escaped", [_nemo(meta={"t": "é"})] * 2, True),
        ("an object's date-like text", [_nemo(meta={"at": "2024-01-02T03:04:05"})] * 2, True),
        ("an object's text as it is", [_compact(_nemo(meta={"t": "é\n"}))] * 2, True),
        ("an object's key to escape", [_nemo(meta={"t\n": "x"})] * 2, True),
        ("an object's key spaced", [json.dumps(_nemo())[:-1] + ', "m": {"t" : 1}}'] * 2, True),
    ],
)
def test_nemo_rows_come_out_as_the_row_path_has_them(
    tmp_path: Path, case: str, lines: list[Any], takes: bool
) -> None:
    src = tmp_path / "src.jsonl"
    _write(src, lines, "\n")
    same_both_ways(tmp_path, src, "nemo", {}, takes)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """What the split writer takes, in order: the rows of each columnar batch, -1 per task."""
    from taskpack.storage.writer import _SplitWriter

    written: list[int] = []
    add_table, add = _SplitWriter.add_table, _SplitWriter.add
    monkeypatch.setattr(
        _SplitWriter, "add_table", lambda self, t: (written.append(t.num_rows), add_table(self, t))
    )
    monkeypatch.setattr(_SplitWriter, "add", lambda self, t: (written.append(-1), add(self, t))[1])
    return written


def _runs(written: list[int]) -> list[tuple[str, int]]:
    """The writes as runs: ("columns", rows) and ("rows", rows), in order."""
    runs: list[tuple[str, int]] = []
    for n in written:
        kind, rows = ("rows", 1) if n < 0 else ("columns", n)
        if runs and runs[-1][0] == kind:
            runs[-1] = (kind, runs[-1][1] + rows)
        else:
            runs.append((kind, rows))
    return runs


ODD = {"question": "q", "answer": "#### \u00a012\u3000"}  # fine, but no batch check takes it


@pytest.mark.parametrize(
    ("odd", "suffix"),
    [
        (odd, suffix)
        for odd in ("one odd row", "two odd rows", "a blank line", "no ####", "a duplicate id")
        for suffix in (".jsonl", ".parquet")
        if (odd, suffix) != ("a blank line", ".parquet")  # Parquet has no lines
    ],
)
def test_only_rows_around_one_a_check_refuses_go_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: str, suffix: str
) -> None:
    """A refused batch is cut in parts, and those refused in parts again, down to pieces of
    fewer than 2 * _SMALLEST rows: only the piece holding the odd row goes row by row, the rows
    before and after it stay columnar, and the task set (or the error) is the row path's."""
    rows: list[Any] = [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(3000)]
    fmt = "gsm8k"
    if odd == "one odd row":
        rows[1500] = ODD
    elif odd == "two odd rows":
        rows[1500] = rows[2200] = ODD
    elif odd == "a blank line":  # the row path skips it: the ids after it move up by one
        rows[1500] = None
    elif odd == "no ####":
        rows[1500] = {"question": "q", "answer": "42"}
    else:  # HumanEval rows carry their ids
        rows = [{**HUMANEVAL, "task_id": f"H/{i}"} for i in range(3000)]
        rows[1500] = {**HUMANEVAL, "task_id": "H/5", "level": 2}
        fmt = "humaneval"
    src = _odd_source(tmp_path, rows, suffix, monkeypatch)
    written = _spy(monkeypatch)
    by_columns = outcome(tmp_path, "columns", src, fmt, {}, columnar=True)
    runs = _runs(written)
    assert by_columns == outcome(tmp_path, "rows", src, fmt, {}, columnar=False)
    if odd in ("no ####", "a duplicate id"):  # the whole source again, row by row
        assert isinstance(by_columns, str)
        return
    assert not isinstance(by_columns, str)
    assert len(by_columns[1]) == 3000 - (odd == "a blank line")
    odd_runs = 2 if odd == "two odd rows" else 1
    assert [kind for kind, _ in runs] == ["columns", "rows"] * odd_runs + ["columns"]
    assert all(0 < n < 2 * mapping._SMALLEST for kind, n in runs if kind == "rows")
    assert runs[0][1] <= 1500 < runs[0][1] + runs[1][1] + (odd == "a blank line")


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_the_rows_a_check_names_are_the_only_ones_read_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """With runs of any length tried again (`_SMALLEST` 1), exactly the refused rows go row by
    row: per-row Python only for them."""
    rows: list[Any] = [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(3000)]
    rows[1500] = rows[1502] = rows[2200] = ODD
    src = _odd_source(tmp_path, rows, suffix, monkeypatch)
    monkeypatch.setattr(mapping, "_SMALLEST", 1)
    written = _spy(monkeypatch)
    by_columns = outcome(tmp_path, "columns", src, "gsm8k", {}, columnar=True)
    runs = _runs(written)
    assert by_columns == outcome(tmp_path, "rows", src, "gsm8k", {}, columnar=False)
    assert [n for kind, n in runs if kind == "rows"] == [1, 1, 1]
    assert runs[:4] == [("columns", 1500), ("rows", 1), ("columns", 1), ("rows", 1)]


def test_objects_a_line_writes_otherwise_take_the_row_paths_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Objects are checked against each line's text a batch at a time; in a batch where a line
    writes one otherwise (keys in another order), that column alone takes the row path's values
    for every row of the batch, and the rows stay columnar, each keeping its own key order."""
    rows: list[Any] = [_nemo(expected_answer=str(i), agent_ref=REF) for i in range(3000)]
    rows[1500] = _nemo(agent_ref=FER)
    by_columns = _one_batch_parsed(tmp_path, monkeypatch, rows)
    stored = [json.loads(row["extras"])["nemo"]["agent_ref"] for row in by_columns[1]]
    assert list(stored[1500]) == ["name", "type"] and list(stored[1499]) == ["type", "name"]


def test_rows_keep_their_own_tools_one_template_per_tool_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tools are constants of a template: rows sharing a tool list share one; a batch with a
    few lists fills each list's rows and puts them back in order; one where most rows have
    their own list goes row by row, to the same task set."""
    other = [{**FN[0], "name": "g"}]
    rows: list[Any] = [_tools(FN if i % 3 else other) for i in range(3000)]
    rows[1500:] = [_tools([{**FN[0], "name": f"f{i}"}]) for i in range(1500)]
    src = _odd_source(tmp_path, rows, ".jsonl", monkeypatch)
    written = _spy(monkeypatch)
    by_columns = outcome(tmp_path, "columns", src, "nemo", {}, columnar=True)
    assert by_columns == outcome(tmp_path, "rows", src, "nemo", {}, columnar=False)
    runs = _runs(written)
    assert runs[0][0] == "columns" and runs[0][1] >= 1500  # two lists: one batch, two fills
    assert sum(n for kind, n in runs if kind == "rows") >= 1000  # a list per row
    names = [json.loads(row["tools"])[0]["name"] for row in by_columns[1]]
    assert names[:4] == ["g", "f", "f", "g"] and names[1500:1502] == ["f0", "f1"]


def test_request_fields_each_once_in_order_are_read_without_parsing_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request whose every field's key is found once on each line, inside the request and in
    its order, has its fields' texts (tools, a temperature) confirmed in the lines: no batch
    parses its rows in Python; a line holding a key of the same name deeper makes only its
    batch do so."""
    rows: list[Any] = [
        {"responses_create_params": {"input": f"q{i}", "tools": FN, "temperature": 0.5}, "m": {}}
        for i in range(3000)
    ]
    rows[1500]["m"] = {"temperature": 1}
    _one_batch_parsed(tmp_path, monkeypatch, rows)


def test_rows_are_grouped_by_every_shape_in_the_order_first_seen() -> None:
    """`shapes`: rows alike in every key share a group, numbered as first seen; a null is a
    shape of its own."""
    roles = pa.array(["u", "s\x1fu", "u", "s\x1fu", "u", None])
    tools = pa.array(["[]", "[]", "[f]", "[]", "[]", "[]"])
    codes, firsts = mapping.shapes([roles, tools])
    assert codes.tolist() == [0, 1, 2, 1, 0, 3] and firsts == [0, 1, 2, 5]
    codes, firsts = mapping.shapes([tools])
    assert codes.tolist() == [0, 0, 1, 0, 0, 0] and firsts == [0, 2]


def test_a_key_is_placed_only_where_every_line_holds_it_once() -> None:
    """A key found as many times as there are lines is not thereby once on each line: one line
    holding it twice and the next none is refused, as are more than lines; each place found is
    counted from its own line's start."""
    import pyarrow.compute as pc

    def places(*rows: str) -> list[int] | str:
        piece = "\n".join(rows).encode() + b"\n"
        lines = pc.list_flatten(pc.split_pattern(pa.array([piece.rstrip(b"\n")]), "\n"))
        try:
            return jsonl._key_positions(lines, piece, ["a"], spaced=False)["a"].to_pylist()
        except NotColumnar as e:
            return str(e)

    assert places('{"a": 1}', '{"b": 2, "a": 3}', '{"a": {"b": 1}}') == [1, 9, 1]
    assert "more than once" in str(places('{"a": {"a": 1}}', '{"b": 2}'))
    assert "more than once" in str(places('{"a": {"a": 1}}', '{"a": 2}'))
    assert "more than once" in str(places('{"a": 1}', '{"b": 2}'))


def _one_batch_parsed(tmp: Path, monkeypatch: pytest.MonkeyPatch, rows: list[Any]) -> Any:
    """The NeMo import of 3000 `rows` whose row 1500 is odd: every row columnar, the same task
    set as the row path's, and only the batch holding row 1500 parsed row by row."""
    src = _odd_source(tmp, rows, ".jsonl", monkeypatch)
    written = _spy(monkeypatch)
    parsed: list[int] = []
    real = chunk._parsed_rows
    monkeypatch.setattr(chunk, "_parsed_rows", lambda r, n: (parsed.append(n), real(r, n))[1])
    by_columns = outcome(tmp, "columns", src, "nemo", {}, columnar=True)
    assert _runs(written) == [("columns", 3000)]
    assert by_columns == outcome(tmp, "rows", src, "nemo", {}, columnar=False)
    assert len(parsed) == 1 and parsed[0] < 3000 / 4  # the batch holding row 1500 only
    return by_columns


def test_after_two_batches_with_no_row_taken_the_rest_goes_row_by_row_untried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source of a shape no check takes does not pay for both paths all the way."""
    rows: list[Any] = [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(3000)]
    rows[700:] = [ODD] * 2300
    src = _odd_source(tmp_path, rows, ".jsonl", monkeypatch)
    written = _spy(monkeypatch)
    parsed: list[int] = []
    parse = jsonl._parse
    monkeypatch.setattr(jsonl, "_parse", lambda *a: (parsed.append(1), parse(*a))[1])
    by_columns = outcome(tmp_path, "columns", src, "gsm8k", {}, columnar=True)
    tries = len(parsed)
    assert [kind for kind, _ in _runs(written)] == ["columns", "rows"]
    assert _runs(written)[0][1] <= 700
    monkeypatch.setattr(mapping, "_REFUSALS", 10**9)  # and without the rule:
    assert outcome(tmp_path, "again", src, "gsm8k", {}, columnar=True) == by_columns
    assert tries < len(parsed) - tries  # fewer attempts with it
    assert by_columns == outcome(tmp_path, "rows", src, "gsm8k", {}, columnar=False)


def _odd_source(tmp: Path, rows: list[Any], suffix: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`rows` as a file read in batches of about 360 rows, cut down to fewer than 16."""
    src = tmp / f"src{suffix}"
    if suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), src)
    else:
        _write(src, rows, "\n")
    monkeypatch.setattr(chunk, "BLOCK", 16384)
    monkeypatch.setattr(parquet, "_PARQUET_ROWS", 360)
    monkeypatch.setattr(mapping, "_SMALLEST", 8)
    return src


def test_a_column_the_same_on_every_line_is_confirmed_once(tmp_path: Path) -> None:
    """Text that is the same bytes on every line parses to the same value: the first line's
    confirmation stands for all, and every row's JSON text is the first's. A line that differs
    there makes the batch confirm each line again."""
    tools = [{"type": "function", "name": "f", "parameters": {"p": 0.5, "q": [1, 2]}}]
    same = [_nemo(tools=tools, n=i) for i in range(3)]
    differs = [*same[:2], _nemo(tools=[{**tools[0], "name": "g"}], n=2)]
    for lines, alike in ((same, True), (differs, False)):
        piece = "".join(json.dumps(line) + "\n" for line in lines).encode()
        parsed = [json.loads(line) for line in piece.splitlines()]
        table = jsonl._parse(piece, 3, None, lambda parsed=parsed: parsed, frozenset())
        seen = jsonl.confirmed(table.schema.field("tools"))
        assert seen.confirmed and seen.same == alike
        texts, _ = json_columns(table, ["tools"], lambda parsed=parsed: parsed)
        assert [json.loads(t) for t in texts["tools"].to_pylist()] == [r["tools"] for r in parsed]


def _nemo_rows(path: Path, rows: int) -> Path:
    """NeMo Gym rows with a tool list and, every other row, a conversation: more than one
    piece of source text, two templates in each batch."""
    tools = [
        {"type": "function", "name": n, "description": f"{n} two numbers", "strict": True,
         "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}
        for n in ("add", "multiply")
    ]  # fmt: skip
    with path.open("w", encoding="utf-8") as f:
        for i in range(rows):
            said = [{"role": "user", "content": f"What is {i} + 1? " + "x" * 200}]
            if i % 2:
                said[:0] = [{"role": "system", "content": "Answer in \\boxed{}."}]
            row = {
                "responses_create_params": {"input": said, "tools": tools},
                "expected_answer": str(i + 1),
                "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"},
                "metadata": {"level": i % 5, "p": 0.25},
            }
            f.write(json.dumps(row) + "\n")
    assert path.stat().st_size > 2 * chunk.BLOCK
    return path


def test_a_columnar_import_leaves_no_cycles_of_its_own(tmp_path: Path) -> None:
    """Each batch's source text and tables are freed when it is done, not when the cyclic
    collector next runs: a closure holding the object that holds it (a batch's ids, a
    chunk's parsed rows) kept every batch of a run alive until then."""
    import gc
    import types

    src = _nemo_rows(tmp_path / "n.jsonl", 4000)
    assert columnar_reads(src, "nemo")
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        import_sources(tmp_path / "out", {"train": [str(src)]}, "nemo", name="n")
        gc.collect()
        ours = [
            o
            for o in gc.garbage
            if (isinstance(o, types.FunctionType) and o.__module__.startswith("taskpack"))
            or type(o).__module__.startswith("taskpack")
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert ours == []


def test_chunks_are_parsed_one_ahead_in_order(tmp_path: Path) -> None:
    """`parsed_ahead` hands out the very chunks, in order, each table parsed at most one chunk
    ahead of the one being read, and a parse's refusal comes where its table is asked for."""
    src = _nemo_rows(tmp_path / "n.jsonl", 4000)
    plain = list(jsonl.jsonl_chunks(str(src)))
    tables = [c.table() for c in plain if isinstance(c, chunk.Chunk)]
    parsed: list[int] = []
    real = jsonl._parse

    def counted(piece: bytes, *args: Any) -> pa.Table:
        parsed.append(len(piece))
        return real(piece, *args)

    jsonl._parse = counted  # type: ignore[assignment]
    try:
        ahead = chunk.parsed_ahead(jsonl.jsonl_chunks(str(src)))
        seen = 0
        for item, same, table in zip(ahead, plain, tables, strict=True):
            assert isinstance(item, chunk.Chunk) and isinstance(same, chunk.Chunk)
            assert len(parsed) <= seen + 2  # this one and at most the next
            assert item.table().equals(table) and item.rows == same.rows
            seen += 1
        parsed.clear()  # a reader that asks for no table (rows gone row by row):
        assert len(list(chunk.parsed_ahead(jsonl.jsonl_chunks(str(src))))) == seen
        assert len(parsed) <= 2  # no parse past the first two
    finally:
        jsonl._parse = real  # type: ignore[assignment]
    assert seen == len(plain) > 2

    def refused() -> pa.Table:
        raise NotColumnar("no")

    bad = chunk.Chunk(refused, plain[0].records, plain[0].parsed, 1, plain[0].cut)
    got = list(chunk.parsed_ahead(iter([bad, 7])))
    assert got[1] == 7
    with pytest.raises(NotColumnar, match="no"):
        got[0].table()
