"""Writing a task set: each split's rows into Parquet row groups (and files of PART_GROUPS
row groups), large files into content-addressed blobs, the manifest last, the folder swapped
in atomically. Above the reader (`taskset`): copying a stored split reads it there.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from taskpack.base.digests import SplitDigest, chains_to, version_digest
from taskpack.base.fs import (
    copy_atomic,
    remove_later,
    remove_tree,
    sweep,
    temp_beside,
    write_atomic,
)
from taskpack.base.objects import MANIFEST, blob_relpath, file_sha256
from taskpack.base.parquet import parquet_file
from taskpack.errors import InvalidTask, TaskpackError
from taskpack.records import NAME, SEMVER, full_match
from taskpack.storage.rows import (
    SCHEMA,
    check_split,
    coerce_task,
    first_duplicate,
    table_of,
    task_to_row,
)
from taskpack.storage.taskset import Split, TaskSet

if TYPE_CHECKING:
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

        from taskpack.base.arrow import numbers  # an Arrow array: NumPy's would ask for pandas

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
    ids = [c for path in paths for c in parquet_file(path).read(columns=["id"])["id"].chunks]
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
        """Store split `name`'s annotations (see `taskpack.storage.ratings`): rows of task id,
        model, settings, count, correct and mean; every id must be a task of the split, which
        is checked when the set is committed."""
        from taskpack.model import Annotations
        from taskpack.storage import ratings

        assert self._tmp is not None, "use TaskSetWriter as a context manager"
        _check_pattern("split name", name, NAME)
        ordered = ratings.sorted_rows(rows)
        if not ordered:
            return
        path = self._tmp / "annotations" / f"{name}.parquet"
        ratings.write(path, ordered)
        self._notes[name] = Annotations(
            path=f"annotations/{name}.parquet",
            rows=len(ordered),
            bytes=path.stat().st_size,
            sha256=file_sha256(path),
            digest=ratings.digest(ordered),
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
        unsealed.mixture()  # a label no reader would take is refused before it is written
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
