"""Reading source files the same way for every reader: any fsspec URL, compressed or not,
streamed, each row tagged with the place it came from.

A reader never raises for one bad row: it yields a `Record` carrying the error, so the importer
decides whether to stop (the default) or skip the row and report it (`--skip-invalid`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from taskpack.errors import TaskpackError

_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2", ".xz": "xz"}


@dataclass
class Record:
    """One source row on its way to a task: where it is, and the task mapping or the reason."""

    where: str
    task: Any = None  # the source row, then the task (a mapping, or a Task already validated)
    error: str | None = None
    line: int | None = None


class RowError(ValueError):
    """A source row that cannot become a task; `str(e)` says which field and why."""


def need(row: dict[str, Any], key: str, kind: type = str) -> Any:
    """`row[key]`, which must be present and of `kind`, named in the error otherwise."""
    if key not in row:
        raise RowError(f"field {key!r}: missing (fields: {', '.join(map(str, row)) or 'none'})")
    value = row[key]
    if not isinstance(value, kind):
        raise RowError(f"field {key!r}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def map_rows(
    records: Iterator[Record],
    convert: Callable[[dict[str, Any], int], dict[str, Any]],
    first: int = 0,
) -> Iterator[Record]:
    """Turn each good record's source row into a task mapping; a RowError marks the record bad.

    `convert` gets the row and its ordinal among the source's rows, for stable generated ids
    (`first`: the ordinal of the first record, when they start past the source's first row).
    """
    for ordinal, record in enumerate(records, start=first):
        if record.task is not None:
            try:
                record.task = convert(record.task, ordinal)
            except RowError as e:
                record.task, record.error = None, str(e)
        yield record


def compression(uri: str) -> str | None:
    for suffix, name in _COMPRESSIONS.items():
        if uri.endswith(suffix):
            return name
    return None


def base_suffix(uri: str) -> str:
    """The file type under any compression suffix: `train.jsonl.gz` -> `.jsonl`."""
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    if compression(name):
        name = name.rsplit(".", 1)[0]
    return "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""


def limit(name: str, default: int) -> int:
    """A size limit on input, configurable by an environment variable (see SECURITY.md)."""
    value = os.environ.get(name)
    try:
        return int(value) if value else default
    except ValueError:
        raise TaskpackError(f"{name}={value!r}: expected a number of bytes") from None


def max_line_bytes() -> int:
    """The longest JSON line (or whole JSON document) read: `TASKPACK_MAX_LINE_BYTES`, 64 MiB
    by default."""
    return limit("TASKPACK_MAX_LINE_BYTES", 64 << 20)


class _Capped(io.RawIOBase):
    """A stream that fails once more than `cap` bytes came out of it: a decompression bomb
    stops with an error instead of filling the disk or the memory."""

    def __init__(self, inner: IO[bytes], cap: int, uri: str) -> None:
        self.inner, self.cap, self.uri, self.count = inner, cap, uri, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        self.count += len(data)
        if self.count > self.cap:
            raise TaskpackError(
                f"{self.uri}: more than {self.cap} bytes after decompression "
                "(raise TASKPACK_MAX_DECOMPRESSED to allow more)"
            )
        buffer[: len(data)] = data
        return len(data)


@contextlib.contextmanager
def open_binary(uri: str) -> Iterator[IO[bytes]]:
    """Open a local path or fsspec URL for streaming reads, decompressing by suffix.

    A local path must be a regular file (a FIFO would block forever); decompressed input is
    capped (TASKPACK_MAX_DECOMPRESSED, 16 GiB by default)."""
    import fsspec

    local = "://" not in uri
    if local and os.path.exists(uri) and not os.path.isfile(uri):
        raise TaskpackError(f"{uri}: not a regular file")
    codec = compression(uri)
    try:
        with fsspec.open(uri, "rb", compression=codec) as f:
            if codec is None:
                yield f
            else:
                cap = limit("TASKPACK_MAX_DECOMPRESSED", 16 << 30)
                yield io.BufferedReader(_Capped(f, cap, uri), 1 << 20)
    except FileNotFoundError:
        raise TaskpackError(f"{uri}: no such file") from None
    except (OSError, EOFError, ValueError) as e:  # truncated or corrupt compressed data
        raise TaskpackError(f"{uri}: cannot be read ({type(e).__name__}: {e})") from None


def _json_list(stream: IO[bytes], where: str) -> Iterator[Record]:
    most = max_line_bytes()
    data = stream.read(most + 1)
    if len(data) > most:
        raise TaskpackError(f"{where}: a JSON document over {most} bytes; use JSON Lines")
    try:
        rows = parse_json(data)
    except ValueError as e:
        raise TaskpackError(f"{where}: {e}") from None
    if not isinstance(rows, list):
        raise TaskpackError(f"{where}: expected a JSON list of objects")
    for i, row in enumerate(rows):
        yield _object(row, f"{where}: item {i}", i + 1)


def _lines(stream: IO[bytes], most: int) -> Iterator[bytes | None]:
    """The stream's lines; None for a line longer than `most` bytes, read past in bounded
    memory."""
    while True:
        line = stream.readline(most + 1)
        if not line:
            return
        if len(line) <= most or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = stream.readline(1 << 20)
        yield None


def parse_json(raw: bytes | str) -> Any:
    """JSON text, with every way it can fail as one ValueError that says why."""
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise ValueError("line is not valid UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise ValueError(f"not valid JSON ({e})") from None


def json_lines(stream: IO[bytes], uri: str, first: int = 1) -> Iterator[Record]:
    """The JSON Lines records of `stream`, its first line being line `first` of `uri`."""
    most = max_line_bytes()
    for number, raw in enumerate(_lines(stream, most), start=first):
        where = f"{uri}:{number}"
        if raw is None:
            error = f"line longer than {most} bytes (raise TASKPACK_MAX_LINE_BYTES to allow it)"
            yield Record(where, error=error, line=number)
            continue
        if not raw.strip():
            continue
        try:
            row = parse_json(raw)
        except ValueError as e:
            yield Record(where, error=str(e), line=number)
        else:
            yield _object(row, where, number)


def _object(row: Any, where: str, line: int) -> Record:
    if not isinstance(row, dict):
        return Record(where, error=f"expected a JSON object, got {type(row).__name__}", line=line)
    return Record(where, task=row, line=line)


def _parquet_rows(stream: IO[bytes], where: str) -> Iterator[Record]:
    import pyarrow.parquet as pq

    yield from arrow_records(pq.ParquetFile(stream).iter_batches(batch_size=1024), where)


def arrow_records(
    batches: Iterable[Any], where: str, first: int = 0, lines: bool = True
) -> Iterator[Record]:
    """The records of a table's rows read as Arrow record batches, the first being row `first`
    of `where`; `lines`: row N is line N + 1, as for Parquet (a CSV row's line is not known
    from its table)."""
    number = first
    for batch in batches:
        for row in batch.to_pylist():
            yield Record(f"{where}: row {number}", task=row, line=number + 1 if lines else None)
            number += 1


def iter_csv_rows(
    stream: IO[bytes], where: str, delimiter: str, strip_headers: bool
) -> Iterator[Record]:
    """CSV/TSV rows as {column: text}; BOM and CRLF handled, quoted newlines kept verbatim."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    reader = csv.reader(text, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except UnicodeDecodeError as e:
        raise TaskpackError(f"{where}:1: header is not valid UTF-8 ({e.reason})") from None
    if strip_headers:
        header = [h.strip() for h in header]
    if len(set(header)) != len(header):
        raise TaskpackError(f"{where}:1: duplicate column names in header {header}")
    line = 1
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except UnicodeDecodeError as e:
            raise TaskpackError(
                f"{where}:{reader.line_num + 1}: not valid UTF-8 ({e.reason})"
            ) from None
        except csv.Error as e:
            yield Record(f"{where}:{reader.line_num}", error=f"bad CSV ({e})", line=reader.line_num)
            continue
        start, line = line + 1, reader.line_num
        if not values:
            continue
        if len(values) != len(header):
            yield Record(
                f"{where}:{start}",
                error=f"{len(values)} values for {len(header)} columns",
                line=start,
            )
            continue
        yield Record(f"{where}:{start}", task=dict(zip(header, values, strict=True)), line=start)


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
        yield from json_lines(stream, where)
    elif suffix == ".json":
        yield from _json_list(stream, where)
    elif suffix == ".parquet":
        yield from _parquet_rows(stream, where)
    elif suffix in (".csv", ".tsv", ".txt"):
        sep = delimiter or ("\t" if suffix == ".tsv" else ",")
        yield from iter_csv_rows(stream, where, sep, strip_headers)
    else:
        raise TaskpackError(f"{where}: unknown table type {suffix!r} (csv, tsv, jsonl, parquet)")
