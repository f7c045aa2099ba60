"""The file-system moves every reader and writer here relies on, written once.

`write_atomic`, `fill_atomic`: readers see the old file or the whole new one, never a
half-written one.
`temp_beside`, `sweep`: a writer's temporary names say which machine and process made them, so
the next writer removes what a killed one left, and never a live writer's.
`DirWriter`: files written under a folder through directory descriptors, so that a folder
swapped for a link while it runs cannot send a write outside it.
`remove_tree`: a staging folder removed, whatever is left in it.
`file_lock`: one process (or thread) at a time per lock file, on any platform.
`check_regular`: a path about to be opened is a regular file (a FIFO would block forever).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

# The host's name and 48 random bits from `os` alone: socket and uuid (which imports platform)
# cost an episode's start several milliseconds, and every reader imports this module.
_HOST = re.sub(r"[^A-Za-z0-9.]", "_", os.uname().nodename if hasattr(os, "uname") else "") or "host"


def temp_name(name: str, kind: str = "tmp") -> str:
    """A temporary name beside `name`: `.NAME.KIND-HOST-PID-RANDOM`."""
    return f".{name}.{kind}-{_HOST}-{os.getpid()}-{os.urandom(6).hex()}"


def temp_beside(path: Path, kind: str = "tmp") -> Path:
    return path.with_name(temp_name(path.name, kind))


def stale(names: Iterable[str], name: str, kinds: tuple[str, ...] = ("tmp",)) -> list[str]:
    """Those of `names` that are temporaries of `name` whose writer, on this machine, is gone
    (a writer on another machine sharing the folder cannot be asked, so its are left)."""
    prefixes = tuple(f".{name}.{kind}-{_HOST}-" for kind in kinds)
    found = []
    for entry in names:
        if entry.startswith(prefixes):
            pid = entry.rsplit("-", 2)[-2]
            if pid.isdigit() and not _alive(int(pid)):
                found.append(entry)
    return found


def sweep(path: Path, kinds: tuple[str, ...] = ("tmp",)) -> None:
    """Remove what killed writers of `path` left beside it (files or folders)."""
    try:
        names = os.listdir(path.parent)
    except FileNotFoundError:
        return
    for entry in stale(names, path.name, kinds):
        left = path.parent / entry
        if left.is_dir() and not left.is_symlink():
            remove_tree(left)
        else:
            left.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process, or a platform that cannot say: leave it be
    return True


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to a temporary file beside `path` (given `mode`, if any), then rename it
    into place; a link at `path` itself is replaced, never followed."""

    def fill(tmp: Path) -> None:
        tmp.write_bytes(data)
        if mode is not None:
            tmp.chmod(mode)

    fill_atomic(path, fill)


def copy_atomic(source: Path, path: Path) -> None:
    """Copy the file `source` to `path` the same way: whole or not at all."""
    import shutil  # not on the read path: `import taskpack` stays light

    fill_atomic(path, lambda tmp: shutil.copyfile(source, tmp))


def fill_atomic(path: Path, fill: Callable[[Path], object]) -> None:
    """`fill(tmp)` writes a temporary file beside `path`, which then replaces `path`; an error
    it raises leaves `path` as it was."""
    # The file is created by open(), so it gets the mode the user's umask gives (0644 with the
    # usual 022): a registry folder shared by a team stays readable to it.
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep(path)
    tmp = temp_beside(path)
    try:
        fill(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class DirWriter:
    """Writes files below `root` one folder descriptor at a time: each folder is opened with
    O_NOFOLLOW relative to its parent's descriptor, and each file is created (O_EXCL,
    O_NOFOLLOW) and renamed in it, so a path checked is the path written (Linux and macOS)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self._fds = {"": os.open(root, os.O_RDONLY | os.O_DIRECTORY)}

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> DirWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def folder(self, rel: str) -> int:
        """The descriptor of folder `rel` ('a/b'), made if missing; NotADirectoryError where
        a part is a link or a file."""
        if rel in self._fds:
            return self._fds[rel]
        parent, _, name = rel.rpartition("/")
        at = self.folder(parent)
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, dir_fd=at)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=at)
        except OSError:
            found = os.stat(name, dir_fd=at, follow_symlinks=False).st_mode
            what = "a symbolic link" if stat.S_ISLNK(found) else "a file, not a folder"
            raise NotADirectoryError(f"{self.root / rel} is {what}") from None
        self._fds[rel] = fd
        return fd

    def write(self, rel: str, data: bytes, mode: int) -> None:
        """File `rel` holds `data` with `mode`, whole or not at all (a link there is
        replaced, never followed)."""
        parent, _, name = rel.rpartition("/")
        at = self.folder(parent)
        for entry in stale(os.listdir(at), name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry, dir_fd=at)
        tmp = temp_name(name)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=at)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                os.fchmod(f.fileno(), mode)
            os.replace(tmp, name, src_dir_fd=at, dst_dir_fd=at)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=at)


def remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


_REMOVE = "import shutil, sys; shutil.rmtree(sys.argv[1], ignore_errors=True)"


def remove_later(path: Path) -> None:
    """Remove a folder already set aside (renamed out of the way, so nothing reads it) without
    waiting for it: a process of its own deletes it, outliving the caller, so a large tree (an
    export's 97,000 entries: seconds, minutes on a slow disk) costs an overwrite or an
    interrupted write nothing. Its name is a killed writer's, so should that process be killed
    too, the next write beside it sweeps what is left. Where no process starts, now."""
    import subprocess
    import sys

    try:
        subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _REMOVE, os.fspath(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C of the caller's terminal does not reach it
        )
    except OSError:
        remove_tree(path)


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool = True) -> Iterator[None]:
    """An exclusive lock on `path` (created if missing) for the duration of the block, between
    processes and threads, on any platform (the `filelock` package). Without `wait`, a lock
    another holds is BlockingIOError at once."""
    from filelock import FileLock, Timeout

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path, thread_local=False, timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except Timeout:
        raise BlockingIOError(f"{path}: held by another process") from None
    try:
        yield
    finally:
        lock.release()


def check_regular(path: Path) -> None:
    """Raise FileNotFoundError if `path` is missing, TaskpackError if it is not a regular file."""
    from taskpack.errors import TaskpackError

    if not stat.S_ISREG(os.stat(path).st_mode):
        raise TaskpackError(f"{path}: not a regular file")
