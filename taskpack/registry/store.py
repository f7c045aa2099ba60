"""Key-value storage under a registry: the few operations publish and pull need, and no more.

A registry over an object store keeps everything as keys below one root:

    objects/sha256/<ab>/<hash>             split Parquet files and large task files, by content
    sets/<name>/versions/<version>.json    manifests: created once, never changed
    sets/<name>/tags/<tag>.json            movable pointers, changed by compare-and-swap

Content-addressed objects can be written unconditionally (same key, same bytes); manifests need
create-only writes and tags need compare-and-swap, which every store provides here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from taskpack.base.fs import check_regular, file_lock, fill_atomic
from taskpack.base.objects import HashedSource, Progress, Sink, file_sha256
from taskpack.base.settings import number
from taskpack.errors import TaskpackError


def network_timeout() -> float:
    """Seconds a request may take (TASKPACK_NETWORK_TIMEOUT, 60): to connect, for the next
    bytes, and for the whole request beyond the time its bytes take (`bounded`); a server that
    never answers, or trickles, fails the call instead of hanging it."""
    return number("TASKPACK_NETWORK_TIMEOUT", 60.0, "seconds")


def min_transfer_rate() -> float:
    """Bytes per second below which a transfer has stalled (TASKPACK_MIN_TRANSFER_RATE, 64 KiB)."""
    return max(number("TASKPACK_MIN_TRANSFER_RATE", float(64 << 10), "bytes per second"), 1.0)


T = TypeVar("T")
PAGE_BYTES = 1 << 20  # what one page of a listing may take: a MiB's time at the floor rate
# What one read of a download asks for. A MiB a read cost a pull of 126 MB from S3 on
# loopback 0.1-0.4 s of kernel time in one round out of three (0.28-0.72 s a pull, against
# 0.30-0.49 s at 256 KiB): each read's fresh buffer is above malloc's mmap threshold.
READ_BYTES = 256 << 10


def bounded(where: str, call: Callable[[Callable[[int], None]], T]) -> T:
    """`call(tick)`, given up once it has run longer than TASKPACK_NETWORK_TIMEOUT plus the
    time the bytes it reported through `tick` take at `min_transfer_rate()`.

    A client's own timeouts are per read: a server that sends a byte every few seconds keeps
    each read alive forever. So the call runs in a thread of its own, watched from here; one
    given up is left to its own timeouts (a daemon thread, ended with the process)."""
    import threading
    import time

    timeout, rate = network_timeout(), min_transfer_rate()
    moved = [0]
    outcome: dict[str, Any] = {}

    def tick(n: int) -> None:
        moved[0] += n

    def run() -> None:
        try:
            outcome["value"] = call(tick)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread as it is
            outcome["error"] = e

    worker = threading.Thread(target=run, daemon=True, name=f"taskpack: {where}")
    start = time.monotonic()
    worker.start()
    while True:
        worker.join(min(0.5, timeout))
        if not worker.is_alive():
            break
        if time.monotonic() - start > timeout + moved[0] / rate:
            raise TaskpackError(
                f"{where}: no complete answer within {time.monotonic() - start:.0f} s "
                "(TASKPACK_NETWORK_TIMEOUT, TASKPACK_MIN_TRANSFER_RATE)"
            )
    if "error" in outcome:
        raise outcome["error"]
    return cast(T, outcome["value"])


class PreconditionFailed(TaskpackError):
    """A create-only write found the key present, or a compare-and-swap found it changed."""


class Store(ABC):
    url: str

    @abstractmethod
    def read(self, key: str) -> tuple[bytes, str] | None:
        """The value and its version tag (ETag), or None when the key is absent."""

    @abstractmethod
    def write(
        self, key: str, data: bytes, *, create_only: bool = False, if_match: str | None = None
    ) -> None:
        """Write a small value; raises PreconditionFailed when the condition does not hold."""

    @abstractmethod
    def sha256(self, key: str) -> str | None:
        """The hash of the bytes stored at `key` (read in full), or None when it is absent."""

    @abstractmethod
    def list(self, prefix: str) -> list[str]:
        """Keys below `prefix`, relative to it."""

    @abstractmethod
    def upload(self, key: str, path: Path, sha: str, progress: Progress | None = None) -> None:
        """Upload a (possibly large) file to `key`, unconditionally, hashing its bytes as they
        are sent: unless they hash to `sha` it raises WrongBytes and `key` is left as it was
        (a wrong object never lands, even for a moment, where another publisher's right one
        may already be named by a manifest)."""

    @abstractmethod
    def download(self, key: str, out: Sink, progress: Progress | None = None) -> None:
        """Stream `key` into `out`."""

    def tail(self, key: str, size: int) -> bytes | None:
        """The last `size` bytes at `key` by a range request, where the store has them (None
        where ranges cost as much as the whole)."""
        return None


class LocalStore(Store):
    """A registry folder on a local or shared file system: the embedded default."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = root.as_uri()

    def _path(self, key: str) -> Path:
        return self.root / key

    def read(self, key: str) -> tuple[bytes, str] | None:
        try:
            data = self._path(key).read_bytes()
        except FileNotFoundError:
            return None
        return data, hashlib.sha256(data).hexdigest()

    def _lock(self, key: str) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.root / ".locks" / hashlib.sha256(key.encode()).hexdigest()[:32])

    def _temp(self, target: Path, data: bytes) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
        tmp.write_bytes(data)
        return tmp

    def write(
        self, key: str, data: bytes, *, create_only: bool = False, if_match: str | None = None
    ) -> None:
        target = self._path(key)
        tmp = self._temp(target, data)
        try:
            if create_only:
                try:
                    os.link(tmp, target)  # atomic, and fails if the key exists
                except FileExistsError:
                    raise PreconditionFailed(f"{self.url}/{key} already exists") from None
                return
            with self._lock(key):
                if if_match is not None:
                    current = self.read(key)
                    if current is None or current[1] != if_match:
                        raise PreconditionFailed(f"{self.url}/{key} changed")
                os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)

    def sha256(self, key: str) -> str | None:
        path = self._path(key)
        return file_sha256(path) if path.is_file() else None

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix)
        if not base.is_dir():
            return []
        return sorted(
            p.relative_to(base).as_posix()
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )

    def upload(self, key: str, path: Path, sha: str, progress: Progress | None = None) -> None:
        import shutil

        def fill(tmp: Path) -> None:
            with path.open("rb") as f, tmp.open("wb") as out:
                source = HashedSource(f)
                shutil.copyfileobj(source, out, 1 << 20)
                source.require(sha, path)

        check_regular(path)
        fill_atomic(self._path(key), fill)
        if progress:
            progress(path.stat().st_size)

    def download(self, key: str, out: Sink, progress: Progress | None = None) -> None:
        try:
            with self._path(key).open("rb") as f:
                while block := f.read(1 << 20):
                    out.write(block)
                    if progress:
                        progress(len(block))
        except FileNotFoundError:
            raise TaskpackError(f"{self.url}/{key}: missing from the registry") from None
