"""Where content-addressed objects live, and how their bytes are named: one layout shared by
task-set folders, registries and the cache, importable without pyarrow or pydantic.

    <task set>/manifest.json
    <task set>/splits/<split>.parquet
    <task set>/blobs/sha256/<ab>/<hash>      files too large to ride inline
    <registry>/objects/sha256/<ab>/<hash>    split files and large files of every version
    <cache>/objects/sha256/<ab>/<hash>
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from io import BufferedReader
from pathlib import Path
from typing import BinaryIO, Protocol

from taskpack.base.fs import check_regular
from taskpack.base.settings import cache_root
from taskpack.errors import TaskpackError

MANIFEST = "manifest.json"
MAX_BLOB = 16 << 30  # a large file's bytes at most: a manifest lists no size for large files
Progress = Callable[[int], None]  # called with each chunk's byte count


def sha256_relpath(sha: str) -> str:
    """Where content `sha` lives in any content-addressed folder here: a two-character
    fan-out keeps directories small."""
    return f"sha256/{sha[:2]}/{sha}"


def blob_relpath(sha: str) -> str:
    return f"blobs/{sha256_relpath(sha)}"


def object_key(sha: str) -> str:
    """Where a registry over a key-value store (a folder, an S3 prefix) keeps object `sha`."""
    return f"objects/{sha256_relpath(sha)}"


def default_cache_dir() -> Path:
    """This machine's cache (`settings.cache_root`, the rule `taskpack.fetch` shares)."""
    return Path(cache_root())


def decoded_path(sha: str) -> Path:
    """Where the cache keeps the decoded copy (Arrow IPC, memory-mapped for random access) of
    the split file whose bytes hash to `sha`."""
    return default_cache_dir() / "decoded" / f"{sha256_relpath(sha)}.arrow"


class Sink(Protocol):
    """Where a download writes: a file, or a buffer, that can start over from its beginning
    (a retried transfer rewinds it)."""

    def write(self, data: bytes, /) -> int: ...

    def seek(self, offset: int, whence: int = 0, /) -> int: ...

    def truncate(self, size: int | None = None, /) -> int: ...


class HashedFile:
    """A file being downloaded, hashed as its bytes are written: an object is hashed once, as
    it streams in, never read back for it, and never holds more than `limit` bytes (what its
    manifest lists), whichever backend sends them. A retry that starts over (`seek(0)`) starts
    the hash and the count over too."""

    def __init__(self, file: BinaryIO, limit: int) -> None:
        self._file = file
        self._limit = limit
        self._hash = hashlib.sha256()
        self._size = 0

    def write(self, data: bytes, /) -> int:
        self._size += len(data)
        if self._size > self._limit:
            raise TaskpackError(f"more than the {self._limit} bytes listed for it")
        self._hash.update(data)
        return self._file.write(data)

    def seek(self, offset: int, whence: int = 0, /) -> int:
        if (offset, whence) != (0, 0):
            raise ValueError("a download only starts over from its beginning")
        self._hash = hashlib.sha256()
        self._size = 0
        return self._file.seek(0)

    def truncate(self, size: int | None = None, /) -> int:
        return self._file.truncate(size)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class WrongBytes(TaskpackError):
    """An object's bytes do not hash to the address its manifest gives them."""


class HashedSource:
    """A file being uploaded, hashed as its bytes are read to be sent: an object is hashed
    once, as it streams out, and a store makes it visible only once `require` holds. Reads
    must run front to back: a read that starts anywhere but where the last ended leaves a hash
    of nothing in particular, so `require` refuses it rather than believe it."""

    def __init__(self, file: BufferedReader) -> None:
        self._file = file
        self._hash = hashlib.sha256()
        self._hashed = 0  # bytes hashed so far, all of them from the file's start
        self._in_order = True

    def read(self, size: int = -1, /) -> bytes:
        at = self._file.tell()
        data = self._file.read(size)
        self._take(at, data)
        return data

    def readinto(self, buffer: bytearray, /) -> int:
        """`read` into `buffer`: an S3 part is sent from a bytearray as it is, where botocore
        wraps bytes in a file it sends a block at a time."""
        at = self._file.tell()
        n = self._file.readinto(buffer)
        self._take(at, memoryview(buffer)[:n])
        return n

    def _take(self, at: int, data: bytes | memoryview) -> None:
        if at != self._hashed:
            self._in_order = False
        else:
            self._hash.update(data)
            self._hashed += len(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def require(self, sha: str, path: Path) -> None:
        """Raise WrongBytes unless the file was read once through, in order, and hashed to
        `sha`."""
        whole = self._hashed == os.fstat(self._file.fileno()).st_size
        if not (self._in_order and whole and self.hexdigest() == sha):
            raise WrongBytes(f"{path} does not hash to {sha}")


def _read_through(source: HashedSource) -> HashedSource:
    while source.read(1 << 20):
        pass
    return source


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return _read_through(HashedSource(f)).hexdigest()


def require_bytes(path: Path, sha: str) -> None:
    """Raise WrongBytes unless the regular file at `path` hashes to `sha` (TaskpackError if it
    is no regular file, OSError if it cannot be read)."""
    check_regular(path)
    with path.open("rb") as f:
        _read_through(HashedSource(f)).require(sha, path)
