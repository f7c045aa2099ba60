"""Opening a source the same way for every reader: any fsspec URL, compressed or not, streamed,
its lines bounded (`TASKPACK_MAX_LINE_BYTES`)."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from taskpack.base.settings import number
from taskpack.errors import TaskpackError

_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2", ".xz": "xz"}


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


def max_line_bytes() -> int:
    """The longest JSON line (or whole JSON document) read: `TASKPACK_MAX_LINE_BYTES`, 64 MiB
    by default."""
    return number("TASKPACK_MAX_LINE_BYTES", 64 << 20, "a number of bytes")


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
        self.cap = number("TASKPACK_MAX_DECOMPRESSED", 16 << 30, "a number of bytes")
        self.ratio = number("TASKPACK_MAX_RATIO", 1000, "a whole ratio")
        self.deadline = time.monotonic() + number(
            "TASKPACK_MAX_DECOMPRESS_SECONDS", 3600, "whole seconds"
        )

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
