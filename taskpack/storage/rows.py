"""Stored rows: the Parquet schema of a split and the rules between a stored row and the task
it holds (its JSON columns, its digest, unique ids), and the row check that proves a split's
files chain to its manifest digest without building tasks.

Below the task-set reader and writer (`taskset`) and the checks (`integrity`), which both use
these rules; each rule is written here once.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import pyarrow as pa

from taskpack import records
from taskpack.base.digests import FORMAT_VERSION, SplitDigest, content_digest
from taskpack.base.fs import check_regular
from taskpack.base.parquet import parquet_file
from taskpack.errors import InvalidTask, TaskpackError, describe_error
from taskpack.records import inline_problem, rel_path, stored_task

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pyarrow.parquet as pq

    from taskpack.model import SplitInfo, Task

INLINE_MAX = 64 * 1024  # bytes of a file stored inline in its task's row; larger ones by hash
ReadBlob = Callable[[str, int], bytes]  # a large file by sha256, read up to its size

# Variable-shaped parts are canonical JSON text: a conversation of typed items, a union of
# reward kinds or free-form metadata would otherwise widen into sparse struct columns that
# differ per task set.
JSON_COLUMNS = (
    "prompt",
    "answer",
    "reward",
    "rewards",
    "tools",
    "steps",
    "environment",
    "limits",
    "source",
    "metadata",
    "extras",
)
_V1_JSON_COLUMNS = ("reward", "environment", "limits", "source", "metadata")


def json_columns(version: int) -> tuple[str, ...]:
    return JSON_COLUMNS if version >= 2 else _V1_JSON_COLUMNS


SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("digest", pa.string(), nullable=False),
        pa.field("solution", pa.string()),
        pa.field(
            "files",
            pa.list_(
                pa.struct(
                    [
                        pa.field("path", pa.string()),
                        pa.field("role", pa.string()),
                        pa.field("step", pa.string()),
                        pa.field("mode", pa.int32()),
                        pa.field("size", pa.int64()),
                        pa.field("sha256", pa.string()),
                        pa.field("data", pa.binary()),
                    ]
                )
            ),
        ),
        *(pa.field(name, pa.string()) for name in JSON_COLUMNS),
    ]
)


def table_of(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Stored rows as a table of SCHEMA, built from their buffers (`Table.from_pylist` would
    import pandas: see `taskpack.base.arrow`)."""
    from taskpack.base.arrow import numbers, offsets, texts

    def column(values: list[Any], kind: pa.DataType) -> pa.Array:
        if pa.types.is_string(kind) or pa.types.is_binary(kind):
            return texts(values, kind)
        return numbers(values, kind)

    columns = []
    for field in SCHEMA:
        if field.name != "files":
            columns.append(column([row.get(field.name) for row in rows], field.type))
            continue
        lists = [row.get("files") for row in rows]
        items = [item for files in lists for item in files or ()]
        struct = field.type.value_type
        fields = [column([item.get(f.name) for item in items], f.type) for f in struct]
        values = pa.StructArray.from_arrays(fields, fields=list(struct))
        ends = offsets(len(files or ()) for files in lists)
        nulls = None
        if any(files is None for files in lists):
            nulls = numbers([files is None for files in lists], pa.bool_())
        columns.append(pa.ListArray.from_arrays(ends, values, mask=nulls))
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def coerce_task(task: Task | Mapping[str, Any], where: str) -> Task:
    """Validate a mapping into a Task, naming `where` and the id in any error; a task, validated
    or read from a task set, is taken as it is."""
    if isinstance(task, records.Task):
        return task
    from pydantic import ValidationError

    from taskpack.model import Task

    try:
        return Task.model_validate(task)
    except ValidationError as e:
        tid = task.get("id") if isinstance(task, Mapping) else None
        label = f"{where} (id {tid!r})" if isinstance(tid, str) and tid else where
        raise InvalidTask(label, describe_error(e)) from None


def task_to_row(task: Task, store_blob: Callable[[bytes, str], None]) -> tuple[dict[str, Any], str]:
    from pydantic_core import to_json

    content = task.canonical()
    digest = content_digest(content)
    files = []
    for f in task.files:
        data = f.read_bytes()
        inline = len(data) <= INLINE_MAX
        if not inline:
            assert f.sha256 is not None
            store_blob(data, f.sha256)
        files.append(
            {
                "path": f.path,
                "role": f.role,
                "step": f.step,
                "mode": f.mode,
                "size": f.size,
                "sha256": f.sha256,
                "data": data if inline else None,
            }
        )
    row = {"id": task.id, "digest": digest, "solution": task.solution, "files": files}
    for name in JSON_COLUMNS:
        value = content[name]
        # Key order inside these columns is free (the digest is computed above, sorted),
        # so pydantic-core's serializer writes them, several times faster than `json`.
        row[name] = None if value is None else to_json(value).decode("utf-8")
    return row, digest


# json's C scanner, unwrapped (typeshed leaves the attribute out)
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """`json.loads(text)`, without the cost of its wrapper (a Python frame and two regex
    matches for whitespace: half the time of checking a split's rows) when the text is one
    JSON value from its first character to its last, as the writer stores it; any other text
    goes through `json.loads` itself, errors and all."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def decoded(row: dict[str, Any], version: int) -> dict[str, Any]:
    for name in json_columns(version):
        if row.get(name) is not None:
            try:
                row[name] = _loads(row[name])
            except (ValueError, RecursionError):
                raise ValueError(f"column {name} is not JSON (or nested too deep)") from None
    row.pop("digest", None)
    return row


def row_digest(row: dict[str, Any]) -> str:
    """The digest of the task a stored row holds (its JSON columns decoded), by the rule every
    format version shares: the row's content with files by hash, not bytes. For version 2 this
    is `Task.canonical()`, since the writer stores exactly that; no model is built."""
    content = {k: v for k, v in row.items() if k != "digest"}
    content["files"] = [{k: v for k, v in f.items() if k != "data"} for f in row["files"]]
    return content_digest(content)


def task_from_row(
    row: dict[str, Any], fetch: ReadBlob | None, version: int = FORMAT_VERSION
) -> Task:
    """A stored row as a Task, trusted (see `records.stored_task`); older versions are
    upgraded."""
    if version < 2:
        return validated_task_from_row(row, fetch, version)[0]
    return cast("Task", stored_task(decoded(row, version), fetch))


def validated_task_from_row(
    row: dict[str, Any], fetch: ReadBlob | None, version: int = FORMAT_VERSION
) -> tuple[Task, str]:
    """A stored row as a Task, every rule checked again (for `verify`), and the digest of its
    content by the rule of the version that wrote it."""
    row = decoded(row, version)
    digest = row_digest(row)
    if version < 2:
        from taskpack.storage.upgrade import task_from_v1

        task = task_from_v1(row)
    else:
        from taskpack.model import Task

        task = Task.model_validate(row)
    for f in task.files:
        f._fetch = fetch
    return task, digest


def first_duplicate(ids: pa.ChunkedArray) -> tuple[int, int, str] | None:
    """(row, earlier row, id) of the first repeated id, or None. Counted in Arrow first: a set
    of a million ids in Python would cost more memory than the whole streaming write."""
    import pyarrow.compute as pc

    if len(pc.unique(ids)) == len(ids):
        return None
    first: dict[str, int] = {}
    for row, tid in enumerate(ids.to_pylist()):
        if tid in first:
            return row, first[tid], tid
        first[tid] = row
    return None


def check_split(
    parquets: Sequence[Path | io.RawIOBase],
    name: str,
    info: SplitInfo,
    format_version: int,
    limit: int = 20,
) -> list[str]:
    """Problems a reader of this split would meet, found without building tasks: each file
    opens as Parquet with the columns its format version has and holds the rows the manifest
    says; ids are unique, JSON columns parse, file paths and modes are safe, inline file bytes
    match their hashes, each row's stored digest equals its content's, and those digests chain
    to the split digest. One pass over each file, in order (a file may still be arriving, see
    `registry.growing`), one file open at a time."""
    from concurrent.futures import ThreadPoolExecutor  # not at import: an episode's start

    where = f"split {name!r}"
    required = set(SCHEMA.names) if format_version >= 2 else {"id", "digest", "prompt", "files"}
    parts = info.files()
    if len(parquets) != len(parts):
        return [f"{where}: {len(parquets)} files, the manifest lists {len(parts)}"]
    ids: list[pa.Array] = []
    problems: list[str] = []
    chain = SplitDigest()
    row_no = 0
    # A batch's inline bytes are hashed on a thread of their own while this one checks the
    # rest of its rows and reads the next (hashing is a third of the check, and hashlib lets
    # go of the GIL): after the download, the check's tail takes both cores. One batch is
    # hashed at a time, so memory holds at most one batch more than a serial check.
    hashing = ThreadPoolExecutor(1, thread_name_prefix="taskpack-hash")
    hashed: list[Future[list[str]]] = []

    def and_hashed(more: str | None = None) -> list[str]:
        return [*problems, *(p for f in hashed for p in f.result()), *([more] if more else [])]

    try:
        for source, part in zip(parquets, parts, strict=True):
            try:
                if isinstance(source, Path):
                    check_regular(source)
                pf = parquet_file(source)
            except (OSError, ValueError, TaskpackError) as e:
                return and_hashed(f"{where}: cannot be read as Parquet ({e})")
            schema = pf.schema_arrow
            missing = sorted(required - set(schema.names))
            if missing:
                return and_hashed(f"{where}: columns {missing} missing")
            if pf.metadata.num_rows != part.rows:
                return and_hashed(
                    f"{where}: {part.path} holds {pf.metadata.num_rows} rows, "
                    f"the manifest says {part.rows}"
                )
            try:
                files = schema.field("files").type.value_type
                leaves = [n for n in schema.names if n != "files"]
                leaves += [f"files.list.element.{f.name}" for f in files]
                for batch in _batches(pf, source, leaves):
                    ids.append(batch.column("id"))
                    if hashed:
                        problems += hashed.pop().result()
                    hashed.append(hashing.submit(_inline_labelled, batch, where, row_no))
                    problems += batch_problems(batch, where, format_version, chain, row_no, False)
                    row_no += batch.num_rows
                    if len(problems) >= limit:
                        return problems[:limit]
            except (OSError, ValueError) as e:
                return and_hashed(f"{where}: unreadable ({e})")
        problems = and_hashed()
    finally:
        hashing.shutdown(cancel_futures=True)
    duplicate = first_duplicate(pa.chunked_array(ids, pa.string()))
    if duplicate is not None:
        row, first, tid = duplicate
        problems.insert(0, f"{where} row {row} (id {tid!r}): id: duplicate of row {first}")
    if chain.value != info.digest:
        problems.append(f"{where}: digest {info.digest} does not match its tasks")
    return problems[:limit]


@runtime_checkable
class Arriving(Protocol):
    """A Parquet file whose bytes are still being written, front to back (see
    `registry.growing`); its footer reads at once."""

    def upto(self, end: int) -> str:
        """The file's path, once its first `end` bytes are there."""
        ...


def _batches(
    pf: pq.ParquetFile, source: Path | io.RawIOBase, leaves: list[str]
) -> Iterator[pa.RecordBatch | pa.Table]:
    """A file's rows, about a row group at a time, read on this thread: bigger batches, or
    Arrow's thread pool, cost more in fresh memory than they save on 2 cores. A file still
    arriving is read by Arrow itself, each row group once its bytes are there: Arrow's reads
    need no copy into Python bytes, and take no GIL, whose handoffs slow the download beside
    them."""
    if not isinstance(source, Arriving):
        yield from pf.iter_batches(batch_size=128, columns=leaves, use_threads=False)
        return
    meta = pf.metadata
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        columns = (group.column(c) for c in range(group.num_columns))
        end = max(
            (c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset)
            + c.total_compressed_size
            for c in columns
        )
        # opened again for each group: Arrow takes a file's size once, when it opens it
        here = parquet_file(source.upto(end), meta)
        yield here.read_row_group(g, columns=leaves, use_threads=False)


def batch_problems(
    batch: pa.Table | pa.RecordBatch,
    where: str,
    format_version: int,
    chain: SplitDigest | None = None,
    first_row: int | None = None,
    hashed: bool = True,
) -> list[str]:
    """Problems of some stored rows (see `check_split`), their digests added to `chain`;
    rows named by number from `first_row` when known, else by id alone. Inline bytes are
    hashed where Arrow holds them (`_inline_labelled`; `hashed`=False where the caller has
    that done apart); only the rest of each row becomes Python values."""
    problems: list[str] = []
    chain = chain if chain is not None else SplitDigest()
    files = batch.column("files") if "files" in batch.schema.names else None
    rows = batch.to_pylist() if files is None else batch.drop_columns(["files"]).to_pylist()
    if files is not None:
        for row, row_files in zip(rows, _files_without_bytes(files), strict=True):
            row["files"] = row_files
    for k, row in enumerate(rows):
        label = _label(where, first_row, k, row.get("id"))
        problems += _row_problems(row, label, format_version, chain)
    return problems + (_inline_labelled(batch, where, first_row) if hashed else [])


def _inline_labelled(
    batch: pa.Table | pa.RecordBatch, where: str, first_row: int | None
) -> list[str]:
    """The inline-byte problems of some stored rows (`inline_mismatches`), each named as
    `batch_problems` names its rows."""
    if "files" not in batch.schema.names:
        return []
    found = list(inline_mismatches(batch.column("files"), where))
    ids = batch.column("id").to_pylist() if found else []
    return [
        f"{_label(where, first_row, k, ids[k])}: file {path!r}: {why}" for k, path, why in found
    ]


def _label(where: str, first_row: int | None, k: int, tid: object) -> str:
    at = f" row {first_row + k}" if first_row is not None else ""
    return f"{where}{at} (id {tid!r})"


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return column.chunks if isinstance(column, pa.ChunkedArray) else [column]


def _files_without_bytes(files: pa.Array | pa.ChunkedArray) -> list[list[dict[str, Any]] | None]:
    """Each row's file entries without their inline bytes (which the row rules never read)."""
    import pyarrow.compute as pc

    out: list[list[dict[str, Any]] | None] = []
    for chunk in _chunks(files):
        kind = chunk.type.value_type
        if not isinstance(kind, pa.StructType) or kind.get_field_index("data") < 0:
            out += chunk.to_pylist()
            continue
        flat = chunk.flatten()
        names = [f.name for f in kind if f.name != "data"]
        entries = pa.StructArray.from_arrays([flat.field(n) for n in names], names).to_pylist()
        rows: list[list[dict[str, Any]] | None] = [
            None if null else [] for null in chunk.is_null().to_pylist()
        ]
        for parent, entry in zip(pc.list_parent_indices(chunk).to_pylist(), entries, strict=True):
            cast("list[dict[str, Any]]", rows[parent]).append(entry)
        out += rows
    return out


def inline_mismatches(
    files: pa.Array | pa.ChunkedArray, where: str
) -> Iterator[tuple[int, str, str]]:
    """(row, path, why) for each inline file whose bytes are not the content its hash names
    (`records.inline_problem`). Each file is hashed in Arrow's own buffer: a copy into Python
    bytes of every inline file would cost as much as the hashing."""
    first = 0
    for chunk in _chunks(files):
        kind = chunk.type.value_type
        # `flatten` and `list_parent_indices` load pyarrow.compute (25 ms of an export's
        # start): only a chunk holding file entries needs them
        if (
            len(chunk.values)
            and isinstance(kind, pa.StructType)
            and kind.get_field_index("data") >= 0
        ):
            import pyarrow.compute as pc

            flat = chunk.flatten()
            if any(kind.get_field_index(n) < 0 for n in ("sha256", "size", "path")):
                raise TaskpackError(f"{where}: file bytes read without their hashes")
            data = flat.field("data")
            listed = (flat.field(n).to_pylist() for n in ("sha256", "size", "path"))
            parents = pc.list_parent_indices(chunk).to_pylist()
            for k, (sha, size, path) in enumerate(zip(*listed, strict=True)):
                held = data[k].as_buffer()
                problem = inline_problem(None if held is None else memoryview(held), sha, size)
                if problem:
                    yield first + parents[k], path, problem
        first += len(chunk)


def _row_problems(
    row: dict[str, Any], where: str, format_version: int, chain: SplitDigest
) -> list[str]:
    problems = []
    for f in row["files"] or ():
        try:
            rel_path(f["path"])
        except (ValueError, TypeError) as e:
            problems.append(f"{where}: files: {e}")
        mode = f["mode"]
        if not isinstance(mode, int) or not 0 <= mode <= 0o777:
            shown = f"{mode:o}" if isinstance(mode, int) else repr(mode)
            problems.append(f"{where}: files: mode {shown} is not permission bits")
    stored = row.get("digest")
    try:
        digest = row_digest(decoded(row, format_version))
    except (ValueError, TypeError, AttributeError) as e:
        digest = ""
        problems.append(f"{where}: unreadable: {e}")
    chain.add(digest)
    if digest and digest != stored:
        problems.append(f"{where}: digest {stored} does not match content ({digest})")
    return problems
