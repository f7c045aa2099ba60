"""The columnar import path writes what the row path writes: the same stored rows, digests and
errors, on every data set in shared/data and on rows made to trip each batch check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from taskpack.converters import _columnar, reader
from taskpack.converters._columnar import NotColumnar
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources

from .test_records import SOURCES, _id


def outcome(tmp: Path, name: str, src: Path, fmt: str, options: dict[str, Any], columnar: bool):
    """(manifest digest, split digest, stored table) of an import, or its error message."""
    target = tmp / name
    try:
        result = import_sources(
            target, {"test": [str(src)]}, fmt, options=options, name="x", columnar=columnar
        )
    except TaskpackError as e:
        return str(e)
    table = pq.read_table(target / "splits" / "test.parquet")
    return result.manifest.digest, result.manifest.splits["test"].digest, table.to_pylist()


def columnar_reads(src: Path, fmt: str) -> bool:
    """Whether the format's columnar reader takes the whole source (not giving up)."""
    read_columns = reader(fmt).read_columns
    if read_columns is None:
        return False
    try:
        for _ in read_columns(str(src), "test", reader(fmt).read_options()):
            pass
    except NotColumnar:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES, ids=_id)
def test_both_paths_write_the_same_task_set(
    tmp_path: Path, source: tuple[str, Path, dict[str, Any]]
) -> None:
    fmt, src, options = source
    by_rows = outcome(tmp_path, "rows", src, fmt, options, columnar=False)
    by_columns = outcome(tmp_path, "columns", src, fmt, options, columnar=True)
    assert by_columns == by_rows
    if fmt == "gsm8k":  # the real data takes the columnar path, not the fallback
        assert columnar_reads(src, fmt)


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
    monkeypatch.setattr(_columnar, "_BLOCK", 4096)
    assert len(list(_columnar.jsonl_batches(str(src)))) > 10
    by_columns = outcome(tmp_path, "columns", src, "gsm8k", {}, columnar=True)
    by_rows = outcome(tmp_path, "rows", src, "gsm8k", {}, columnar=False)
    assert by_columns == by_rows
    assert not isinstance(by_columns, str) and by_columns[2][2999]["id"] == "test-02999"
