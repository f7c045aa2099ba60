"""Full verification of a task set: every row re-validated, every digest and blob recomputed.

Opening a task set trusts its manifest; `verify` trusts nothing, so it is what `taskpack validate`
and a registry's publish run before a version becomes visible.
"""

from __future__ import annotations

import hashlib

from pydantic import ValidationError

from taskpack._fs import check_regular
from taskpack.errors import TaskpackError, describe_validation_error
from taskpack.model import version_digest
from taskpack.taskset import (
    _JSON_COLUMNS,
    _V1_JSON_COLUMNS,
    TaskSet,
    blob_relpath,
    file_sha256,
    validated_task_from_row,
)


def verify(ts: TaskSet, limit: int = 20) -> list[str]:
    """Problems found, at most `limit` of them; an empty list means the task set is sound."""
    problems: list[str] = []
    checked_blobs: set[str] = set()
    split_digests = {}
    version = ts.manifest.format_version
    for name in ts.splits:
        split = ts.split(name)
        seen: dict[str, int] = {}
        running = hashlib.sha256()
        count = 0
        for row_no, row in enumerate(split.rows()):
            count += 1
            stored = row["digest"]
            where = f"split {name!r} row {row_no} (id {row['id']!r})"
            try:
                task, digest = validated_task_from_row(row, ts.read_blob, version)
            except ValidationError as e:
                problems.append(f"{where}: {describe_validation_error(e)}")
                continue
            except (ValueError, KeyError, TypeError) as e:  # a JSON column that is not JSON
                problems.append(f"{where}: unreadable row ({type(e).__name__}: {e})")
                continue
            if task.id in seen:
                problems.append(f"{where}: id: duplicate of row {seen[task.id]}")
            seen[task.id] = row_no
            running.update(digest.encode("ascii") + b"\n")
            if digest != stored:
                problems.append(f"{where}: digest {stored} does not match content ({digest})")
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
        info = ts.manifest.splits[name]
        if count != info.rows:
            problems.append(f"split {name!r}: {count} rows, the manifest says {info.rows}")
        split_digests[name] = "sha256:" + running.hexdigest()
        if split_digests[name] != info.digest:
            problems.append(f"split {name!r}: digest {info.digest} does not match its tasks")
    if not problems and version_digest(split_digests, version) != ts.manifest.digest:
        problems.append(f"manifest digest {ts.manifest.digest} does not match the splits")
    return problems[:limit]


def verify_objects(ts: TaskSet) -> list[str]:
    """Problems with the stored bytes alone: each split file and large file must hash to the
    address the manifest gives it. One read of every byte, no parsing."""
    problems = []
    for name, info in ts.manifest.splits.items():
        objects = [
            (ts.root / info.path, info.sha256),
            *((ts.root / blob_relpath(b), b) for b in info.blobs),
        ]
        for path, sha in objects:
            if not path.is_file():
                problems.append(f"split {name!r}: {path} is missing")
            elif file_sha256(path) != sha:
                problems.append(f"split {name!r}: {path} does not hash to {sha}")
    return problems


def verify_readable(ts: TaskSet, limit: int = 20) -> list[str]:
    """Problems a reader would meet, found without validating every task: each split opens as
    Parquet with the columns its format version has, holds the rows the manifest says, has
    unique ids, JSON columns that parse, file paths and modes that are safe, and task digests
    that chain to the split digest. Cheaper than `verify` (no model validation), so publish
    runs it on every version before anything is uploaded."""
    import json

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from taskpack.model import _rel_path
    from taskpack.taskset import SCHEMA

    problems: list[str] = []
    version = ts.manifest.format_version
    json_columns = _JSON_COLUMNS if version >= 2 else _V1_JSON_COLUMNS
    required = set(SCHEMA.names) if version >= 2 else {"id", "digest", "prompt", "files"}
    for name, info in ts.manifest.splits.items():
        where = f"split {name!r}"
        try:
            check_regular(ts.root / info.path)
            pf = pq.ParquetFile(ts.root / info.path)
        except (OSError, ValueError, TaskpackError) as e:
            problems.append(f"{where}: cannot be read as Parquet ({e})")
            continue
        missing = sorted(required - set(pf.schema_arrow.names))
        if missing:
            problems.append(f"{where}: columns {missing} missing")
            continue
        if pf.metadata.num_rows != info.rows:
            problems.append(f"{where}: {pf.metadata.num_rows} rows, the manifest says {info.rows}")
        names = pf.schema_arrow.names
        # File paths and modes only: the files' bytes (most of a split) are not read.
        leaves = ["id", "digest", "files.list.element.path", "files.list.element.mode"]
        try:
            table = pf.read(columns=leaves)
            ids, digests = table.column("id").to_pylist(), table.column("digest").to_pylist()
            files = pc.list_flatten(table.column("files").combine_chunks())
            paths, modes = files.field("path").to_pylist(), files.field("mode").to_pylist()
        except (OSError, ValueError) as e:
            problems.append(f"{where}: unreadable ({e})")
            continue
        if len(set(ids)) != len(ids):
            problems.append(f"{where}: duplicate ids")
        for path in paths:
            try:
                _rel_path(path)
            except ValueError as e:
                problems.append(f"{where}: files: {e}")
        problems += [
            f"{where}: files: mode {mode:o} is not permission bits"
            for mode in modes
            if not 0 <= mode <= 0o777
        ]
        for column in (c for c in json_columns if c in names):
            for row_no, value in enumerate(pf.read(columns=[column]).column(column).to_pylist()):
                try:
                    if value is not None:
                        json.loads(value)
                except ValueError:
                    problems.append(f"{where} row {row_no}: column {column} is not JSON")
        if len(problems) >= limit:
            return problems[:limit]
        chained = "".join(f"{d}\n" for d in digests).encode("ascii", "replace")
        running = hashlib.sha256(chained)
        if "sha256:" + running.hexdigest() != info.digest:
            problems.append(f"{where}: digest {info.digest} does not match its tasks")
    return problems[:limit]
