"""The file-system moves every reader and writer here relies on, written once.

`write_atomic`: readers see the old file or the whole new one, never a half-written one.
`file_lock`: one process at a time per lock file, across processes on one machine.
`check_regular`: a path about to be opened is a regular file (a FIFO would block forever).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created if missing) for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def check_regular(path: Path) -> None:
    """Raise FileNotFoundError if `path` is missing, TaskpackError if it is not a regular file."""
    from taskpack.errors import TaskpackError

    if not stat.S_ISREG(os.stat(path).st_mode):
        raise TaskpackError(f"{path}: not a regular file")
