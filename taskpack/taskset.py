"""The on-disk task-set format: write it atomically, read it lazily, verify it.

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
import contextlib
import itertools
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, overload

import pyarrow as pa
import pyarrow.parquet as pq

from taskpack._fs import (
    check_regular,
    copy_atomic,
    remove_later,
    remove_tree,
    sweep,
    temp_beside,
    write_atomic,
)
from taskpack.digests import FORMAT_VERSION, SplitDigest, chains_to, version_digest
from taskpack.errors import InvalidTask, TaskpackError, describe_error, unknown
from taskpack.objects import MANIFEST, Progress, blob_relpath, file_sha256
from taskpack.records import NAME, SEMVER, full_match
from taskpack.rows import (
    SCHEMA,
    Fetch,
    check_split,
    coerce_task,
    first_duplicate,
    inline_mismatches,
    json_columns,
    table_of,
    task_from_row,
    task_to_row,
)
from taskpack.views import Rows

if TYPE_CHECKING:
    # Stored tasks are `records` objects with the model's fields and behaviour; they are typed
    # as the model they equal.
    from taskpack.model import Manifest, SplitInfo, Task

ROW_GROUP_ROWS = 1024
ROW_GROUP_BYTES = 8 * 1024 * 1024
# Row groups per Parquet file of a split: a file's footer holds an entry per column of each
# row group (about 30 MiB in memory for 1100 groups), so a reader opening one file of a large
# split holds a bounded footer, and an export streaming it holds one at a time.
PART_GROUPS = 128
UNSEALED = "sha256:" + "0" * 64  # a manifest's digest until it is computed from the manifest
# Columns whose values repeat across a split's tasks: dictionary-encoded. Ids, digests, prompts
# and solutions are mostly unique, where a dictionary costs time and grows the file.
_REPEATING = ["reward", "rewards", "tools", "steps", "environment", "limits", "metadata", "extras"]


# --- writing -------------------------------------------------------------------------------


class _SplitWriter:
    """Streams tasks into Parquet, a row group at a time, hashing as it goes: one file
    `splits/<name>.parquet`, or files of `PART_GROUPS` row groups each in `splits/<name>/`
    once the split outgrows one."""

    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        self.root = root
        self._parts: list[tuple[Path, int]] = []  # (file, rows), the last one being written
        self._writer: pq.ParquetWriter | None = None
        self._groups = 0  # row groups in the file being written
        self._rows: list[dict[str, Any]] = []
        self._pending_bytes = 0
        self._count = 0
        self._digest = SplitDigest()
        self._blobs: set[str] = set()

    def _new_blob(self, sha: str) -> Path | None:
        """Where large file `sha` goes, or None when this task set holds it already."""
        self._blobs.add(sha)
        target = self.root / blob_relpath(sha)
        return None if target.exists() else target

    def _store_blob(self, data: bytes, sha: str) -> None:
        target = self._new_blob(sha)
        if target is not None:
            write_atomic(target, data)

    def add_stored(
        self,
        ts: TaskSet,
        name: str,
        rows_checked: bool = False,
        keep: Sequence[int] | None = None,
    ) -> None:
        """Every row of split `name` of another task set (with `keep`, the rows at those
        ascending positions), as stored (digests and large files too), after the rows already
        added; its rows must chain to its digest first, each row's content hashed again unless
        `rows_checked` (the caller knows who wrote them), when the stored digests alone must
        chain."""
        split = ts.split(name)
        if split.version == 1:  # rows are stored alike from version 2 on
            raise TaskpackError(f"split {split.name!r}: format version {split.version}; upgrade it")
        whole = keep is None and _whole_files_fit(split._parquets)
        stored = split.columns(["digest"])["digest"].to_pylist() if rows_checked or whole else []
        if rows_checked:
            chained = chains_to(stored, split.digest)
            problems = [] if chained else [f"split {name!r}: digest differs"]
        else:
            problems = check_split(split._parquets, split.name, split.info, split.version)
        if problems:
            raise TaskpackError(f"{ts.where}: {problems[0]}")
        self._flush()
        if whole:
            self._adopt(split, stored)
            blobs = split.info.blobs
        else:
            named = self._copy_rows(split, keep)
            blobs = split.info.blobs if named is None else sorted(named & set(split.info.blobs))
        for sha in blobs:
            target = self._new_blob(sha)
            if target is not None:
                copy_atomic(ts.object(sha), target)

    def _adopt(self, split: Split, digests: list[str]) -> None:
        """A split's Parquet files taken whole, each a file of this split (its rows are the
        same rows in the same order, so the split digest is the one a row-by-row copy gives):
        a merge of parts costs a copy of their bytes, not a second Parquet encoding."""
        import shutil

        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for path, part in zip(split._parquets, split.info.files(), strict=True):
            target = self.root / "splits" / self.name / f"{len(self._parts):05d}.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            self._parts.append((target, part.rows))
        self._digest.add_all(digests)
        self._count += split.info.rows

    def _copy_rows(self, split: Split, keep: Sequence[int] | None) -> set[str] | None:
        """The split's rows (those at `keep`), a row group at a time; with `keep`, the large
        files the kept rows name."""
        import numpy as np  # a subset's positions; not on the episode-start path

        from taskpack._arrow import numbers  # an Arrow array: NumPy's would ask for pandas

        wanted = None if keep is None else np.asarray(keep, dtype=np.int64)
        blobs: set[str] = set()
        end = 0  # the row after the current row group, in the split
        for table in split.row_groups():
            if wanted is not None:
                start, end = end, end + table.num_rows
                lo, hi = np.searchsorted(wanted, [start, end])
                table = table.take(numbers(wanted[lo:hi] - start))
                blobs.update(_large_files(table))
            if table.num_rows:
                self.add_table(table.select(SCHEMA.names).cast(SCHEMA))
        return None if wanted is None else blobs

    def add_table(self, table: pa.Table) -> None:
        """Stored rows (`SCHEMA`, digests computed, large files already held) after those
        already added, in row groups as `add` makes them (rows, bytes)."""
        self._flush()
        self._digest.add_all(table.column("digest").to_pylist())
        per_group = ROW_GROUP_BYTES * table.num_rows // max(table.nbytes, 1)
        self._write(table, max(1, min(ROW_GROUP_ROWS, per_group)))
        self._count += table.num_rows

    def add(self, task: Task | Mapping[str, Any]) -> Task:
        task = coerce_task(task, f"split {self.name!r} row {self._count}")
        row, digest = task_to_row(task, self._store_blob)
        self._digest.add(digest)
        self._rows.append(row)
        self._pending_bytes += sum(len(f["data"] or b"") for f in row["files"])
        self._count += 1
        if len(self._rows) >= ROW_GROUP_ROWS or self._pending_bytes >= ROW_GROUP_BYTES:
            self._flush()
        return task

    def _flush(self) -> None:
        if self._rows:
            table = table_of(self._rows)
            self._write(table, len(self._rows))
            self._rows, self._pending_bytes = [], 0

    def _write(self, table: pa.Table, group_rows: int) -> None:
        """`table` in row groups of `group_rows`, a new file begun whenever one is full."""
        start = 0
        while start < table.num_rows:
            writer = self._file()
            take = min(table.num_rows - start, (PART_GROUPS - self._groups) * group_rows)
            writer.write_table(table.slice(start, take), row_group_size=group_rows)
            self._groups += -(-take // group_rows)
            path, rows = self._parts[-1]
            self._parts[-1] = (path, rows + take)
            start += take

    def _file(self) -> pq.ParquetWriter:
        """The file being written; a new one when it holds PART_GROUPS row groups."""
        if self._writer is not None and self._groups >= PART_GROUPS:
            self._writer.close()
            self._writer = None
        if self._writer is None:
            path = self.root / "splits" / self.name / f"{len(self._parts):05d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            # Min/max statistics only for ids (a query by id skips row groups): those of text
            # and JSON columns answer no query and were 7% of writing a split.
            self._writer = pq.ParquetWriter(
                path, SCHEMA, compression="zstd", use_dictionary=_REPEATING, write_statistics=["id"]
            )
            self._parts.append((path, 0))
            self._groups = 0
        return self._writer

    def close(self) -> SplitInfo:
        self._flush()
        if self._writer is not None:
            self._writer.close()
        elif not self._parts:
            self._file().close()  # an empty split is one file without rows
        if len(self._parts) == 1:  # the common case keeps the one-file layout
            path, rows = self._parts[0]
            single = self.root / "splits" / f"{self.name}.parquet"
            os.replace(path, single)
            path.parent.rmdir()
            self._parts = [(single, rows)]
        _check_unique_ids([path for path, _ in self._parts], self.name)
        from taskpack.model import SplitInfo

        parts: list[dict[str, Any]] = [
            {
                "path": path.relative_to(self.root).as_posix(),
                "rows": rows,
                "bytes": path.stat().st_size,
                "sha256": file_sha256(path),
            }
            for path, rows in self._parts
        ]
        layout = {"parts": parts} if len(parts) > 1 else parts[0]
        return SplitInfo(
            **{**layout, "rows": self._count, "bytes": sum(p["bytes"] for p in parts)},
            digest=self._digest.value,
            blobs=sorted(self._blobs),
        )

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _whole_files_fit(paths: Sequence[Path]) -> bool:
    """Whether Parquet files can become files of a split being written as they are: this
    format version's schema, and no more row groups than a file of it holds."""
    for path in paths:
        meta = pq.read_metadata(path)
        if meta.num_row_groups > PART_GROUPS:
            return False
        if not meta.schema.to_arrow_schema().equals(SCHEMA, check_metadata=False):
            return False
    return True


def _large_files(table: pa.Table) -> set[str]:
    """The hashes of the large files (stored apart, not inline) that `table`'s rows name."""
    import pyarrow.compute as pc

    files = pc.list_flatten(table.column("files"))
    large = pc.is_null(pc.struct_field(files, "data"))
    return set(pc.filter(pc.struct_field(files, "sha256"), large).to_pylist())


def _check_unique_ids(paths: Sequence[Path], split: str) -> None:
    # ParquetFile, not read_table: that loads pyarrow.dataset (and with it pandas), 0.4 s
    ids = [c for path in paths for c in pq.ParquetFile(path).read(columns=["id"])["id"].chunks]
    found = first_duplicate(pa.chunked_array(ids, pa.string()))
    if found is not None:
        row, first, tid = found
        raise InvalidTask(
            f"split {split!r} row {row} (id {tid!r})",
            f"id: duplicate of row {first}; ids must be unique within a split",
        )


class TaskSetWriter:
    """Writes a task set into a temporary folder beside `target`, moved into place on success.

    Used as a context manager: an exception inside the block (bad row, full disk, Ctrl-C) removes
    the temporary folder and leaves any previous task set at `target` untouched.
    """

    def __init__(
        self,
        target: str | os.PathLike[str],
        *,
        name: str,
        version: str = "0.1.0",
        description: str = "",
        license: str | None = None,
        source: Mapping[str, Any] | None = None,
        overwrite: bool = False,
    ) -> None:
        self.target = Path(target)
        _check_pattern("name", name, NAME)
        _check_pattern("version", version, SEMVER, "a semantic version such as 1.0.0")
        if self.target.exists() and not overwrite:
            raise TaskpackError(f"{self.target} already exists (overwrite it with --force)")
        self._meta: dict[str, Any] = {
            "name": name,
            "version": version,
            "description": description,
            "license": license,
            "source": dict(source or {}),
        }
        self._splits: dict[str, SplitInfo] = {}
        self._notes: dict[str, Any] = {}  # split -> model.Annotations
        self._noted: dict[str, set[str]] = {}  # split -> the task ids its annotations name
        self._tmp: Path | None = None
        self.manifest: Manifest | None = None

    def __enter__(self) -> TaskSetWriter:
        self._tmp = _stage_dir(self.target, "tmp")
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        assert self._tmp is not None
        try:
            if exc_type is None:
                self._commit(self._tmp)
        finally:
            remove_tree(self._tmp)

    def record(self, operation: str, **details: Any) -> None:
        """Record in the version's source how it was made (its lineage: the operation, its
        inputs and options), stamped with the taskpack version that made it."""
        from importlib.metadata import version

        self._meta["source"].update(operation=operation, **details, taskpack=version("taskpack"))

    @property
    def written(self) -> Mapping[str, SplitInfo]:
        """The splits written so far."""
        return self._splits

    def write_split(self, name: str, tasks: Iterable[Task | Mapping[str, Any]]) -> SplitInfo:
        """Write one split from any iterable of tasks or task mappings, streaming."""
        with self.split(name) as writer:
            for task in tasks:
                writer.add(task)
        return self._splits[name]

    @contextlib.contextmanager
    def split(self, name: str) -> Iterator[_SplitWriter]:
        """A split writer for the block: closed and recorded at its end, dropped on an error."""
        writer = self.open_split(name)
        try:
            yield writer
        except BaseException:
            writer.abort()
            raise
        self.close_split(writer)

    def open_split(self, name: str) -> _SplitWriter:
        assert self._tmp is not None, "use TaskSetWriter as a context manager"
        _check_pattern("split name", name, NAME)
        if name in self._splits:
            raise TaskpackError(f"split {name!r} written twice")
        return _SplitWriter(self._tmp, name)

    def close_split(self, writer: _SplitWriter) -> SplitInfo:
        info = writer.close()
        self._splits[writer.name] = info
        return info

    def annotate(self, name: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Store split `name`'s annotations (see `taskpack.passrates`): rows of task id,
        model, settings, count, correct and mean; every id must be a task of the split, which
        is checked when the set is committed."""
        from taskpack import passrates
        from taskpack.model import Annotations

        assert self._tmp is not None, "use TaskSetWriter as a context manager"
        _check_pattern("split name", name, NAME)
        ordered = passrates.sorted_rows(rows)
        if not ordered:
            return
        path = self._tmp / "annotations" / f"{name}.parquet"
        passrates.write(path, ordered)
        self._notes[name] = Annotations(
            path=f"annotations/{name}.parquet",
            rows=len(ordered),
            bytes=path.stat().st_size,
            sha256=file_sha256(path),
            digest=passrates.digest(ordered),
        )
        self._noted[name] = {row["id"] for row in ordered}

    def _commit(self, tmp: Path) -> None:
        if not self._splits:
            raise TaskpackError("a task set needs at least one split")
        for name, ids in self._noted.items():
            if name not in self._splits:
                raise TaskpackError(f"annotations of split {name!r}, which was not written")
            info = self._splits[name]
            stored = Split(name, info, [tmp / part.path for part in info.files()], None)
            strangers = ids - set(stored.ids())
            if strangers:
                shown = ", ".join(sorted(strangers)[:5])
                raise TaskpackError(f"annotations of tasks not in split {name!r}: {shown}")
        from taskpack.model import Manifest

        unsealed = Manifest(
            digest=UNSEALED, splits=self._splits, annotations=self._notes, **self._meta
        )
        manifest = unsealed.model_copy(update={"digest": version_digest(unsealed)})
        (tmp / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        _replace_dir(tmp, self.target)
        self.manifest = manifest


def _check_pattern(what: str, value: str, pattern: str, expected: str | None = None) -> None:
    if not full_match(pattern, value):
        raise TaskpackError(f"invalid {what} {value!r}: expected {expected or pattern}")


def _stage_dir(target: Path, kind: str) -> Path:
    """A new empty folder beside `target`, `.NAME.<kind>-<host>-<pid>-<random>`, so the folders
    a killed writer left behind can be told from a live writer's and are removed here."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep(target, ("tmp", "old"))
    path = temp_beside(target, kind)
    path.mkdir(mode=0o777)  # as the umask allows: a shared folder stays readable to the team
    return path


def _replace_dir(new: Path, target: Path) -> None:
    """Move `new` to `target`; an existing target is set aside first and restored on failure."""
    old = None
    if target.exists():
        old = temp_beside(target, "old")
        os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        remove_later(old)


@contextlib.contextmanager
def staged_output(target: Path, overwrite: bool) -> Iterator[Path]:
    """A temporary folder beside `target`, moved into place only if the block succeeds."""
    if target.exists() and not overwrite:
        raise TaskpackError(f"{target} already exists (overwrite it with --force)")
    tmp = _stage_dir(target, "tmp")
    try:
        yield tmp
        _replace_dir(tmp, target)
    finally:
        if tmp.exists():  # an error or an interrupt: what was written goes, in the background
            remove_later(tmp)


def write(
    target: str | os.PathLike[str],
    splits: Mapping[str, Iterable[Task | Mapping[str, Any]]],
    **meta: Any,
) -> Manifest:
    """Write a task set from `{split name: tasks}`; see `TaskSetWriter` for the options."""
    with TaskSetWriter(target, **meta) as writer:
        for name, tasks in splits.items():
            writer.write_split(name, tasks)
    assert writer.manifest is not None
    return writer.manifest


# --- reading -------------------------------------------------------------------------------


class Split(Rows):
    """One split of a task set: `len`, `split[i]`, `split.get(id)`, iteration, and the lazy
    views of `taskpack.views` (`shuffle`, `shard`, `select`, `filter`, `to_arrow`, ...).

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
        fetch: Fetch | None,
        version: int = FORMAT_VERSION,
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
        self._index: dict[str, int] | None = None
        self.rows_checked = False  # see ObjectSource.rows_checked

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
            pf = pq.ParquetFile(path)
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
        from taskpack._fs import file_lock
        from taskpack.objects import decoded_path

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
    def __getitem__(self, i: int) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> list[Task]: ...
    def __getitem__(self, i: int | slice) -> Task | list[Task]:
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

    def position(self, task_id: str) -> int | None:
        """The row of the task with id `task_id`, or None (the id column is read once)."""
        if self._index is None:
            self._index = {tid: row for row, tid in enumerate(self.ids())}
        return self._index.get(task_id)

    def get(self, task_id: str, default: Task | None = None) -> Task | None:
        row = self.position(task_id)
        return default if row is None else self[row]

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
    """Where a version's objects (split files, large files) come from: a task-set folder, or
    the local cache filled from a registry. The one thing a `TaskSet` does not know."""

    where: str  # names the source in messages
    # Whether every split's rows, inline bytes included, are checked against its digest before
    # its file is handed out (a registry's objects, once per machine): then reads need not.
    rows_checked: bool

    def path(self, sha: str, progress: Progress | None = None, most: int | None = None) -> Path:
        """A local file holding the object whose bytes hash to `sha`; a download of it holds
        at most `most` bytes where the caller knows its size (a large file's, from its row),
        else at most the size the manifest lists."""


class FolderObjects:
    """A task-set folder's own files, read in place."""

    rows_checked = False

    def __init__(self, root: Path, manifest: Manifest) -> None:
        self.root = root
        self.where = str(root)
        self._paths = manifest.objects()

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

    def split(self, name: str) -> Split:
        info = self.info(name)
        parquets = [self.object(part.sha256) for part in info.files()]
        split = Split(name, info, parquets, self.read_blob, self.manifest.format_version)
        split.rows_checked = self.objects.rows_checked
        return split

    def annotations(self, name: str) -> list[dict[str, Any]]:
        """Split `name`'s annotations (pass rates; see `taskpack.passrates`): [] if none."""
        from taskpack import passrates

        self.info(name)  # an unknown split is an error, not "no annotations"
        notes = self.manifest.annotations.get(name)
        if notes is None:
            return []
        if name not in self._notes:
            rows = passrates.read(self.object(notes.sha256))
            problems = passrates.problems(rows, notes.digest)
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

    from taskpack.model import Manifest
    from taskpack.nesting import check_depth

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
