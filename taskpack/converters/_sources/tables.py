"""A table source of any kind, by its suffix: its rows for the row path, its chunks for the
columnar path."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from taskpack.converters._sources.chunk import Chunk, Lines, NotColumnar
from taskpack.converters._sources.opening import base_suffix, open_binary
from taskpack.converters._sources.records import Record
from taskpack.errors import TaskpackError


def iter_table_rows(
    uri: str,
    *,
    member: str | None = None,
    delimiter: str | None = None,
    strip_headers: bool = False,
) -> Iterator[Record]:
    """Rows of any table: CSV, TSV, JSONL/JSON, Parquet, or one of those inside a .zip."""
    with open_binary(uri) as f:
        if base_suffix(uri) != ".zip":
            yield from _table_rows(f, uri, uri, delimiter, strip_headers)
            return
        try:
            yield from _zip_rows(f, uri, member, delimiter, strip_headers)
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError) as e:
            raise TaskpackError(f"{uri}: not a readable zip ({e})") from None


def _zip_rows(
    f: IO[bytes], uri: str, member: str | None, delimiter: str | None, strip_headers: bool
) -> Iterator[Record]:
    with zipfile.ZipFile(f) as zf:
        tables = [n for n in zf.namelist() if not n.endswith("/")]
        if member is None:
            if len(tables) != 1:
                raise TaskpackError(f"{uri}: holds {len(tables)} files; pick one with --member")
            member = tables[0]
        if member not in tables:
            raise TaskpackError(f"{uri}: no member {member!r} (members: {', '.join(tables)})")
        with zf.open(member) as inner:
            yield from _table_rows(inner, member, f"{uri}!{member}", delimiter, strip_headers)


def _table_rows(
    stream: IO[bytes], name: str, where: str, delimiter: str | None, strip_headers: bool
) -> Iterator[Record]:
    suffix = base_suffix(name)
    if suffix in (".jsonl", ".ndjson"):
        from taskpack.converters._sources.jsonl import json_lines

        yield from json_lines(stream, where)
    elif suffix == ".json":
        from taskpack.converters._sources.jsonl import _json_list

        yield from _json_list(stream, where)
    elif suffix == ".parquet":
        from taskpack.converters._sources.parquet import _parquet_rows

        yield from _parquet_rows(stream, where)
    elif suffix in (".csv", ".tsv", ".txt"):
        sep = delimiter or ("\t" if suffix == ".tsv" else ",")
        from taskpack.converters._sources.csv import iter_csv_rows

        yield from iter_csv_rows(stream, where, sep, strip_headers)
    else:
        raise TaskpackError(f"{where}: unknown table type {suffix!r} (csv, tsv, jsonl, parquet)")


def table_chunks(
    uri: str,
    delimiter: str | None = None,
    strip_headers: bool = False,
    keyed: bool = False,
    by_field: frozenset[str] = frozenset(),
    lines: Lines = None,
) -> Iterator[Chunk | int]:
    """A local table (JSON Lines, CSV/TSV, Parquet; compressed or not) in chunks of rows (see
    `Chunk`), else `NotColumnar`. `keyed`: every row's keys come in its table's column order
    (see `_parse`); `by_field`: columns of objects the reader takes field by field
    (`fields_table`), each field's text checked against the lines, not the whole object's.
    With `lines`, a count of rows passed over may come between chunks."""
    if "://" in uri or not Path(uri).is_file():
        raise NotColumnar(uri)
    suffix = base_suffix(uri)
    if suffix == ".jsonl":
        from taskpack.converters._sources.chunk import parsed_ahead
        from taskpack.converters._sources.jsonl import jsonl_chunks

        return parsed_ahead(jsonl_chunks(uri, keyed, by_field, lines))
    if lines is not None:
        raise NotColumnar("lines of a source other than JSON Lines")
    if suffix in (".csv", ".tsv", ".txt"):
        from taskpack.converters._sources.csv import csv_chunks

        return csv_chunks(uri, delimiter or ("\t" if suffix == ".tsv" else ","), strip_headers)
    if suffix == ".parquet":
        from taskpack.converters._sources.parquet import parquet_chunks

        return parquet_chunks(uri)
    raise NotColumnar(uri)
