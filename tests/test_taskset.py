"""The task-set folder: stable digests, lazy reads, blobs, atomic writes and clear errors."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import taskpack
from taskpack import InvalidTask, Task, TaskpackError
from taskpack.base.objects import blob_relpath
from taskpack.storage.rows import INLINE_MAX
from taskpack.storage.writer import ROW_GROUP_ROWS

from .conftest import make_task


def tasks(n: int, **overrides: Any) -> list[dict[str, Any]]:
    return [make_task(i, **overrides) for i in range(n)]


def write(path: Path, splits: dict[str, Any], **meta: Any) -> taskpack.Manifest:
    meta.setdefault("name", "demo")
    meta.setdefault("version", "1.0.0")
    return taskpack.write(path, splits, **meta)


def test_round_trip_reads_back_equal_tasks(tmp_path: Path) -> None:
    src = tasks(5)
    write(tmp_path / "ts", {"train": src, "test": tasks(2)})
    ts = taskpack.open(tmp_path / "ts")
    assert ts.splits == ["train", "test"]
    split = ts.split("train")
    assert len(split) == 5
    assert split[3] == Task.model_validate(src[3])
    assert split[-1].id == "t4"
    assert [t.id for t in split] == [f"t{i}" for i in range(5)]
    got = split.get("t2")
    assert got is not None and got.answer == "3"
    assert split.get("nope") is None
    assert [t.id for t in split[1:3]] == ["t1", "t2"]
    with pytest.raises(IndexError, match="out of range"):
        split[5]
    with pytest.raises(TaskpackError, match="no split 'valid'"):
        ts.split("valid")


def test_random_access_across_many_row_groups(tmp_path: Path) -> None:
    n = ROW_GROUP_ROWS * 3 + 7
    write(tmp_path / "ts", {"train": (make_task(i) for i in range(n))})
    split = taskpack.open(tmp_path / "ts").split("train")
    for i in (0, ROW_GROUP_ROWS - 1, ROW_GROUP_ROWS, 2 * ROW_GROUP_ROWS + 5, n - 1):
        assert split[i].id == f"t{i}"
        got = split.get(f"t{i}")
        assert got is not None and got.answer == str(i + 1)


def test_same_tasks_give_same_digests_whatever_the_key_order(tmp_path: Path) -> None:
    """Task and split digests are over content; the version digest also pins the stored
    objects' sizes (a reader bounds its downloads by them), which metadata stored in another
    key order changes, so only the same stored tasks give the same version digest."""
    a = write(tmp_path / "a", {"train": tasks(4)})
    reordered = [dict(reversed(list(t.items()))) for t in tasks(4)]
    for t in reordered:
        t["metadata"] = dict(reversed(list(t["metadata"].items())))
    b = write(tmp_path / "b", {"train": reordered}, name="other", version="2.0.0")
    c = write(tmp_path / "c", {"train": tasks(4)})
    assert a.splits["train"].digest == b.splits["train"].digest == c.splits["train"].digest
    assert a.digest == c.digest  # name, version and time are not content
    assert b.digest == b.expected_digest() and b.sizes() != a.sizes()


def test_one_byte_in_one_file_changes_only_that_task(tmp_path: Path) -> None:
    before = write(tmp_path / "a", {"train": tasks(4), "test": tasks(2)})
    changed = tasks(4)
    data = bytearray(changed[2]["files"][0]["data"])
    data[0] ^= 1
    changed[2]["files"][0]["data"] = bytes(data)
    after = write(tmp_path / "b", {"train": changed, "test": tasks(2)})

    def digests(path: Path) -> list[str]:
        return [t.digest for t in taskpack.open(path).split("train")]

    old, new = digests(tmp_path / "a"), digests(tmp_path / "b")
    assert [i for i in range(4) if old[i] != new[i]] == [2]
    assert before.splits["train"].digest != after.splits["train"].digest
    assert before.splits["test"].digest == after.splits["test"].digest
    assert before.digest != after.digest


def test_large_files_are_stored_once_and_read_on_materialize(tmp_path: Path) -> None:
    big = os.urandom(INLINE_MAX + 1)
    rows = [
        make_task(i, files=[{"path": "data/big.bin", "data": big, "mode": 0o600}]) for i in range(3)
    ]
    rows[0]["files"].append({"path": "run.sh", "data": b"#!/bin/sh\n", "mode": 0o755})
    m = write(tmp_path / "ts", {"train": rows})
    blobs = list((tmp_path / "ts" / "blobs").rglob("*"))
    assert [p.name for p in blobs if p.is_file()] == [m.splits["train"].blobs[0]]
    task = taskpack.open(tmp_path / "ts").split("train")[0]
    assert task.file("data/big.bin").data is None  # not read until asked
    out = task.materialize(tmp_path / "out")
    assert (out / "data" / "big.bin").read_bytes() == big
    assert (out / "data" / "big.bin").stat().st_mode & 0o777 == 0o600
    assert (out / "run.sh").stat().st_mode & 0o777 == 0o755


def test_corrupted_blob_fails_its_hash_check(tmp_path: Path) -> None:
    big = b"x" * (INLINE_MAX + 10)
    m = write(tmp_path / "ts", {"train": [make_task(0, files=[{"path": "b", "data": big}])]})
    (tmp_path / "ts" / blob_relpath(m.splits["train"].blobs[0])).write_bytes(b"y" * len(big))
    ts = taskpack.open(tmp_path / "ts")
    with pytest.raises(TaskpackError, match="failed its hash check"):
        ts.split("train")[0].materialize(tmp_path / "out")
    assert any("does not hash to" in p for p in taskpack.verify(ts))


def test_verify_finds_tampered_rows(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    write(tmp_path / "ts", {"train": tasks(3)})
    path = tmp_path / "ts" / "splits" / "train.parquet"
    table = pq.read_table(path)
    answers = table.column("answer").to_pylist()
    answers[1] = "999"
    import pyarrow as pa

    table = table.set_column(table.schema.get_field_index("answer"), "answer", pa.array(answers))
    pq.write_table(table, path)
    problems = taskpack.verify(taskpack.open(tmp_path / "ts"))
    assert any("row 1 (id 't1')" in p and "does not match content" in p for p in problems)
    assert taskpack.verify(taskpack.open(_fresh(tmp_path))) == []


def _fresh(tmp_path: Path) -> Path:
    write(tmp_path / "fresh", {"train": tasks(3)})
    return tmp_path / "fresh"


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"prompt": 5}, "prompt"),
        ({"id": ""}, "id"),
        ({"answer": float("inf")}, "answer"),
        ({"files": [{"path": "../x", "data": b"1"}]}, "files.0.path"),
        ({"prompt": b"\xff\xfe"}, "prompt"),
    ],
)
def test_bad_row_names_split_row_id_and_field_and_writes_nothing(
    tmp_path: Path, bad: dict[str, Any], expected: str
) -> None:
    rows = tasks(4)
    rows[2].update(bad)
    with pytest.raises(InvalidTask) as info:
        write(tmp_path / "ts", {"train": rows})
    assert "split 'train' row 2" in str(info.value)
    assert expected in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_duplicate_ids_are_rejected_with_both_rows(tmp_path: Path) -> None:
    rows = tasks(5)
    rows[4]["id"] = "t1"
    with pytest.raises(
        InvalidTask,
        match=r"row 4 \(id 't1'\).*duplicate of row 1; ids must be unique within a split",
    ):
        write(tmp_path / "ts", {"train": rows})
    assert list(tmp_path.iterdir()) == []


def test_failure_mid_write_keeps_previous_content(tmp_path: Path) -> None:
    target = tmp_path / "ts"
    first = write(target, {"train": tasks(3)})

    def exploding() -> Iterator[dict[str, Any]]:
        yield from tasks(ROW_GROUP_ROWS + 5)  # a row group is already on disk
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write(target, {"train": exploding()}, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ts"]
    ts = taskpack.open(target)
    assert ts.manifest.digest == first.digest and len(ts.split("train")) == 3


def test_overwrite_must_be_asked_for(tmp_path: Path) -> None:
    write(tmp_path / "ts", {"train": tasks(1)})
    with pytest.raises(TaskpackError, match="already exists"):
        write(tmp_path / "ts", {"train": tasks(2)})
    write(tmp_path / "ts", {"train": tasks(2)}, overwrite=True)
    assert len(taskpack.open(tmp_path / "ts").split("train")) == 2


@pytest.mark.parametrize(
    ("meta", "expected"),
    [({"version": "1.0"}, "semantic version"), ({"name": "../evil"}, "invalid name")],
)
def test_bad_manifest_fields_fail_before_writing(
    tmp_path: Path, meta: dict[str, str], expected: str
) -> None:
    with pytest.raises(TaskpackError, match=expected):
        write(tmp_path / "ts", {"train": tasks(1)}, **meta)
    assert list(tmp_path.iterdir()) == []


def test_not_a_task_set(tmp_path: Path) -> None:
    with pytest.raises(TaskpackError, match="not a task set"):
        taskpack.open(tmp_path)


def test_materialize_refuses_harmful_modes_and_symlinked_folders(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="less than or equal to 511"):
        Task.model_validate({"id": "t", "files": [{"path": "x", "data": b"", "mode": 0o4755}]})
    writable = Task.model_validate(
        {"id": "t", "files": [{"path": "x", "data": b"", "mode": 0o666}]}
    )
    with pytest.raises(TaskpackError, match="refusing mode 666"):
        writable.materialize(tmp_path / "w")
    task = Task.model_validate({"id": "t", "files": [{"path": "sub/deep/x", "data": b"1"}]})
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "target").mkdir()
    os.symlink(outside, tmp_path / "target" / "sub")
    with pytest.raises(TaskpackError, match="is a symbolic link"):
        task.materialize(tmp_path / "target")
    assert list(outside.iterdir()) == []  # nothing was created through the link


KILLED_WRITER = """
import os, signal, sys, taskpack

def tasks():
    for i in range(10**9):
        if i == 50:
            os.kill(os.getpid(), signal.SIGKILL)  # as an OOM killer or a lost node would
        yield {"id": f"t{i}", "prompt": "q"}

taskpack.write(sys.argv[1], {"train": tasks()}, name="x")
"""


def test_what_a_killed_writer_left_is_removed_by_the_next_write(tmp_path: Path) -> None:
    import subprocess
    import sys

    target = tmp_path / "ts"
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(target)], check=False)
    assert proc.returncode == -9
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".ts.tmp-"), left
    # A live writer's folder (this process's pid) is never touched.
    live = tmp_path / left[0].replace(left[0].rsplit("-", 2)[-2], str(os.getpid()), 1)
    live.mkdir()
    write(target, {"train": tasks(2)})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "ts"])


def test_materialize_says_when_a_role_has_no_file(tmp_path: Path) -> None:
    task = make_task(0)  # its one file is tests/check.py, role workspace by path
    task["files"] = [{"path": "check.py", "role": "tests", "data": b"assert True\n"}]
    write(tmp_path / "ts", {"train": [task]})
    stored = taskpack.open(tmp_path / "ts").split("train")[0]
    with pytest.warns(UserWarning, match=r"task 't0' has no workspace file \(it has: tests\)"):
        out = stored.materialize(tmp_path / "w")
    assert out.is_dir() and list(out.iterdir()) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a role with files: nothing said
        assert (stored.materialize(tmp_path / "t", role="tests") / "check.py").is_file()


def test_a_task_by_its_id_and_a_split_by_its_only_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`split[id]` gives the task (a KeyError naming close ids when none has it); `get` is
    `dict.get`; `taskpack.load` without `split=` takes a set's only split, and names the
    splits of one that has several."""
    from taskpack.errors import TaskpackError

    monkeypatch.setenv("TASKPACK_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("TASKPACK_CACHE", str(tmp_path / "cache"))
    tasks = [make_task(i) for i in range(12)]
    taskpack.write(tmp_path / "two", {"train": tasks, "test": tasks[:3]}, name="two")
    taskpack.write(tmp_path / "one", {"test": tasks[:3]}, name="one")
    for folder in ("two", "one"):
        taskpack.publish(tmp_path / folder)
    split = taskpack.open(tmp_path / "two").split("train")
    assert split["t10"].id == "t10" and split.get("t10") == split["t10"]
    with pytest.raises(KeyError, match=r"no task 't1O' in split 'train'; did you mean .*'t10'"):
        split["t1O"]
    assert split.get("nope") is None and split.get("nope", split[0]) == split[0]
    assert len(taskpack.load("one@0.1.0")) == 3
    with pytest.raises(TaskpackError, match=r"two@0.1.0 has splits train, test: name one"):
        taskpack.load("two@0.1.0")
    warm = taskpack.load("two@0.1.0", split="train")
    warm = taskpack.load("two@0.1.0", split="train")  # the second load reads the warm copy
    assert warm["t3"].id == "t3"
    with pytest.raises(KeyError, match="did you mean 't3'"):
        warm["t3 "]
