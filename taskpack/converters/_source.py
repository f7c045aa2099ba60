"""Reading source files the same way for every reader: any fsspec URL, compressed or not,
streamed, each row tagged with the place it came from.

A reader never raises for one bad row: it yields a `Record` carrying the error, so the importer
decides whether to stop (the default) or skip the row and report it (`--skip-invalid`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from taskpack.errors import TaskpackError
from taskpack.nesting import parse_json

_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2", ".xz": "xz"}


@dataclass
class Record:
    """One source row on its way to a task: where it is, and the task mapping or the reason."""

    where: str
    task: Any = None  # the source row, then the task (a mapping, or a Task already validated)
    error: str | None = None
    line: int | None = None
    types: str | None = None  # the Arrow types of the row's non-JSON columns (`_arrowjson`)


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


class _Counted(io.RawIOBase):
    """The compressed stream, counting what the decompressor took from it."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner, self.count = inner, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        self.count += len(data)
        buffer[: len(data)] = data
        return len(data)


class _Zstd(io.RawIOBase):
    """zstd frames, one after another, each to its end: the `zstandard` stream reader returns
    what it has when the input stops inside a frame (at a block boundary, half a file reads
    as a whole one), so the decompressor's own end-of-frame flag is checked here. Input goes
    in 2 KiB at a time, which bounds what one call can put out (about 64 MiB)."""

    def __init__(self, inner: IO[bytes], uri: str) -> None:
        import zstandard

        self.inner, self.uri, self._new = inner, uri, zstandard.ZstdDecompressor().decompressobj
        self._error = zstandard.ZstdError
        self._frame: Any = None
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            data = self.inner.read(2048)
            if not data:
                if self._frame is not None and not self._frame.eof:
                    raise EOFError("the input ends inside a zstd frame (truncated)")
                return 0
            while data:
                if self._frame is None or self._frame.eof:
                    self._frame = self._new()
                try:
                    self._pending += self._frame.decompress(data)
                except self._error as e:
                    raise ValueError(f"not valid zstd ({e})") from None
                data = self._frame.unused_data if self._frame.eof else b""
        n = min(len(buffer), len(self._pending))
        buffer[:n], self._pending = self._pending[:n], self._pending[n:]
        return n


class _Capped(io.RawIOBase):
    """Decompressed input that fails once it passes a bound: more than `cap` bytes, more than
    `ratio` times the compressed bytes read (past the first MiB), or longer than `seconds`
    since it was opened (parsing included). A decompression bomb stops with an error instead of
    filling the disk or the memory, or running for hours (6.6 KB of bzip2 is 8 GB of blank
    lines)."""

    def __init__(self, inner: IO[bytes], raw: _Counted, uri: str) -> None:
        import time

        self.inner, self.raw, self.uri, self.count = inner, raw, uri, 0
        self.cap = limit("TASKPACK_MAX_DECOMPRESSED", 16 << 30)
        self.ratio = limit("TASKPACK_MAX_RATIO", 1000)
        self.deadline = time.monotonic() + limit("TASKPACK_MAX_DECOMPRESS_SECONDS", 3600)

    def readable(self) -> bool:
        return True

    def _refuse(self, what: str, variable: str) -> TaskpackError:
        return TaskpackError(f"{self.uri}: {what} (raise {variable} to allow more)")

    def readinto(self, buffer: Any) -> int:
        import lzma
        import time
        import zlib

        try:
            data = self.inner.read(len(buffer))
        except (lzma.LZMAError, zlib.error) as e:  # the others raise OSError or ValueError
            raise ValueError(f"corrupt compressed data ({e})") from None
        self.count += len(data)
        if self.count > self.cap:
            raise self._refuse(
                f"more than {self.cap} bytes after decompression", "TASKPACK_MAX_DECOMPRESSED"
            )
        if self.count > 1 << 20 and self.count > self.ratio * self.raw.count:
            raise self._refuse(
                f"decompresses to more than {self.ratio} times its size", "TASKPACK_MAX_RATIO"
            )
        if time.monotonic() > self.deadline:
            raise self._refuse(
                "still decompressing after TASKPACK_MAX_DECOMPRESS_SECONDS",
                "TASKPACK_MAX_DECOMPRESS_SECONDS",
            )
        buffer[: len(data)] = data
        return len(data)


def _decompressed(raw: IO[bytes], codec: str, uri: str) -> IO[bytes]:
    """`raw` decompressed by `codec`, to the end of its last stream: gzip, bzip2 and xz raise
    EOFError where the input stops early, and so does `_Zstd`."""
    import bz2
    import gzip
    import lzma

    if codec == "gzip":
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    if codec == "bz2":
        return bz2.BZ2File(raw)
    if codec == "xz":
        return lzma.LZMAFile(raw)
    return io.BufferedReader(_Zstd(raw, uri), 1 << 20)


def _opened(uri: str, local: bool) -> Any:
    if local:
        return open(uri, "rb")  # the caller's `with` closes it
    import fsspec

    return fsspec.open(uri, "rb")


@contextlib.contextmanager
def open_binary(uri: str) -> Iterator[IO[bytes]]:
    """Open a local path or fsspec URL for streaming reads, decompressing by suffix.

    A local path must be a regular file (a FIFO would block forever); decompressed input must
    end where its format says it ends, and is bounded (`_Capped`). fsspec (a tenth of a second
    to import) is loaded only for a URL."""
    local = "://" not in uri
    if local and os.path.exists(uri) and not os.path.isfile(uri):
        raise TaskpackError(f"{uri}: not a regular file")
    codec = compression(uri)
    try:
        with _opened(uri, local) as f:
            if codec is None:
                yield f
            else:
                raw = _Counted(f)
                inner = _decompressed(io.BufferedReader(raw, 1 << 16), codec, uri)
                yield io.BufferedReader(_Capped(inner, raw, uri), 1 << 20)
    except FileNotFoundError:
        raise TaskpackError(f"{uri}: no such file") from None
    except (OSError, EOFError, ValueError) as e:  # truncated or corrupt compressed data
        raise TaskpackError(f"{uri}: cannot be read ({type(e).__name__}: {e})") from None


def line_count(uri: str) -> int | None:
    """The lines of a local text file (the last one counted without its newline too), read
    in 4 MiB blocks; None for a URL or anything not a file."""
    if "://" in uri or not Path(uri).is_file():
        return None
    count, last = 0, b"\n"
    with open_binary(uri) as f:
        while block := f.read(1 << 22):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def rows_hint(uri: str) -> int | None:
    """About how many rows a local source holds, for a progress bar's total and ETA: a JSON
    Lines file's lines, a CSV's lines but its header, a Parquet file's rows; None otherwise."""
    suffix = base_suffix(uri)
    if suffix == ".parquet" and "://" not in uri and Path(uri).is_file():
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(uri).metadata.num_rows)
        except (pa.ArrowInvalid, OSError):
            return None  # the reader says what is wrong with it, in one line
    if suffix in (".jsonl", ".csv", ".tsv"):
        lines = line_count(uri)
        return None if lines is None else max(0, lines - (suffix != ".jsonl"))
    return None


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
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        yield from arrow_records(pq.ParquetFile(stream).iter_batches(batch_size=1024), where)
    except (pa.ArrowInvalid, OSError) as e:
        raise TaskpackError(f"{where}: not a readable Parquet file ({e})") from None


def arrow_records(
    batches: Iterable[Any], where: str, first: int = 0, lines: bool = True
) -> Iterator[Record]:
    """The records of a table's rows read as Arrow record batches, the first being row `first`
    of `where`; `lines`: row N is line N + 1, as for Parquet (a CSV row's line is not known
    from its table)."""
    from taskpack.converters._arrowjson import json_row, row_types

    number = first
    for batch in batches:
        types = row_types(batch.schema)  # timestamps, decimals, bytes: as JSON, typed beside
        for row in batch.to_pylist():
            if types is not None:
                row = json_row(row, batch.schema)
            line = number + 1 if lines else None
            yield Record(f"{where}: row {number}", task=row, line=line, types=types)
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
