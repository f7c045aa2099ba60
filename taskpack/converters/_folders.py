"""Task folders, read and written the same way by every folder format (Harbor, OpenReward,
Terminal-Bench).

Reading trusts nothing in the folder: one walker lists a task folder's files and refuses
symbolic links, non-regular files and any path (an index's `folder`, a name in a config) that
would resolve outside the folder it was given, with one error line naming the file. A split
folder with an `index.json` (written by taskpack: ids and order) reads the same tasks as the
same folder without one, found by their marker file.

Writing gives each task a folder named after its id (`HumanEval/0` -> `HumanEval__0`, kept
unique) and writes the split's index.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.base.nesting import parse_json
from taskpack.converters._format import Losses
from taskpack.converters._sources.records import Record, RowError
from taskpack.errors import TaskpackError
from taskpack.model import Task
from taskpack.records import rel_path

if TYPE_CHECKING:
    from taskpack.storage.taskset import Later

INDEX = "index.json"


# --- reading -------------------------------------------------------------------------------


def inside(root: Path, rel: str, what: str = "path") -> Path:
    """`root/rel`, where `rel` must be a plain relative path that no symlink takes elsewhere."""
    try:
        clean = rel_path(rel)
    except ValueError as e:
        raise RowError(f"{what} {rel!r}: {e}") from None
    path = root
    for part in clean.split("/"):
        path = path / part
        if path.is_symlink():
            raise RowError(f"{what} {rel!r}: {path.relative_to(root)} is a symbolic link")
    return path


def _regular(path: Path, rel: str) -> os.stat_result:
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        raise RowError(f"{rel}: symbolic links are not carried")
    if not stat.S_ISREG(st.st_mode):
        raise RowError(f"{rel}: not a regular file")
    return st


def walk(folder: Path) -> list[tuple[str, Path, int]]:
    """(relative path, path, permission bits) of every file below `folder`, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        for name in dirnames:
            if (here / name).is_symlink():
                raise RowError(
                    f"{(here / name).relative_to(folder)}: symbolic links are not carried"
                )
        for name in filenames:
            path = here / name
            rel = path.relative_to(folder).as_posix()
            found.append((rel, path, _regular(path, rel).st_mode & 0o777))
    return sorted(found)


def read_text(folder: Path, rel: str) -> str | None:
    """A UTF-8 file of the task folder, or None when it is absent."""
    path = inside(folder, rel)
    if not path.exists():
        return None
    _regular(path, rel)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RowError(f"{rel}: not valid UTF-8") from None


def _indexed(root: Path) -> Iterator[tuple[str, Path]]:
    try:
        entries = parse_json(read_text(root, INDEX) or "")["tasks"]
        pairs = [(str(e["id"]), str(e["folder"])) for e in entries]
    except (ValueError, KeyError, TypeError) as e:
        raise TaskpackError(f"{root / INDEX}: not a task index ({e})") from None
    except RowError as e:
        raise TaskpackError(f"{root / INDEX}: {e}") from None
    for task_id, folder in pairs:
        try:
            yield task_id, inside(root, folder, "folder")
        except RowError as e:
            raise TaskpackError(f"{root / INDEX}: {e}") from None


def task_folders(uri: str, marker: str | tuple[str, ...]) -> Iterator[tuple[str, Path]]:
    """(id, folder) for the task folder at `uri` or every task folder below it.

    With an index, its ids and order; else a folder holding `marker` is a task, its id its path
    relative to `uri` (so tasks named `0` in two datasets stay distinct), in sorted order.
    """
    root = Path(uri)
    if root.is_symlink() or not root.is_dir():
        raise TaskpackError(f"{uri}: not a folder (task folders are read from local paths)")
    markers = (marker,) if isinstance(marker, str) else marker
    if (root / INDEX).is_file():
        yield from _indexed(root)
        return
    if any((root / m).exists() for m in markers):
        yield root.name, root
        return
    found = False
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if any(m in filenames for m in markers):
            found = True
            dirnames.clear()  # a task folder's own subfolders are its files, not tasks
            folder = Path(dirpath)
            yield folder.relative_to(root).as_posix(), folder
    if not found:
        raise TaskpackError(f"{uri}: no task folders (no {' or '.join(markers)} found below it)")


def read_folders(
    uri: str,
    marker: str,
    convert: Callable[[str, Path], Any],
    folders: Iterable[tuple[str, Path]] | None = None,
) -> Iterator[Record]:
    """Records for every task folder (`folders`, else those at `uri`), each converted by
    `convert(id, folder)`."""
    pairs = task_folders(uri, marker) if folders is None else folders
    for ordinal, (task_id, folder) in enumerate(pairs):
        where = str(folder)
        try:
            if folder.is_symlink():  # a listed folder, as every file below it: never followed
                raise RowError("the task folder is a symbolic link; links are refused")
            _regular(folder / marker, marker)
            yield Record(where, task=convert(task_id, folder), line=ordinal + 1)
        except (RowError, OSError) as e:
            yield Record(where, error=str(e), line=ordinal + 1)


def file_entry(path: Path, mode: int, placed: dict[str, Any]) -> dict[str, Any]:
    return {**placed, "data": path.read_bytes(), "mode": mode}


# --- writing -------------------------------------------------------------------------------


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def folder_name(task_id: str, taken: set[str]) -> str:
    base = _UNSAFE.sub("__", task_id).strip(".") or "task"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def _umask() -> int | None:
    """The process's umask, read without changing it (Linux); None where it cannot be."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            line = next((x for x in f if x.startswith("Umask:")), "")
        return int(line.split()[1], 8) if line else None
    except (OSError, ValueError, IndexError):
        return None


_UMASK = _umask()


def _write_task(folder: str, files: Files) -> None:
    """A task's files under `folder` (new), each with its exact mode. Created exclusively, so
    two of the task's paths meeting in one place are an error, never an overwrite; raw `os`
    calls, one folder creation each, because a big export is millions of these (a mode the
    umask leaves whole is given at creation, saving a chmod per file)."""
    os.mkdir(folder)
    made = {""}  # folders made, relative to `folder`
    for rel, (data, mode) in files.items():
        path = f"{folder}/{rel}"  # `rel_path` made it: relative, "/" between its parts
        parent = rel.rpartition("/")[0]
        try:
            if parent not in made:
                if parent.rpartition("/")[0] in made:  # its own parent is there: one mkdir
                    os.mkdir(f"{folder}/{parent}")
                else:
                    os.makedirs(f"{folder}/{parent}", exist_ok=True)
                while parent not in made:  # and every folder above it
                    made.add(parent)
                    parent = parent.rpartition("/")[0]
        except (FileExistsError, NotADirectoryError):
            raise TaskpackError(f"{rel}: another of the task's files is in its way") from None
        whole = _UMASK is not None and not mode & ~0o777 and not mode & _UMASK
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode if whole else 0o600)
        except (FileExistsError, IsADirectoryError):
            raise TaskpackError(f"{rel}: two of the task's files would be written here") from None
        try:
            if not whole:
                os.fchmod(fd, mode)
            done = os.write(fd, data) if data else 0  # one write, but for a short one
            if done < len(data):
                view = memoryview(data)[done:]
                while view:
                    view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


Files = dict[str, tuple[bytes, int]]  # path in the task folder -> (bytes, mode)


_BLOCK = 2048  # tasks read before their folders are written; below it, no process is forked
# A block of `Later` tasks holds ids, not tasks: one block is a whole split of that size, so
# the writers start once, with no wait between blocks for the slower of them.
_LATER_BLOCK = 65536


@dataclass
class WrittenSplit:
    """What `write_split` wrote: the index's path, each task's folder (in order) and, when
    a digest was asked for, each folder's digest."""

    index: Path
    folders: list[str]
    digests: dict[str, str]


def write_split(
    tasks: Iterable[Task | Later],
    out: Path,
    split: str,
    task_files: Callable[[Task], Files],
    losses: Losses,
    digest: Digest | None = None,
    meanwhile: Callable[[list[str]], object] | None = None,
    progress: Callable[[int], None] | None = None,
) -> WrittenSplit:
    """One folder per task under `out/split` holding `task_files(task)`, then the split index;
    with `digest`, each folder's digest computed from the bytes written (in the writer that
    wrote them). The index, and `meanwhile(folders)` (what else needs only the folders'
    names), are written while the last block's folders are. `progress(n)` is told of each n
    folders written.

    Laying out and writing 20,000 task folders is seconds of Python per core, so a block of
    tasks is read here while the previous block is written by forked processes, one share per
    core: they inherit the tasks (nothing pickled) and send back only the losses they counted.
    Given `Later` tasks (`Split.later`), a child builds its own share's from their rows: the
    reading here is then the ids alone, and the work splits evenly between the cores.
    Off Linux, on one core or for a small split, it runs in-process."""
    split_dir = out / split
    split_dir.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    entries = []
    writing = _Writers(split, task_files, losses, digest, progress)
    block: list[tuple[str, Task | Later]] = []
    base = str(split_dir)
    try:
        for task in tasks:
            name = folder_name(task.id, taken)
            entries.append({"id": task.id, "folder": name})
            block.append((f"{base}/{name}", task))  # a folder name holds no "/"
            if len(block) == (_BLOCK if isinstance(task, Task) else _LATER_BLOCK):
                writing.start(block)
                block = []
        writing.start(block)
        path = split_dir / INDEX
        path.write_text(json_text({"tasks": entries}))
        folders = [e["folder"] for e in entries]
        if meanwhile is not None:
            meanwhile(folders)
        writing.wait()
    finally:
        writing.stop()
    return WrittenSplit(path, folders, writing.digests)


def json_text(value: Any) -> str:
    """`value` as JSON indented by two spaces, but each item of a "tasks" list on a line of
    its own: json's indented dump runs its Python encoder (0.05 s for 20,000 tasks), and each
    line here is its C one's."""
    return _json(value, "", False) + "\n"


_ONE_LINE = json.JSONEncoder(ensure_ascii=False).encode


def _json(value: Any, pad: str, lines: bool) -> str:
    inner = pad + "  "
    if lines:
        body = [_ONE_LINE(v) for v in value]
    elif isinstance(value, dict):
        body = [
            f"{_ONE_LINE(k)}: {_json(v, inner, k == 'tasks' and isinstance(v, list))}"
            for k, v in value.items()
        ]
    elif isinstance(value, list):
        body = [_json(v, inner, False) for v in value]
    else:
        return _ONE_LINE(value)
    ends = "{}" if isinstance(value, dict) else "[]"
    if not body:
        return ends
    return f"{ends[0]}\n" + ",\n".join(inner + b for b in body) + f"\n{pad}{ends[1]}"


Digest = Callable[[Files], str]  # what a format pins a task folder by, from its files


def _write_tasks(
    block: list[tuple[str, Task | Later]],
    split: str,
    task_files: Callable[[Task], Files],
    digest: Digest | None,
    written: Callable[[], None],
) -> dict[str, str]:
    """Each task's folder written, `written()` after each; with `digest`, folder name -> its
    digest."""
    from taskpack.storage.taskset import Later  # pyarrow's already: the tasks came from a split

    digests = {}
    for folder, item in block:
        try:
            task = item.task() if isinstance(item, Later) else item
            files = task_files(task)
            _write_task(folder, files)
        except TaskpackError as e:
            raise TaskpackError(f"split {split!r} task {item.id!r}: {e}") from None
        if digest is not None:
            digests[os.path.basename(folder)] = digest(files)
        written()
    return digests


class _Writers:
    """Blocks of task folders written by forked processes, one block in flight at a time."""

    def __init__(
        self,
        split: str,
        task_files: Callable[[Task], Files],
        losses: Losses,
        digest: Digest | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        import multiprocessing

        self.split, self.task_files, self.losses, self.digest = split, task_files, losses, digest
        self.digests: dict[str, str] = {}
        # fork only where it is safe and usual (macOS offers it but system libraries may crash)
        forks = sys.platform.startswith("linux") and (os.cpu_count() or 1) > 1
        self.context = multiprocessing.get_context("fork") if forks else None
        self.running: list[tuple[Any, Any]] = []  # (process, the pipe it answers on)
        self.forked = False  # a split's last block is forked too, when those before it were
        # Folders written, counted by the writers in memory they share with this process, and
        # told to `progress` as they are: the tasks are read well before they are written.
        self.progress = progress
        self.count = self.context.Value("q", 0) if self.context is not None else None
        self.told = 0

    def _written(self) -> None:
        if self.count is not None:
            with self.count.get_lock():
                self.count.value += 1
        elif self.progress is not None:
            self.progress(1)

    def _tell(self) -> None:
        if self.progress is not None and self.count is not None:
            done = self.count.value
            self.progress(done - self.told)
            self.told = done

    def start(self, block: list[tuple[str, Task | Later]]) -> None:
        self.wait()
        if self.context is None or (len(block) < _BLOCK and not self.forked):
            digests = _write_tasks(block, self.split, self.task_files, self.digest, self._written)
            self.digests.update(digests)
            self._tell()
            return
        self.forked = True
        shares = os.cpu_count() or 1
        for k in range(shares):  # runs of tasks: a row group's are built by one child
            share = block[k * len(block) // shares : (k + 1) * len(block) // shares]
            mine, theirs = self.context.Pipe(duplex=False)
            # daemonic: a writer never outlives the export, even one blocked answering a parent
            # that was interrupted and reads no more
            process = self.context.Process(target=self._child, args=(share, theirs), daemon=True)
            process.start()
            theirs.close()
            self.running.append((process, mine))

    def _child(self, block: list[tuple[str, Task | Later]], answer: Any) -> None:
        import gc

        gc.freeze()  # what the parent made is never garbage here: no collection visits it
        self.losses.counts = Counter()
        try:
            digests = _write_tasks(block, self.split, self.task_files, self.digest, self._written)
            answer.send(("ok", (self.losses.counts, digests)))
        except TaskpackError as e:
            answer.send(("error", str(e)))
        except BaseException as e:  # noqa: BLE001 - said to the parent, which raises it
            answer.send(("error", f"writing split {self.split!r}: {type(e).__name__}: {e}"))

    def wait(self) -> None:
        problem = None
        while self.running:  # each writer leaves the list once answered: `stop` kills the rest
            process, answer = self.running[0]
            while not answer.poll(0.2):  # the bar moves as folders are written
                self._tell()
            self._tell()
            try:
                kind, value = answer.recv()
            except EOFError:
                kind, value = "error", f"writing split {self.split!r}: a writer process died"
            process.join()
            self.running.pop(0)
            if kind == "ok":
                counts, digests = value
                self.losses.counts.update(counts)
                self.digests.update(digests)
            else:
                problem = problem or value
        if problem is not None:
            raise TaskpackError(problem)

    def stop(self) -> None:
        for process, _ in self.running:
            process.kill()
            process.join()
        self.running = []
