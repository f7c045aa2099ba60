"""The file-system moves every reader and writer here relies on, written once.

`write_atomic`: readers see the old file or the whole new one, never a half-written one.
`remove_tree`: a staging folder removed, whatever is left in it.
`file_lock`: one process (or thread) at a time per lock file, on any platform.
`check_regular`: a path about to be opened is a regular file (a FIFO would block forever).
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to a temporary file beside `path` (given `mode`, if any), then rename it
    into place; a link at `path` itself is replaced, never followed."""

    def fill(tmp: Path) -> None:
        tmp.write_bytes(data)
        if mode is not None:
            tmp.chmod(mode)

    _atomic(path, fill)


def copy_atomic(source: Path, path: Path) -> None:
    """Copy the file `source` to `path` the same way: whole or not at all."""
    import shutil  # not on the read path: `import taskpack` stays light

    _atomic(path, lambda tmp: shutil.copyfile(source, tmp))


def _atomic(path: Path, fill: Callable[[Path], object]) -> None:
    # The file is created by open(), so it gets the mode the user's umask gives (0644 with the
    # usual 022): a registry folder shared by a team stays readable to it.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        fill(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created if missing) for the duration of the block, between
    processes and threads, on any platform (the `filelock` package)."""
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path, thread_local=False):
        yield


def check_regular(path: Path) -> None:
    """Raise FileNotFoundError if `path` is missing, TaskpackError if it is not a regular file."""
    from taskpack.errors import TaskpackError

    if not stat.S_ISREG(os.stat(path).st_mode):
        raise TaskpackError(f"{path}: not a regular file")
