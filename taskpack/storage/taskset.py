"""The on-disk task-set format, read at episode start: a folder's or a registry's version,
opened lazily (the writer, `writer`, sits above this module).

    NAME/
      manifest.json              name, version, splits (rows, digest, bytes), version digest
      splits/<split>.parquet     one row per task, nested columns, row groups of <= 1024 tasks
      splits/<split>/00000.parquet ...  the same in files of PART_GROUPS row groups, if more
      blobs/sha256/<ab>/<hash>   files larger than INLINE_MAX, stored once by content

Files up to INLINE_MAX bytes ride inline in the Parquet row, so a typical task is one row read;
larger ones are stored once by sha256 and read only when a task is materialized. Row groups are
small so that opening a split and reading task i touches one row group, not the whole file.
"""

from __future__ import annotations

import bisect
import itertools
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, overload

import pyarrow as pa
import pyarrow.parquet as pq

from taskpack.base.digests import FORMAT_VERSION
from taskpack.base.fs import (
    check_regular,
    temp_beside,
)
from taskpack.base.objects import MANIFEST, Progress
from taskpack.base.parquet import parquet_file
from taskpack.errors import TaskpackError, describe_error, unknown
from taskpack.storage.rows import (
    ReadBlob,
    inline_mismatches,
    json_columns,
    task_from_row,
)
from taskpack.storage.views import Rows
from taskpack.storage.warm import ById

if TYPE_CHECKING:
    # Stored tasks are `records` objects with the model's fields and behaviour; they are typed
    # as the model they equal.
    from taskpack.model import Manifest, SplitInfo, Task


class Split(Rows, ById):
    """One split of a task set: `len`, `split[i]`, `split.get(id)`, iteration, and the lazy
    views of `taskpack.storage.views` (`shuffle`, `shard`, `select`, `filter`, `to_arrow`, ...).

    Nothing is read until asked: `len` comes from the manifest, `split[i]` opens the one file
    and reads the one row group holding task i (a few recent ones are kept), `get` reads the id
    column once. Reads all over a large split would decode a row group per task: once a split
    has decoded `DECODE_AFTER` groups, each file it reads at random is decoded once per
    machine into the cache (`objects.decoded_path`: Arrow IPC, named by the file's hash) and
    memory-mapped, so a task costs a row's worth, as `datasets`' own Arrow cache does.
    """

    CACHE_BYTES = 256 * 1024 * 1024  # decoded row groups kept for random access
    DECODE_AFTER = 16  # row groups read at random before a file's decoded copy pays off

    def __init__(
        self,
        name: str,
        info: SplitInfo,
        parquets: Sequence[Path],
        fetch: ReadBlob | None,
        version: int = FORMAT_VERSION,
        rows_checked: bool = False,
    ) -> None:
        self.name = name
        self.info = info
        self.version = version
        self._parquets = list(parquets)
        self._fetch = fetch
        self._parts = info.files()
        self._part_starts = list(itertools.accumulate((p.rows for p in self._parts), initial=0))
        self._files: dict[int, tuple[pq.ParquetFile, list[int]]] = {}
        self._groups: OrderedDict[tuple[int, int], list[tuple[str, pa.Array]]] = OrderedDict()
        self._cached_bytes = 0
        self._misses = 0  # row groups decoded for random access
        self._mapped: dict[int, list[tuple[str, pa.Array]] | None] = {}  # p -> decoded copy
        # the source checked every row (inline bytes too) against the split digest before it
        # handed the files out (see ObjectSource.rows_checked): reads need not check them again
        self.rows_checked = rows_checked

    def __repr__(self) -> str:
        return f"<Split {self.name!r}: {len(self)} tasks>"

    def __len__(self) -> int:
        return self.info.rows

    @property
    def digest(self) -> str:
        return self.info.digest

    def _base(self) -> Split:
        return self

    def parquet_paths(self) -> list[Path]:
        """The split's Parquet files, in row order (checked against their hashes when opened)."""
        return list(self._parquets)

    @property
    def json_columns(self) -> tuple[str, ...]:
        """The columns this split's format version stores as JSON text."""
        return json_columns(self.version)

    def _rows(self) -> Any:
        import numpy as np

        return np.arange(len(self), dtype=np.int64)

    def columns(self, names: Sequence[str] | None = None) -> pa.Table:
        """Stored columns (all by default) of every row, as one Arrow table."""
        columns = list(names) if names is not None else None
        tables = []
        for p in range(len(self._parts)):
            pf = self._open(p)
            table = self._read(p, partial(pf.read, columns=columns))
            tables.append(self._checked(table, self._part_starts[p]))
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def row_groups(self, columns: Sequence[str] | None = None) -> Iterator[pa.Table]:
        """Every row group in row order, each file opened in turn and let go after: streaming
        a split holds one file's footer at a time, however many files it has."""
        row = 0
        for p in range(len(self._parts)):
            pf = self._open(p)
            for g in range(pf.num_row_groups):
                table = self._checked(self._group_of(p, pf, g, columns), row)
                row += table.num_rows
                yield table

    def _checked(self, table: pa.Table, first_row: int) -> pa.Table:
        """`table` (rows from `first_row` on), once every inline file in it is the content its
        hash names: whoever reads stored rows (tasks, Arrow, pandas, datasets, exports) reads
        only bytes the digest chain covers."""
        if self.rows_checked or "files" not in table.column_names:
            return table
        for row, path, why in inline_mismatches(table.column("files"), f"split {self.name!r}"):
            raise TaskpackError(
                f"split {self.name!r} row {first_row + row}: file {path!r}: {why}; "
                "`taskpack validate` lists every problem"
            )
        return table

    def _open(self, p: int) -> pq.ParquetFile:
        """File p of the split, checked to hold the rows the manifest gives it."""
        if p in self._files:
            return self._files[p][0]
        path = self._parquets[p]
        try:
            check_regular(path)
            pf = parquet_file(path)
        except (OSError, pa.ArrowException) as e:
            raise TaskpackError(f"split {self.name!r}: cannot read {path}: {e}") from None
        if pf.metadata.num_rows != self._parts[p].rows:
            raise TaskpackError(
                f"split {self.name!r}: {path} holds {pf.metadata.num_rows} rows, "
                f"the manifest says {self._parts[p].rows}"
            )
        return pf

    def _read(self, p: int, read: Callable[[], pa.Table]) -> pa.Table:
        """`read()` of file p; a file whose bytes do not decode (a corrupt page) is one error."""
        try:
            return read()
        except (OSError, pa.ArrowException) as e:
            where = self._parquets[p]
            raise TaskpackError(
                f"split {self.name!r}: {where} does not decode ({e}); "
                "`taskpack validate` checks every byte"
            ) from None

    def _group_of(
        self, p: int, pf: pq.ParquetFile, g: int, columns: Sequence[str] | None
    ) -> pa.Table:
        return self._read(p, partial(pf.read_row_group, g, columns=columns))

    def _kept(self, p: int) -> tuple[pq.ParquetFile, list[int]]:
        """File p, opened once for random access, with the first row of each row group."""
        if p not in self._files:
            pf = self._open(p)
            sizes = (pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups))
            self._files[p] = (pf, list(itertools.accumulate(sizes, initial=0))[:-1])
        return self._files[p]

    def _group(self, p: int, g: int) -> list[tuple[str, pa.Array]]:
        """Row group g of file p, its columns decoded once and kept (least recently used out
        first)."""
        columns = self._groups.get((p, g))
        if columns is not None:
            self._groups.move_to_end((p, g))
            return columns
        pf = self._kept(p)[0]
        first = self._part_starts[p] + self._kept(p)[1][g]
        table = self._checked(self._group_of(p, pf, g, self._read_names(pf)), first)
        columns = [(name, table.column(name).combine_chunks()) for name in table.column_names]
        self._misses += 1
        self._groups[(p, g)] = columns
        self._cached_bytes += table.nbytes
        while self._cached_bytes > self.CACHE_BYTES and len(self._groups) > 1:
            _, old = self._groups.popitem(last=False)
            self._cached_bytes -= sum(array.nbytes for _, array in old)
        return columns

    @staticmethod
    def _read_names(pf: pq.ParquetFile) -> list[str]:
        return [n for n in pf.schema_arrow.names if n != "digest"]  # not needed for tasks

    def _decoded(self, p: int) -> list[tuple[str, pa.Array]] | None:
        """File p's decoded copy, memory-mapped, once random reads have shown it pays off:
        made once per machine (under a file lock, whoever needs it first), hash-named, written
        aside and renamed into place; None where it cannot be (a read-only cache)."""
        if p in self._mapped:
            return self._mapped[p]
        if self._misses < self.DECODE_AFTER or len(self._kept(p)[1]) < 2:
            return None
        from taskpack.base.fs import file_lock
        from taskpack.base.objects import decoded_path

        path = decoded_path(self._parts[p].sha256)
        columns = None
        try:
            if not path.is_file():
                with file_lock(path.with_name(path.name + ".lock")):
                    if not path.is_file():
                        self._decode(p, path)
            table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
            if table.num_rows == self._parts[p].rows and all(
                c.num_chunks == 1 for c in table.columns
            ):  # one chunk each: used in place, never copied out of the map
                columns = [(name, table.column(name).chunk(0)) for name in table.column_names]
        except (OSError, pa.ArrowException):
            columns = None  # the row groups serve, as before
        self._mapped[p] = columns
        return columns

    def _decode(self, p: int, path: Path) -> None:
        pf = self._open(p)
        names = self._read_names(pf)
        first = self._part_starts[p]
        tables = []
        for g in range(pf.num_row_groups):
            tables.append(self._checked(self._group_of(p, pf, g, names), first))
            first += tables[-1].num_rows
        table = pa.concat_tables(tables).combine_chunks()  # one batch: rows by plain offset
        tmp = temp_beside(path)
        try:
            with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
                out.write_table(table, max_chunksize=max(1, table.num_rows))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    @overload
    def __getitem__(self, i: int | str) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> list[Task]: ...
    def __getitem__(self, i: int | slice | str) -> Task | list[Task]:
        """Task `i` (a position, negative from the end), a task by its id (`split["q1"]`: a
        KeyError naming close ids when there is none), or a slice of tasks."""
        if isinstance(i, str):
            return self.by_id(i)
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = self.info.rows
        if not -n <= i < n:
            raise IndexError(f"task {i} out of range: split {self.name!r} has {n} tasks")
        i %= n
        p = bisect.bisect_right(self._part_starts, i) - 1
        decoded = self._decoded(p)
        if decoded is not None:
            k = i - self._part_starts[p]
            return self._task({name: array[k].as_py() for name, array in decoded}, i)
        starts = self._kept(p)[1]
        g = bisect.bisect_right(starts, i - self._part_starts[p]) - 1
        k = i - self._part_starts[p] - starts[g]
        # One scalar per column: far cheaper than slicing a one-row table.
        row = {name: array[k].as_py() for name, array in self._group(p, g)}
        return self._task(row, i)

    def later(self) -> Iterator[Later]:
        """Each task as its id and what builds it when asked: a writer that forks (folder
        exports) builds its tasks in its children, and the ids alone are read here: each row
        group is read whole where its first task is built."""
        first = 0
        for p in range(len(self._parts)):
            pf = self._open(p)
            for g in range(pf.num_row_groups):
                ids = self._group_of(p, pf, g, ["id"]).column("id").to_pylist()
                group = _Group(self, p, g, first)
                for i, task_id in enumerate(ids):
                    yield Later(task_id, group, i)
                first += len(ids)

    def _task(self, row: dict[str, Any], i: int) -> Task:
        """The row as a task; a row no writer of this format produces is one clear error."""
        try:
            return task_from_row(row, self._fetch, self.version)
        except (
            ValueError,
            TypeError,
            KeyError,
            AttributeError,
            RecursionError,
            TaskpackError,
        ) as e:
            raise TaskpackError(
                f"split {self.name!r} row {i}: unreadable ({describe_error(e)}); "
                "`taskpack validate` lists every problem"
            ) from None

    def ids(self) -> list[str]:
        return [str(x) for x in self.columns(["id"]).column("id").to_pylist()]

    def digests(self) -> dict[str, str]:
        """Task id -> task digest, from two columns, without building tasks."""
        table = self.columns(["id", "digest"])
        ids, digests = table.column("id").to_pylist(), table.column("digest").to_pylist()
        return dict(zip(ids, digests, strict=True))

    def rows(self) -> Iterator[dict[str, Any]]:
        """Raw rows as stored, digest included, for verification and format writers.

        A row group at a time: `ParquetFile.iter_batches` over the whole file holds state per
        row group, and its memory grew with the split (+77 MiB at 500k tasks)."""
        for table in self.row_groups():
            yield from table.to_pylist()

    def __iter__(self) -> Iterator[Task]:
        for i, row in enumerate(self.rows()):
            yield self._task(row, i)


class _Group:
    """Row group `g` of file `p` of a split, from row `first` on: read, checked and made Python
    values when its first task is built, and let go once each of its tasks was (a writer
    builds each once, and a row is consumed by building its task)."""

    def __init__(self, split: Split, p: int, g: int, first: int) -> None:
        self.split, self.p, self.g, self.first = split, p, g, first
        self.rows: list[dict[str, Any]] | None = None
        self.left = 0

    def task(self, i: int) -> Task:
        split = self.split
        if self.rows is None:
            table = split._group_of(self.p, split._kept(self.p)[0], self.g, None)
            self.rows = split._checked(table, self.first).to_pylist()
            self.left = len(self.rows)
        task = split._task(self.rows[i], self.first + i)
        self.left -= 1
        if not self.left:
            self.rows = None
        return task


@dataclass(frozen=True, slots=True)
class Later:
    """A task of a split not built yet (`Split.later`)."""

    id: str
    group: _Group
    index: int

    def task(self) -> Task:
        return self.group.task(self.index)


class ObjectSource(Protocol):
    """Where a version's objects come from: a task-set folder, or the local cache filled from a
    registry. The one thing a `TaskSet` does not know. A split's files are asked for by split,
    so a source that checks rows knows which split it checks without looking the files up."""

    where: str  # names the source in messages
    # Whether every split's rows, inline bytes included, are checked against its digest before
    # `split_files` hands them out (a registry's objects, once per machine): then reads need not.
    rows_checked: bool

    def split_files(
        self, name: str, info: SplitInfo, progress: Progress | None = None
    ) -> list[Path]:
        """Split `name`'s Parquet files, in row order, local and hash-checked (and with
        `rows_checked`, its rows checked)."""

    def path(self, sha: str, progress: Progress | None = None, most: int | None = None) -> Path:
        """A local file holding the object whose bytes hash to `sha` (a large file, a split's
        pass rates, or any object for a bytes-only check); a download of it holds at most
        `most` bytes where the caller knows its size (a large file's, from its row), else at
        most the size the manifest lists."""


class FolderObjects:
    """A task-set folder's own files, read in place."""

    rows_checked = False

    def __init__(self, root: Path, manifest: Manifest) -> None:
        self.root = root
        self.where = str(root)
        self._paths = manifest.objects()

    def split_files(
        self, name: str, info: SplitInfo, progress: Progress | None = None
    ) -> list[Path]:
        return [self.root / part.path for part in info.files()]

    def path(self, sha: str, progress: Progress | None = None, most: int | None = None) -> Path:
        rel = self._paths.get(sha)
        if rel is None:
            raise TaskpackError(f"{self.where}: no object {sha} in the manifest")
        return self.root / rel


class TaskSet:
    """A version of a task set: its manifest, and its objects from a folder or a registry.

    `taskpack.open(path)` and `taskpack.open("name@1.2")` give the same class; everything that
    reads (`split`, `verify`, `export`, `publish`) goes through `object(sha)`.
    """

    def __init__(self, manifest: Manifest, objects: ObjectSource) -> None:
        self.manifest = manifest
        self.objects = objects
        self._notes: dict[str, list[dict[str, Any]]] = {}  # annotations read and checked

    def __repr__(self) -> str:
        m = self.manifest
        return f"<TaskSet {m.ref} {dict((n, s.rows) for n, s in m.splits.items())}>"

    @property
    def splits(self) -> list[str]:
        return list(self.manifest.splits)

    @property
    def where(self) -> str:
        return self.objects.where

    def object(self, sha: str, progress: Progress | None = None) -> Path:
        return self.objects.path(sha, progress)

    def info(self, name: str) -> SplitInfo:
        info = self.manifest.splits.get(name)
        if info is None:
            raise unknown("split", name, self.splits, self.manifest.ref)
        return info

    def field_values(self, column: str, key: str) -> set[Any]:
        """Every value of `key` in the JSON column `column` (reward, environment, ...) across the
        splits, None for a task without it: one column read per split, no task built."""
        import json

        found: set[Any] = set()
        for name in self.splits:
            for value in self.split(name).columns([column]).column(column).to_pylist():
                found.add(json.loads(value).get(key) if value else None)
        return found

    def reward_kinds(self) -> list[str]:
        """The reward kinds this version's tasks use ("none" for a task without a reward)."""
        return sorted(kind or "none" for kind in self.field_values("reward", "kind"))

    def split_files(self, name: str, progress: Progress | None = None) -> list[Path]:
        """Split `name`'s Parquet files, local and checked as the source checks them."""
        return self.objects.split_files(name, self.info(name), progress)

    def split(self, name: str) -> Split:
        info = self.info(name)
        return Split(
            name,
            info,
            self.split_files(name),
            self.read_blob,
            self.manifest.format_version,
            rows_checked=self.objects.rows_checked,
        )

    def fetched(
        self,
        splits: Sequence[str] | None = None,
        *,
        blobs: bool = True,
        progress: Progress | None = None,
    ) -> dict[str, Path]:
        """Every object of the version (or of `splits`) as a local file, by hash: each split's
        files through `split_files` (so a registry's rows are checked before they are copied
        anywhere), the large files and pass rates by hash. What publish and pull go by."""
        names = self.splits if splits is None else list(splits)
        found: dict[str, Path] = {}
        for name in names:
            parts = self.info(name).files()
            found.update(
                zip((p.sha256 for p in parts), self.split_files(name, progress), strict=True)
            )
        for sha in self.manifest.objects(names, blobs=blobs):
            if sha not in found:
                found[sha] = self.objects.path(sha, progress)
        return found

    def annotations(self, name: str) -> list[dict[str, Any]]:
        """Split `name`'s annotations (pass rates; see `storage.ratings`): [] if none."""
        from taskpack.storage import ratings

        self.info(name)  # an unknown split is an error, not "no annotations"
        notes = self.manifest.annotations.get(name)
        if notes is None:
            return []
        if name not in self._notes:
            rows = ratings.read(self.object(notes.sha256))
            problems = ratings.problems(rows, notes.digest)
            if len(rows) != notes.rows:
                problems.append(f"{len(rows)} rows, the manifest says {notes.rows}")
            if problems:
                where = f"{self.where}: annotations of split {name!r} ({notes.sha256})"
                raise TaskpackError(f"{where}: {'; '.join(problems)}; refused")
            self._notes[name] = rows
        return [dict(row) for row in self._notes[name]]

    def read_blob(self, sha: str, size: int) -> bytes:
        try:
            return self.objects.path(sha, None, size).read_bytes()
        except FileNotFoundError:
            raise TaskpackError(f"{self.where}: large file {sha} is missing") from None


def read_manifest(path: Path) -> Manifest:
    from pydantic import ValidationError

    from taskpack.base.nesting import check_depth
    from taskpack.model import Manifest

    try:
        check_regular(path)
        data = path.read_bytes()
        check_depth(data)
        return Manifest.model_validate_json(data)
    except FileNotFoundError:
        raise TaskpackError(f"{path.parent} is not a task set: no {MANIFEST}") from None
    except ValidationError as e:
        raise TaskpackError(f"{path}: {describe_error(e)}") from None
    except ValueError as e:
        raise TaskpackError(f"{path}: {e}") from None


def open_folder(path: str | os.PathLike[str]) -> TaskSet:
    """Open the task-set folder at `path`."""
    root = Path(path)
    manifest = read_manifest(root / MANIFEST)
    return TaskSet(manifest, FolderObjects(root, manifest))
