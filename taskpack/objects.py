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
from pathlib import Path
from typing import BinaryIO, Protocol

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
    """This machine's cache: `TASKPACK_CACHE`, else `taskpack` in the user's cache folder."""
    env = os.environ.get("TASKPACK_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "taskpack"


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
            raise TaskpackError(f"more than the {self._limit} bytes its manifest lists")
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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
