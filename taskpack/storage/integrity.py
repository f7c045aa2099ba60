"""Checking a task set, at three depths, each over any object source (a folder or a version
pulled from a registry):

- `verify_objects`: every object's bytes hash to the address the manifest gives them.
- `check_split`: a split opens as a reader would open it (schema, row count, ids, JSON columns,
  file paths and modes) and its rows' content chains to the manifest's split digest. Publish runs
  it on every split before uploading; a registry reader runs it once per split per machine.
- `verify`: all of that, and every row validated as a task again (`taskpack validate`).
"""

from __future__ import annotations

from taskpack.base.objects import WrongBytes, require_bytes
from taskpack.errors import TaskpackError, describe_error
from taskpack.storage.rows import check_split, validated_task_from_row
from taskpack.storage.taskset import TaskSet


def verify(ts: TaskSet, limit: int = 20, quiet: bool = True) -> list[str]:
    """Problems found, at most `limit` of them; an empty list means the task set is sound.
    `quiet=False` counts the tasks checked on stderr when it is a terminal."""
    from pydantic import ValidationError

    from taskpack.base.progress import counted

    problems = verify_objects(ts) + verify_readable(ts, limit)
    try:
        ts.manifest.mixture()
    except TaskpackError as e:
        problems.append(str(e))
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
            require_bytes(ts.object(sha), sha)
        except WrongBytes as e:
            problems.append(str(e))
        except (OSError, TaskpackError) as e:
            problems.append(f"object {sha}: {e}")
    return problems


def annotation_problems(ts: TaskSet) -> list[str]:
    """Each split's annotations read back: their digest, counts and task ids."""
    from taskpack.storage import ratings

    problems = []
    for name, notes in ts.manifest.annotations.items():
        try:
            rows = ts.annotations(name)
        except (OSError, TaskpackError, ValueError) as e:
            problems.append(f"annotations of split {name!r}: {e}")
            continue
        ids = ts.split(name).ids()
        problems += [f"split {name!r}: {p}" for p in ratings.problems(rows, notes.digest, ids)]
    return problems


def verify_readable(ts: TaskSet, limit: int = 20, *, again: bool = True) -> list[str]:
    """Problems a reader would meet in any split (see `check_split`), and the version digest
    checked against the split digests. With `again` off, a registry's splits, checked as they
    were fetched (once per machine, by their bytes' hash: `rows_checked`), are not checked a
    second time: a copy to another registry, whose bytes are hashed as they go, checked each
    split twice. `validate` checks again, under the rules of the taskpack it runs."""
    m = ts.manifest
    problems: list[str] = []
    for name, info in m.splits.items():
        try:
            parquets = ts.split_files(name)
        except (OSError, TaskpackError) as e:
            problems.append(f"split {name!r}: {e}")
            continue
        if again or not ts.objects.rows_checked:
            problems += check_split(parquets, name, info, m.format_version, limit)
        if len(problems) >= limit:
            return problems[:limit]
    problems += annotation_problems(ts)
    if m.expected_digest() != m.digest:
        pinned = "splits, annotations, source and sizes" if m.pins_source else "splits"
        problems.append(f"manifest digest {m.digest} does not cover what it lists ({pinned})")
    return problems[:limit]
