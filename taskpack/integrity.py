"""Checking a task set, at three depths, each over any object source (a folder or a version
pulled from a registry):

- `verify_objects`: every object's bytes hash to the address the manifest gives them.
- `check_split`: a split opens as a reader would open it (schema, row count, ids, JSON columns,
  file paths and modes) and its rows' content chains to the manifest's split digest. Publish runs
  it on every split before uploading; a registry reader runs it once per split per machine.
- `verify`: all of that, and every row validated as a task again (`taskpack validate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from taskpack._fs import check_regular
from taskpack.errors import TaskpackError, describe_error
from taskpack.objects import file_sha256
from taskpack.records import SplitDigest, SplitInfo, inline_problem, rel_path, version_digest
from taskpack.taskset import (
    SCHEMA,
    TaskSet,
    _columns,
    first_duplicate,
    row_digest,
    validated_task_from_row,
)


def verify(ts: TaskSet, limit: int = 20, quiet: bool = True) -> list[str]:
    """Problems found, at most `limit` of them; an empty list means the task set is sound.
    `quiet=False` counts the tasks checked on stderr when it is a terminal."""
    from pydantic import ValidationError

    from taskpack.progress import counted

    problems = verify_objects(ts) + verify_readable(ts, limit)
    if problems:
        return problems[:limit]
    checked_blobs: set[str] = set()
    version = ts.manifest.format_version
    for name in ts.splits:
        rows = counted(ts.split(name).rows(), name, ts.info(name).rows, quiet)
        for row_no, row in enumerate(rows):
            where = f"split {name!r} row {row_no} (id {row['id']!r})"
            try:
                task, _ = validated_task_from_row(row, ts.read_blob, version)
            except ValidationError as e:
                problems.append(f"{where}: {describe_error(e)}")
                continue
            for f in task.files:
                if f.data is None and f.sha256 not in checked_blobs:
                    assert f.sha256 is not None
                    checked_blobs.add(f.sha256)
                    try:
                        f.read_bytes()
                    except Exception as e:  # noqa: BLE001 - any failure here is a problem to list
                        problems.append(f"{where}: files.{f.path}: {e}")
            if len(problems) >= limit:
                return problems
    return problems[:limit]


def verify_objects(ts: TaskSet) -> list[str]:
    """Problems with the stored bytes alone: each split file and large file must hash to the
    address the manifest gives it. One read of every byte, no parsing, no stamp trusted."""
    problems = []
    for sha in ts.manifest.objects():
        try:
            path = ts.object(sha)
            check_regular(path)
        except (OSError, TaskpackError) as e:
            problems.append(f"object {sha}: {e}")
            continue
        if file_sha256(path) != sha:
            problems.append(f"{path} does not hash to {sha}")
    return problems


def verify_readable(ts: TaskSet, limit: int = 20) -> list[str]:
    """Problems a reader would meet in any split (see `check_split`), and the version digest
    checked against the split digests."""
    m = ts.manifest
    problems: list[str] = []
    for name, info in m.splits.items():
        try:
            parquets = [ts.object(part.sha256) for part in info.files()]
        except (OSError, TaskpackError) as e:
            problems.append(f"split {name!r}: {e}")
            continue
        problems += check_split(parquets, name, info, m.format_version, limit)
        if len(problems) >= limit:
            return problems[:limit]
    if version_digest({n: s.digest for n, s in m.splits.items()}, m.format_version) != m.digest:
        problems.append(f"manifest digest {m.digest} does not match the splits")
    return problems[:limit]


def check_split(
    parquets: Sequence[Path], name: str, info: SplitInfo, format_version: int, limit: int = 20
) -> list[str]:
    """Problems a reader of this split would meet, found without building tasks: each file
    opens as Parquet with the columns its format version has and holds the rows the manifest
    says; ids are unique, JSON columns parse, file paths and modes are safe, inline file bytes
    match their hashes, each row's stored digest equals its content's, and those digests chain
    to the split digest. One file is open at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = f"split {name!r}"
    required = set(SCHEMA.names) if format_version >= 2 else {"id", "digest", "prompt", "files"}
    parts = info.files()
    if len(parquets) != len(parts):
        return [f"{where}: {len(parquets)} files, the manifest lists {len(parts)}"]
    ids: list[pa.Array] = []
    for path, part in zip(parquets, parts, strict=True):
        try:
            check_regular(path)
            pf = pq.ParquetFile(path)
        except (OSError, ValueError, TaskpackError) as e:
            return [f"{where}: cannot be read as Parquet ({e})"]
        missing = sorted(required - set(pf.schema_arrow.names))
        if missing:
            return [f"{where}: columns {missing} missing"]
        if pf.metadata.num_rows != part.rows:
            return [
                f"{where}: {part.path} holds {pf.metadata.num_rows} rows, "
                f"the manifest says {part.rows}"
            ]
        try:
            ids += pf.read(columns=["id"]).column("id").chunks
        except (OSError, ValueError) as e:
            return [f"{where}: unreadable ({e})"]
    problems: list[str] = []
    duplicate = first_duplicate(pa.chunked_array(ids, pa.string()))
    if duplicate is not None:
        row, first, tid = duplicate
        problems.append(f"{where} row {row} (id {tid!r}): id: duplicate of row {first}")
    chain = SplitDigest()
    row_no = 0
    for path in parquets:
        try:
            pf = pq.ParquetFile(path)
            schema = pf.schema_arrow
            files = schema.field("files").type.value_type
            leaves = [n for n in schema.names if n != "files"]
            leaves += [f"files.list.element.{f.name}" for f in files]
            for batch in pf.iter_batches(batch_size=1024, columns=leaves):
                for row in batch.to_pylist():
                    label = f"{where} row {row_no} (id {row.get('id')!r})"
                    problems += _row_problems(row, label, format_version, chain)
                    row_no += 1
                    if len(problems) >= limit:
                        return problems[:limit]
        except (OSError, ValueError) as e:
            return [*problems, f"{where}: unreadable ({e})"]
    if chain.value != info.digest:
        problems.append(f"{where}: digest {info.digest} does not match its tasks")
    return problems


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
        inline = inline_problem(f.get("data"), f.get("sha256"), f.get("size"))
        if inline:
            problems.append(f"{where}: file {f['path']!r}: {inline}")
    stored = row.get("digest")
    try:
        digest = row_digest(_columns(row, format_version))
    except (ValueError, TypeError, AttributeError) as e:
        digest = ""
        problems.append(f"{where}: unreadable: {e}")
    chain.add(digest)
    if digest and digest != stored:
        problems.append(f"{where}: digest {stored} does not match content ({digest})")
    return problems
